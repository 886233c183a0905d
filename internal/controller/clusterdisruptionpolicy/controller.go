// Package clusterdisruptionpolicy runs ClusterDisruptionPolicies: a copy of the
// policy's template, as a DisruptionPolicy of the same name, in every namespace its
// selector picks. The DisruptionPolicy controller does the rest in each namespace, so a
// change to one workload costs what it costs under a namespaced policy; this controller
// moves only when a namespace, the cluster policy or one of its copies changes.
package clusterdisruptionpolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// Name is the controller's name, in logs and metrics.
const Name = "clusterdisruptionpolicy"

// +kubebuilder:rbac:groups=holdfast.dev,resources=clusterdisruptionpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=holdfast.dev,resources=clusterdisruptionpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=holdfast.dev,resources=disruptionpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

type reconciler struct {
	client client.Client
	clock  clock.PassiveClock
}

// SetupWithManager registers the reconciler and its watches with mgr.
func SetupWithManager(mgr ctrl.Manager, clk clock.PassiveClock) error {
	r := &reconciler{client: mgr.GetClient(), clock: clk}
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&holdfastv1alpha1.ClusterDisruptionPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Every change of a copy, its status included: the cluster policy sums them.
		Owns(&holdfastv1alpha1.DisruptionPolicy{}).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.allPolicies), builder.WithPredicates(namespaceChanged())).
		Complete(r)
}

// Reconcile keeps one ClusterDisruptionPolicy's copies and status in line with the
// namespaces.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	p := &holdfastv1alpha1.ClusterDisruptionPolicy{}
	if err := r.client.Get(ctx, req.NamespacedName, p); err != nil {
		// A deleted policy's copies are garbage-collected through their owner reference.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if p.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	obs, err := r.gather(ctx, p)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := Decide(obs)
	for _, c := range d.Apply {
		if err := r.apply(ctx, c); err != nil {
			return ctrl.Result{}, err
		}
	}
	for _, c := range d.Delete {
		if err := r.client.Delete(ctx, c, client.Preconditions{UID: &c.UID}); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("deleting DisruptionPolicy %s: %w", klog.KObj(c), err)
		}
	}
	if equality.Semantic.DeepEqual(p.Status, d.Status) {
		return ctrl.Result{}, nil
	}
	// The whole status, so that counts at zero are written too.
	patch, err := json.Marshal(map[string]any{"status": d.Status})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("encoding status of ClusterDisruptionPolicy %s: %w", p.Name, err)
	}
	if err := r.client.Status().Patch(ctx, p.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil {
		return ctrl.Result{}, fmt.Errorf("patching status of ClusterDisruptionPolicy %s: %w", p.Name, err)
	}
	log.FromContext(ctx).V(1).Info("Status updated", "namespaces", d.Status.Namespaces, "selected", d.Status.Selected, "budgeted", d.Status.Budgeted)
	return ctrl.Result{}, nil
}

// gather reads the namespaces, the policy's copies and the names taken, all from the
// cache.
func (r *reconciler) gather(ctx context.Context, p *holdfastv1alpha1.ClusterDisruptionPolicy) (Observed, error) {
	obs := Observed{Policy: p, Now: r.clock.Now()}
	copies := &holdfastv1alpha1.DisruptionPolicyList{}
	if err := r.client.List(ctx, copies, client.MatchingLabels{holdfastv1alpha1.ClusterPolicyLabel: p.Name}); err != nil {
		return obs, fmt.Errorf("listing the copies of ClusterDisruptionPolicy %s: %w", p.Name, err)
	}
	obs.Copies = slices.DeleteFunc(copies.Items, func(c holdfastv1alpha1.DisruptionPolicy) bool { return !metav1.IsControlledBy(&c, p) })
	sel, err := metav1.LabelSelectorAsSelector(&p.Spec.NamespaceSelector)
	if err != nil {
		obs.SelectorErr = err
		return obs, nil
	}
	namespaces := &corev1.NamespaceList{}
	if err := r.client.List(ctx, namespaces, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return obs, fmt.Errorf("listing namespaces: %w", err)
	}
	for _, ns := range namespaces.Items {
		// A terminating namespace refuses new objects; its copy goes with it.
		if ns.Status.Phase == corev1.NamespaceTerminating || ns.DeletionTimestamp != nil {
			continue
		}
		obs.Namespaces = append(obs.Namespaces, ns.Name)
		if slices.ContainsFunc(obs.Copies, func(c holdfastv1alpha1.DisruptionPolicy) bool { return c.Namespace == ns.Name }) {
			continue
		}
		other := &holdfastv1alpha1.DisruptionPolicy{}
		err := r.client.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: p.Name}, other)
		switch {
		case err == nil:
			obs.Taken = append(obs.Taken, ns.Name)
		case !apierrors.IsNotFound(err):
			return obs, fmt.Errorf("getting DisruptionPolicy %s: %w", klog.KRef(ns.Name, p.Name), err)
		}
	}
	slices.Sort(obs.Namespaces)
	return obs, nil
}

// apply creates a copy, or patches it where its spec, labels or owner differ.
func (r *reconciler) apply(ctx context.Context, want *holdfastv1alpha1.DisruptionPolicy) error {
	cur := &holdfastv1alpha1.DisruptionPolicy{}
	err := r.client.Get(ctx, client.ObjectKeyFromObject(want), cur)
	if apierrors.IsNotFound(err) {
		if err := r.client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating DisruptionPolicy %s: %w", klog.KObj(want), err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting DisruptionPolicy %s: %w", klog.KObj(want), err)
	}
	if equality.Semantic.DeepEqual(cur.Spec, want.Spec) && equality.Semantic.DeepEqual(cur.Labels, want.Labels) && equality.Semantic.DeepEqual(cur.OwnerReferences, want.OwnerReferences) {
		return nil
	}
	updated := cur.DeepCopy()
	updated.Spec, updated.Labels, updated.OwnerReferences = want.Spec, want.Labels, want.OwnerReferences
	if err := r.client.Patch(ctx, updated, client.MergeFrom(cur)); err != nil {
		return fmt.Errorf("updating DisruptionPolicy %s: %w", klog.KObj(want), err)
	}
	return nil
}

// allPolicies maps a namespace's change to every ClusterDisruptionPolicy: they are few,
// and any of them may start or stop selecting it.
func (r *reconciler) allPolicies(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &holdfastv1alpha1.ClusterDisruptionPolicyList{}
	if err := r.client.List(ctx, list); err != nil {
		log.FromContext(ctx).Error(err, "Listing ClusterDisruptionPolicies for a namespace change", "namespace", obj.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
	}
	return reqs
}

// namespaceChanged passes a namespace's arrival, departure, labels and termination.
func namespaceChanged() predicate.Predicate {
	return predicate.Or(predicate.LabelChangedPredicate{}, predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*corev1.Namespace)
			n, okNew := e.ObjectNew.(*corev1.Namespace)
			return !okOld || !okNew || o.Status.Phase != n.Status.Phase
		},
	})
}
