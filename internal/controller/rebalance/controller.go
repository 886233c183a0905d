// Package rebalance spreads the replicas of opted-in Deployments and StatefulSets again
// when they crowd one node or zone (after a node is lost and comes back, the scheduler
// never moves them back). A workload opts in by its annotations or through the rebalance
// settings of the DisruptionPolicy that manages it. One pod at a time goes through the
// Eviction API, only when plan.Rebalance's simulation says its replacement lands
// somewhere better.
//
// The reconciler is keyed on the workload. It gathers nodes and budgets from the cache and
// the workload's pods from the apiserver (the shared cache holds only companion pods),
// decides with plan.Rebalance, records the move on the workload before evicting (so that
// a restart keeps the cooldown), and records Events after the writes succeed.
package rebalance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
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
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/controller/roompods"
	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// Name is the controller's name, in logs, metrics and as the Events' reporting controller.
const Name = "rebalance"

// optedInIndex indexes workloads that carry the rebalance annotation, so that a node
// change wakes only those and the ones policies opt in.
const optedInIndex = holdfastv1alpha1.RebalanceAnnotation

// rebalancingIndex indexes DisruptionPolicies that have spec.rebalance, so that a
// workload's change or a node's finds the few that opt workloads in without going
// through every policy.
const rebalancingIndex = "holdfast.dev/rebalancing"

// +kubebuilder:rbac:groups=holdfast.dev,resources=disruptionpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get;list
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// kind is one workload kind the controller rebalances.
type kind struct {
	name  string
	new   func() client.Object
	list  func() client.ObjectList
	items func(client.ObjectList) []client.Object
}

var kinds = []kind{
	{
		name: snapshot.KindDeployment,
		new:  func() client.Object { return &appsv1.Deployment{} },
		list: func() client.ObjectList { return &appsv1.DeploymentList{} },
		items: func(l client.ObjectList) []client.Object {
			var out []client.Object
			for i := range l.(*appsv1.DeploymentList).Items {
				out = append(out, &l.(*appsv1.DeploymentList).Items[i])
			}
			return out
		},
	},
	{
		name: snapshot.KindStatefulSet,
		new:  func() client.Object { return &appsv1.StatefulSet{} },
		list: func() client.ObjectList { return &appsv1.StatefulSetList{} },
		items: func(l client.ObjectList) []client.Object {
			var out []client.Object
			for i := range l.(*appsv1.StatefulSetList).Items {
				out = append(out, &l.(*appsv1.StatefulSetList).Items[i])
			}
			return out
		},
	},
}

// reconciler rebalances one kind of workload. SetupWithManager builds one per kind with
// what they need injected.
type reconciler struct {
	kind   kind
	client client.Client
	// pods reads pods and ReplicaSets from the apiserver: the shared cache holds neither.
	pods     client.Reader
	clock    clock.PassiveClock
	recorder events.EventRecorder
	metrics  *metrics
}

// SetupWithManager registers a reconciler per kind and their watches with mgr.
func SetupWithManager(mgr ctrl.Manager, clk clock.PassiveClock) error {
	m, err := newMetrics(ctrlmetrics.Registry)
	if err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &holdfastv1alpha1.DisruptionPolicy{}, rebalancingIndex, rebalances); err != nil {
		return fmt.Errorf("indexing DisruptionPolicies by %s: %w", rebalancingIndex, err)
	}
	for _, k := range kinds {
		r := &reconciler{
			kind:     k,
			client:   mgr.GetClient(),
			pods:     mgr.GetAPIReader(),
			clock:    clk,
			recorder: mgr.GetEventRecorder("holdfast-" + Name),
			metrics:  m,
		}
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), k.new(), optedInIndex, func(o client.Object) []string {
			if _, ok := o.GetAnnotations()[holdfastv1alpha1.RebalanceAnnotation]; ok {
				return []string{"true"}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("indexing %ss by %s: %w", k.name, optedInIndex, err)
		}
		err := ctrl.NewControllerManagedBy(mgr).
			Named(Name+"-"+k.name).
			// Any change of an opted-in workload: its status follows its pods' readiness,
			// which is when a move has finished.
			For(k.new(), builder.WithPredicates(r.optedInChanged())).
			Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.optedIn), builder.WithPredicates(roomChanged())).
			// A policy's rebalance settings, selector, arrival or departure change which
			// workloads it opts in, and with what.
			Watches(&holdfastv1alpha1.DisruptionPolicy{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
				return r.selectedBy(ctx, o.(*holdfastv1alpha1.DisruptionPolicy))
			}), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
			Complete(r)
		if err != nil {
			return fmt.Errorf("building the %s controller for %ss: %w", Name, k.name, err)
		}
	}
	return nil
}

