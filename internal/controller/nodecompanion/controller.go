// Package nodecompanion runs a NodeCompanion: one companion pod on every node where a
// DaemonSet's pods can run, as an owned Deployment and disruption budgets, so that drains
// that ignore DaemonSets still take the companions down one node at a time.
//
// The reconciler gathers from the cache, decides in the pure core,
// policy.DecideCompanion, acts on the owned objects only when they differ, writes status only when it changed, and records
// Events after the writes succeed.
package nodecompanion

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
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
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// Name is the controller's name, in logs, metrics and as the Events' reporting controller.
const Name = "nodecompanion"

// targetIndex indexes NodeCompanions by the namespace/name of their target DaemonSet.
const targetIndex = "spec.daemonSet.key"

// +kubebuilder:rbac:groups=holdfast.dev,resources=nodecompanions,verbs=get;list;watch
// +kubebuilder:rbac:groups=holdfast.dev,resources=nodecompanions/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=holdfast.dev,resources=nodecompanions/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// reconciler reconciles NodeCompanions. SetupWithManager builds it with what it needs
// injected: the manager's cached client, the clock and an Event recorder.
type reconciler struct {
	client client.Client
	// live reads nodes from the apiserver before a companion pod is force-deleted: the
	// cache may not have seen a new node yet.
	live     client.Reader
	clock    clock.PassiveClock
	recorder events.EventRecorder
	// evictions remembers the companion evictions seen on the pod watch between the watch
	// event and the reconcile that records them in status (drained or evicted), by when
	// the evicted pod may be gone. Status is what outlives the process: a restarted
	// operator or a new leader reads the open evictions from there.
	evictions *evictionLog
	metrics   *metrics
	invalid   *invalidspec.Reporter
	patches   cachelag.Patches
}

// SetupWithManager registers the reconciler and its watches with mgr.
func SetupWithManager(mgr ctrl.Manager, clk clock.PassiveClock) error {
	m, err := newMetrics(ctrlmetrics.Registry)
	if err != nil {
		return err
	}
	r := &reconciler{
		client:    mgr.GetClient(),
		live:      mgr.GetAPIReader(),
		clock:     clk,
		recorder:  mgr.GetEventRecorder("holdfast-" + Name),
		evictions: newEvictionLog(),
		metrics:   m,
	}
	if r.invalid, err = invalidspec.New(ctrlmetrics.Registry, "NodeCompanion", r.recorder); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &holdfastv1alpha1.NodeCompanion{}, targetIndex, func(o client.Object) []string {
		nc := o.(*holdfastv1alpha1.NodeCompanion)
		if nc.Spec.DaemonSet == nil {
			return nil
		}
		return []string{policy.CompanionNamespace(nc) + "/" + nc.Spec.DaemonSet.Name}
	}); err != nil {
		return fmt.Errorf("indexing NodeCompanions by target: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&holdfastv1alpha1.NodeCompanion{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&policyv1.PodDisruptionBudget{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.allCompanions), builder.WithPredicates(nodeSchedulingChanged())).
		Watches(&appsv1.DaemonSet{}, handler.EnqueueRequestsFromMapFunc(r.companionsOfDaemonSet), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Pod{}, r.podHandler()).
		Complete(r)
}

// Reconcile brings one NodeCompanion's Deployment, budgets and status in line with the
// cluster.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	nc := &holdfastv1alpha1.NodeCompanion{}
	// The owned objects go with it through owner references.
	gone := func() error {
		r.evictions.replace(req.NamespacedName, nil, nil)
		r.metrics.forget(req.NamespacedName)
		return nil
	}
	invalid := func(ctx context.Context) error { return r.invalidSpec(ctx, nc) }
	pro := prologue.Prologue{Kind: "NodeCompanion", Client: r.client, Patches: &r.patches, Invalid: r.invalid}
	if done, res, err := pro.Get(ctx, req, nc, invalid, gone); done {
		return res, err
	}

	obs, err := r.gather(ctx, nc)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := policy.DecideCompanion(obs)

	stale, err := nodesGone(ctx, r.live, d.StalePods)
	if err != nil {
		return ctrl.Result{}, err
	}
	var evs []announce.Event
	for _, pod := range stale {
		// The node is gone, so no kubelet will confirm a graceful deletion; the pod
		// garbage collector would do the same, but only after its quarantine, and until
		// then the ReplicaSet counts the pod and may scale down a live one instead.
		if err := r.client.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("deleting pod %s of deleted node %s: %w", klog.KObj(pod), pod.Spec.NodeName, err)
		}
		evs = append(evs, announce.Normal(EventStalePod, fmt.Sprintf("deleted companion %s: its node %s no longer exists", pod.Name, pod.Spec.NodeName)).About(nodeRef(pod.Spec.NodeName)))
	}
	if d.Deployment != nil {
		from, err := r.applyDeployment(ctx, d.Deployment)
		if apierrors.IsInvalid(err) {
			return ctrl.Result{}, r.templateRefused(ctx, nc, err)
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		if from != nil && *from != *d.Deployment.Spec.Replicas {
			evs = append(evs, announce.Normal(EventScaled, fmt.Sprintf("companions scaled from %d to %d nodes", *from, *d.Deployment.Spec.Replicas)))
		}
	}
	if d.Budget != nil {
		if err := apply.Budget(ctx, r.client, r.live, d.Budget); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.syncGuardBudget(ctx, nc, d.GuardBudget); err != nil {
			return ctrl.Result{}, err
		}
	}

	if !equality.Semantic.DeepEqual(nc.Status, d.Status) {
		patched := nc.DeepCopy()
		patched.Status = d.Status
		if err := r.client.Status().Patch(ctx, patched, client.MergeFrom(nc)); err != nil {
			return ctrl.Result{}, fmt.Errorf("patching status of NodeCompanion %s: %w", klog.KObj(nc), err)
		}
		r.patches.Patched(req.NamespacedName, nc.ResourceVersion, patched.ResourceVersion)
		logger.V(1).Info("Status updated", "desired", d.Status.Desired, "ready", d.Status.Ready, "missing", d.Status.NodesMissing)
		evs = append(evs, statusEvents(nc.Status, d.Status)...)
	}
	r.evictions.replace(req.NamespacedName, obs.Evictions, d.OpenEvictions)
	r.metrics.set(req.NamespacedName, d.Status)
	announce.Record(r.recorder, nc, evs...)
	return ctrl.Result{RequeueAfter: d.RequeueAfter}, nil
}

