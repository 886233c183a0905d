// Package clusterdisruptionpolicy runs ClusterDisruptionPolicies: a copy of the
// policy's template, as a DisruptionPolicy of the same name, in every namespace its
// selector picks. The DisruptionPolicy controller does the rest in each namespace, so a
// change to one workload costs what it costs under a namespaced policy; this controller
// moves only when a namespace, the cluster policy or one of its copies changes. It
// records an Event on the cluster policy for each copy it creates or deletes, after the
// write, and for each namespace whose name is newly taken, after the status write.
package clusterdisruptionpolicy

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/announce"
	"github.com/holdfast-dev/holdfast/internal/controller/apply"
	"github.com/holdfast-dev/holdfast/internal/controller/cachelag"
	"github.com/holdfast-dev/holdfast/internal/controller/invalidspec"
	"github.com/holdfast-dev/holdfast/internal/controller/prologue"
	"github.com/holdfast-dev/holdfast/internal/controller/summary"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// Name is the controller's name, in logs, metrics and as the Events' reporting controller.
const Name = "clusterdisruptionpolicy"

// +kubebuilder:rbac:groups=holdfast.dev,resources=clusterdisruptionpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=holdfast.dev,resources=clusterdisruptionpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=holdfast.dev,resources=disruptionpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

type reconciler struct {
	client   client.Client
	clock    clock.PassiveClock
	recorder events.EventRecorder
	invalid  *invalidspec.Reporter
	patches  cachelag.Patches
}

// SetupWithManager registers the reconciler and its watches with mgr.
func SetupWithManager(mgr ctrl.Manager, clk clock.PassiveClock) error {
	r := &reconciler{client: mgr.GetClient(), clock: clk, recorder: mgr.GetEventRecorder("holdfast-" + Name)}
	invalid, err := invalidspec.New(ctrlmetrics.Registry, "ClusterDisruptionPolicy", r.recorder)
	if err != nil {
		return err
	}
	r.invalid = invalid
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
	// A deleted policy's copies are garbage-collected through their owner reference.
	gone := func() error { return nil }
	invalid := func(ctx context.Context) error { return r.invalidSpec(ctx, p) }
	pro := prologue.Prologue{Kind: "ClusterDisruptionPolicy", Client: r.client, Patches: &r.patches, Invalid: r.invalid}
	if done, res, err := pro.Get(ctx, req, p, invalid, gone); done {
		return res, err
	}
	obs, err := r.gather(ctx, p)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := policy.DecideCluster(obs)
	// Each copy's Event right after its write: the retry after a later failure finds the
	// write done and does not repeat it, so an Event held back to the end would be lost.
	for _, c := range d.Create {
		err := r.client.Create(ctx, c)
		if apierrors.IsAlreadyExists(err) {
			// The cache is behind. A namespace's own policy created just now would wake
			// no pass, so look again soon rather than write a status counting a copy.
			return ctrl.Result{RequeueAfter: cachelag.Retry}, nil
		}
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("creating DisruptionPolicy %s: %w", klog.KObj(c), err)
		}
		announce.Record(r.recorder, p, copied(c))
	}
	for _, c := range d.Apply {
		if err := r.update(ctx, c); err != nil {
			return ctrl.Result{}, err
		}
	}
	for _, c := range d.Delete {
		err := r.client.Delete(ctx, c, client.Preconditions{UID: &c.UID})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("deleting DisruptionPolicy %s: %w", klog.KObj(c), err)
		}
		announce.Record(r.recorder, p, removed(c))
	}
	summary.Set(&d.Status.Conditions, p.Generation, readyRules, "every selected namespace has the policy", metav1.NewTime(r.clock.Now()))
	if equality.Semantic.DeepEqual(p.Status, d.Status) {
		return ctrl.Result{}, nil
	}
	patched := p.DeepCopy()
	if err := apply.Status(ctx, r.client, patched, p.Status, d.Status); err != nil {
		return ctrl.Result{}, err
	}
	r.patches.Patched(req.NamespacedName, p.ResourceVersion, patched.ResourceVersion)
	log.FromContext(ctx).V(1).Info("Status updated", "namespaces", d.Status.Namespaces, "selected", d.Status.Selected, "budgeted", d.Status.Budgeted)
	announce.Record(r.recorder, p, statusEvents(p.Name, p.Status, d.Status)...)
	return ctrl.Result{}, nil
}

// gather reads the namespaces and the DisruptionPolicies, all from the cache; which of
// them the policy selects, copies and finds taken is the core's reading, the same the
// CLI makes of a snapshot.
func (r *reconciler) gather(ctx context.Context, p *holdfastv1alpha1.ClusterDisruptionPolicy) (policy.ClusterObserved, error) {
	policies := &holdfastv1alpha1.DisruptionPolicyList{}
	if err := r.client.List(ctx, policies); err != nil {
		return policy.ClusterObserved{}, fmt.Errorf("listing DisruptionPolicies: %w", err)
	}
	var namespaces corev1.NamespaceList
	if sel, err := metav1.LabelSelectorAsSelector(&p.Spec.NamespaceSelector); err == nil {
		if err := r.client.List(ctx, &namespaces, client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return policy.ClusterObserved{}, fmt.Errorf("listing namespaces: %w", err)
		}
	}
	return policy.ObserveCluster(p, namespaces.Items, policies.Items, r.clock.Now()), nil
}

// update patches a copy where its spec, labels or owner differ.
func (r *reconciler) update(ctx context.Context, want *holdfastv1alpha1.DisruptionPolicy) error {
	cur := &holdfastv1alpha1.DisruptionPolicy{}
	err := r.client.Get(ctx, client.ObjectKeyFromObject(want), cur)
	if apierrors.IsNotFound(err) {
		// Deleted since gather read it; its departure wakes the next pass, which creates it.
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

// readyRules sum up a cluster policy's conditions in Ready.
var readyRules = []summary.Rule{
	summary.When(holdfastv1alpha1.ConditionPoliciesReady, metav1.ConditionFalse),
}