// Reconcile moves at most one pod of the workload.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	obj := r.kind.new()
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if obj.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil
	}
	policies, err := r.policies(ctx, obj.GetNamespace())
	if err != nil {
		return ctrl.Result{}, err
	}
	ref := availability.WorkloadRef{Kind: r.kind.name, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	target, ok, err := targetOf(ref, obj.GetLabels(), obj.GetAnnotations(), policies)
	if !ok {
		return ctrl.Result{}, nil
	}
	if err != nil {
		// Retried only when the annotations change.
		r.recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventInvalidSettings, "Rebalance", "%s", err.Error())
		return ctrl.Result{}, nil
	}
	if target.Raised != "" {
		r.recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventCooldownRaised, "Rebalance", "%s", target.note(target.Raised))
	}

	snap, err := r.gather(ctx, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := r.clock.Now()
	d := plan.Rebalance(snap, now, target.RebalanceTarget)
	if d.Outcome == plan.RebalanceEvict {
		// Only a move needs every pod of the cluster, for the room left on each node:
		// every other answer is the same without them, and is the common case.
		if snap.Pods, err = roompods.List(ctx, r.pods); err != nil {
			return ctrl.Result{}, err
		}
		d = plan.Rebalance(snap, now, target.RebalanceTarget)
	}
	r.metrics.decided(d.Outcome)
	logger.V(1).Info("Decided", "outcome", d.Outcome, "message", d.Message, "optedInBy", target.By)
	if d.Outcome != plan.RebalanceEvict {
		a := afterDecision(d, target.Cooldown)
		if a.Reason != "" {
			r.recorder.Eventf(obj, nil, a.Type, a.Reason, "Rebalance", "%s", target.note(d.Message))
		}
		return ctrl.Result{RequeueAfter: a.RequeueAfter}, nil
	}

	mv := d.Move
	pod := podOf(snap, mv.Namespace, mv.Pod)
	if pod == nil {
		return ctrl.Result{}, fmt.Errorf("pod %s of the decision is not in the snapshot", klog.KRef(mv.Namespace, mv.Pod))
	}
	if err := r.record(ctx, obj, now, mv.Pod); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.evict(ctx, pod); err != nil {
		if apierrors.IsTooManyRequests(err) {
			// The budget changed since the snapshot: the recorded move only delays the
			// next try by the cooldown.
			r.recorder.Eventf(obj, pod, corev1.EventTypeWarning, EventRebalanceHeld, "Evict", "%s", target.note(fmt.Sprintf("evicting pod %s: %v", mv.Pod, err)))
			return ctrl.Result{RequeueAfter: max(target.Cooldown, heldRetry)}, nil
		}
		return ctrl.Result{}, err
	}
	r.metrics.evicted(ref)
	logger.Info("Evicted a pod to rebalance", "pod", klog.KObj(pod), "from", mv.From, "to", mv.To, "optedInBy", target.By)
	r.recorder.Eventf(obj, pod, corev1.EventTypeNormal, EventRebalanced, "Evict", "%s", target.note(d.Message))
	return ctrl.Result{RequeueAfter: target.Cooldown}, nil
}