// gather reads everything Decide needs from the cache.
func (r *reconciler) gather(ctx context.Context, nc *holdfastv1alpha1.NodeCompanion) (policy.CompanionObserved, error) {
	obs := policy.CompanionObserved{Companion: nc, Now: r.clock.Now(), Evictions: r.evictions.get(client.ObjectKeyFromObject(nc))}
	if nc.Spec.DaemonSet != nil {
		ds := &appsv1.DaemonSet{}
		key := types.NamespacedName{Namespace: policy.CompanionNamespace(nc), Name: nc.Spec.DaemonSet.Name}
		switch err := r.client.Get(ctx, key, ds); {
		case apierrors.IsNotFound(err):
			obs.TargetMissing = true
		case err != nil:
			return obs, fmt.Errorf("getting DaemonSet %s: %w", key, err)
		default:
			obs.DaemonSet = ds
		}
	}
	nodes := &corev1.NodeList{}
	if err := r.client.List(ctx, nodes); err != nil {
		return obs, fmt.Errorf("listing nodes: %w", err)
	}
	obs.Nodes = nodes.Items
	pods := &corev1.PodList{}
	if err := r.client.List(ctx, pods, client.InNamespace(nc.Namespace), client.MatchingLabels(policy.CompanionLabels(nc))); err != nil {
		return obs, fmt.Errorf("listing companion pods of %s: %w", klog.KObj(nc), err)
	}
	obs.Pods = pods.Items
	return obs, nil
}

// applyDeployment applies the Deployment when it is missing, or when holdfast's intent
// (the spec hash) or the replicas differ. It returns the replicas before a change, nil
// otherwise.
func (r *reconciler) applyDeployment(ctx context.Context, want *appsv1.Deployment) (*int32, error) {
	cur := &appsv1.Deployment{}
	err := r.client.Get(ctx, client.ObjectKeyFromObject(want), cur)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("getting Deployment %s: %w", klog.KObj(want), err)
	}
	var from *int32
	if err == nil {
		if cur.Annotations[policy.SpecHashAnnotation] == want.Annotations[policy.SpecHashAnnotation] && ptr.Deref(cur.Spec.Replicas, 1) == *want.Spec.Replicas {
			return nil, nil
		}
		from = ptr.To(ptr.Deref(cur.Spec.Replicas, 1))
	}
	return from, apply.Object(ctx, r.client, r.live, want)
}

// syncGuardBudget applies the guard budget, or deletes it when the guard is off.
func (r *reconciler) syncGuardBudget(ctx context.Context, nc *holdfastv1alpha1.NodeCompanion, want *policyv1.PodDisruptionBudget) error {
	if want != nil {
		return apply.Budget(ctx, r.client, r.live, want)
	}
	cur := &policyv1.PodDisruptionBudget{}
	err := r.client.Get(ctx, types.NamespacedName{Namespace: nc.Namespace, Name: nc.Name + "-guard"}, cur)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting guard budget of %s: %w", klog.KObj(nc), err)
	}
	if !metav1.IsControlledBy(cur, nc) {
		return nil
	}
	if err := r.client.Delete(ctx, cur, client.Preconditions{UID: &cur.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting guard budget %s: %w", klog.KObj(cur), err)
	}
	return nil
}

// allCompanions maps a node change to every NodeCompanion: any of them may gain or lose
// the node.
func (r *reconciler) allCompanions(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &holdfastv1alpha1.NodeCompanionList{}
	if err := r.client.List(ctx, list); err != nil {
		log.FromContext(ctx).Error(err, "Listing NodeCompanions for a node change")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// companionsOfDaemonSet maps a DaemonSet change to the NodeCompanions that target it.
func (r *reconciler) companionsOfDaemonSet(ctx context.Context, ds client.Object) []reconcile.Request {
	list := &holdfastv1alpha1.NodeCompanionList{}
	if err := r.client.List(ctx, list, client.MatchingFields{targetIndex: ds.GetNamespace() + "/" + ds.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "Listing NodeCompanions for a DaemonSet change", "daemonSet", klog.KObj(ds))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// nodeSchedulingChanged passes node events that can change eligibility or the cordon
// handling: creations, deletions, and changes of labels, taints or unschedulable. Status
// heartbeats, which are most node updates, are dropped.
func nodeSchedulingChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*corev1.Node)
			n, okNew := e.ObjectNew.(*corev1.Node)
			if !okOld || !okNew {
				return true
			}
			return o.Spec.Unschedulable != n.Spec.Unschedulable ||
				!equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
				!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints)
		},
	}
}

// podHandler maps a companion pod to its NodeCompanion, and notes the evictions it sees:
// the Eviction API marks the pod with a DisruptionTarget condition and then deletes it,
// and that condition is the only trace that the node was drained rather than the pod
// replaced or crashed.
func (r *reconciler) podHandler() handler.EventHandler {
	enqueue := func(obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		name, ok := obj.GetLabels()[holdfastv1alpha1.CompanionLabel]
		if !ok {
			return
		}
		key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}
		if pod, ok := obj.(*corev1.Pod); ok {
			if node, at, evicted := policy.EvictedFrom(pod); evicted {
				r.evictions.note(key, node, at)
			}
		}
		q.Add(reconcile.Request{NamespacedName: key})
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q)
		},
	}
}

// evictionLog is the in-memory side of the eviction memory: evictions seen on the watch
// and not yet written to status.
type evictionLog struct {
	mu   sync.Mutex
	seen map[types.NamespacedName]map[string]time.Time
}

func newEvictionLog() *evictionLog {
	return &evictionLog{seen: map[types.NamespacedName]map[string]time.Time{}}
}

func (l *evictionLog) note(key types.NamespacedName, node string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[key] == nil {
		l.seen[key] = map[string]time.Time{}
	}
	if prev, ok := l.seen[key][node]; !ok || at.Before(prev) {
		l.seen[key][node] = at
	}
}

func (l *evictionLog) get(key types.NamespacedName) map[string]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]time.Time, len(l.seen[key]))
	for n, t := range l.seen[key] {
		out[n] = t
	}
	return out
}

// replace swaps the evictions of key that a reconcile read for those it left open,
// keeping any noted since the read.
func (l *evictionLog) replace(key types.NamespacedName, read, open map[string]time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for n, t := range read {
		if l.seen[key][n].Equal(t) {
			delete(l.seen[key], n)
		}
	}
	for n, t := range open {
		if l.seen[key] == nil {
			l.seen[key] = map[string]time.Time{}
		}
		if prev, ok := l.seen[key][n]; !ok || t.Before(prev) {
			l.seen[key][n] = t
		}
	}
	if len(l.seen[key]) == 0 {
		delete(l.seen, key)
	}
}