// gather builds a snapshot of the workload: every node, the namespace's budgets, the
// workload with its ReplicaSets and its pods.
func (r *reconciler) gather(ctx context.Context, obj client.Object) (*snapshot.Snapshot, error) {
	snap := &snapshot.Snapshot{Source: snapshot.SourceLive}
	nodes := &corev1.NodeList{}
	if err := r.client.List(ctx, nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	snap.Nodes = nodes.Items
	budgets := &policyv1.PodDisruptionBudgetList{}
	if err := r.client.List(ctx, budgets, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil, fmt.Errorf("listing PodDisruptionBudgets: %w", err)
	}
	snap.PodDisruptionBudgets = budgets.Items
	var selector *metav1.LabelSelector
	switch o := obj.(type) {
	case *appsv1.Deployment:
		snap.Deployments = []appsv1.Deployment{*o}
		selector = o.Spec.Selector
	case *appsv1.StatefulSet:
		snap.StatefulSets = []appsv1.StatefulSet{*o}
		selector = o.Spec.Selector
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, fmt.Errorf("selector of %s %s: %w", r.kind.name, klog.KObj(obj), err)
	}
	opts := []client.ListOption{client.InNamespace(obj.GetNamespace()), client.MatchingLabelsSelector{Selector: sel}}
	if _, ok := obj.(*appsv1.Deployment); ok {
		// A Deployment's pods belong to it through its ReplicaSets, which carry the
		// template's labels.
		rs := &appsv1.ReplicaSetList{}
		if err := r.pods.List(ctx, rs, opts...); err != nil {
			return nil, fmt.Errorf("listing ReplicaSets of %s: %w", klog.KObj(obj), err)
		}
		snap.ReplicaSets = rs.Items
	}
	pods := &corev1.PodList{}
	if err := r.pods.List(ctx, pods, opts...); err != nil {
		return nil, fmt.Errorf("listing pods of %s: %w", klog.KObj(obj), err)
	}
	snap.Pods = pods.Items
	return snap, nil
}

func podOf(snap *snapshot.Snapshot, namespace, name string) *corev1.Pod {
	for i := range snap.Pods {
		if p := &snap.Pods[i]; p.Namespace == namespace && p.Name == name {
			return p
		}
	}
	return nil
}

// record writes the move on the workload before the eviction: if the operator stops
// between the two, the cooldown holds and the pod is not picked again next.
func (r *reconciler) record(ctx context.Context, obj client.Object, now time.Time, pod string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		holdfastv1alpha1.LastRebalanceAnnotation: policy.LastRebalance(now, pod),
	}}})
	if err != nil {
		return fmt.Errorf("encoding the last move of %s %s: %w", r.kind.name, klog.KObj(obj), err)
	}
	if err := r.client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("recording the last move of %s %s: %w", r.kind.name, klog.KObj(obj), err)
	}
	return nil
}

// evict asks the Eviction API to evict the pod the decision saw, not a namesake that a
// StatefulSet has made since.
func (r *reconciler) evict(ctx context.Context, pod *corev1.Pod) error {
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}},
	}
	err := r.client.SubResource("eviction").Create(ctx, pod, ev)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone already, or replaced: the next decision sees the new state.
		return nil
	}
	if err != nil {
		return fmt.Errorf("evicting pod %s: %w", klog.KObj(pod), err)
	}
	return nil
}

// policies lists the namespace's DisruptionPolicies from the cache.
func (r *reconciler) policies(ctx context.Context, namespace string) ([]holdfastv1alpha1.DisruptionPolicy, error) {
	list := &holdfastv1alpha1.DisruptionPolicyList{}
	if err := r.client.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing DisruptionPolicies: %w", err)
	}
	return list.Items, nil
}

// optedIn maps a node change to every workload of the kind that may be opted in: a node
// that appears, comes back or changes its labels or taints may be where pods can spread.
func (r *reconciler) optedIn(ctx context.Context, _ client.Object) []reconcile.Request {
	list := r.kind.list()
	if err := r.client.List(ctx, list, client.MatchingFields{optedInIndex: "true"}); err != nil {
		log.FromContext(ctx).Error(err, "Listing workloads to rebalance for a node change", "kind", r.kind.name)
		return nil
	}
	out := requests(r.kind.items(list))
	policies, err := r.rebalancing(ctx)
	if err != nil {
		log.FromContext(ctx).Error(err, "Listing DisruptionPolicies for a node change")
		return out
	}
	for i := range policies {
		out = append(out, r.selectedBy(ctx, &policies[i])...)
	}
	return out
}

// rebalances indexes a DisruptionPolicy under rebalancingIndex when it has
// spec.rebalance.
func rebalances(o client.Object) []string {
	if o.(*holdfastv1alpha1.DisruptionPolicy).Spec.Rebalance != nil {
		return []string{"true"}
	}
	return nil
}

// rebalancing lists the DisruptionPolicies with spec.rebalance from the index, with
// opts such as a namespace.
func (r *reconciler) rebalancing(ctx context.Context, opts ...client.ListOption) ([]holdfastv1alpha1.DisruptionPolicy, error) {
	list := &holdfastv1alpha1.DisruptionPolicyList{}
	if err := r.client.List(ctx, list, append(opts, client.MatchingFields{rebalancingIndex: "true"})...); err != nil {
		return nil, fmt.Errorf("listing DisruptionPolicies that rebalance: %w", err)
	}
	return list.Items, nil
}

// selectedBy maps a DisruptionPolicy to the workloads of the kind it selects, whether or
// not it wins them: Reconcile settles that.
func (r *reconciler) selectedBy(ctx context.Context, p *holdfastv1alpha1.DisruptionPolicy) []reconcile.Request {
	list := r.kind.list()
	if err := r.client.List(ctx, list, client.InNamespace(p.Namespace)); err != nil {
		log.FromContext(ctx).Error(err, "Listing workloads a DisruptionPolicy selects", "kind", r.kind.name, "policy", klog.KObj(p))
		return nil
	}
	var selected []client.Object
	for _, o := range r.kind.items(list) {
		if ok, _ := policy.Selects(p, &policy.Workload{Kind: r.kind.name, Labels: o.GetLabels()}); ok {
			selected = append(selected, o)
		}
	}
	return requests(selected)
}

func requests(objs []client.Object) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(objs))
	for _, o := range objs {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
	}
	return out
}

// optedInChanged passes the events of workloads that carry the rebalance annotation
// (also the one that removes it: nothing to do then, but nothing is lost) or that a
// policy with spec.rebalance selects; Reconcile settles which policy wins them. It runs
// on every change of every workload of the kind, so it reads only the index of the few
// policies that rebalance, and costs nothing in a namespace without them.
func (r *reconciler) optedInChanged() predicate.Predicate {
	optedIn := func(o client.Object) bool {
		if _, ok := o.GetAnnotations()[holdfastv1alpha1.RebalanceAnnotation]; ok {
			return true
		}
		policies, err := r.rebalancing(context.Background(), client.InNamespace(o.GetNamespace()))
		if err != nil {
			return true // Reconcile looks again and reports it
		}
		return slices.ContainsFunc(policies, func(p holdfastv1alpha1.DisruptionPolicy) bool {
			ok, _ := policy.Selects(&p, &policy.Workload{Kind: r.kind.name, Labels: o.GetLabels()})
			return ok
		})
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return optedIn(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return optedIn(e.ObjectNew) },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(e event.GenericEvent) bool { return optedIn(e.Object) },
	}
}

// roomChanged passes node events that change where pods can go: a new node, a deleted
// one, and changes of cordon, taints or labels. Status heartbeats are most node updates
// and pass nothing.
func roomChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*corev1.Node)
			n, okNew := e.ObjectNew.(*corev1.Node)
			if !okOld || !okNew {
				return true
			}
			return o.Spec.Unschedulable != n.Spec.Unschedulable ||
				!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
				!equality.Semantic.DeepEqual(o.Labels, n.Labels)
		},
	}
}
