// Package disruptionpolicy runs DisruptionPolicies: a PodDisruptionBudget on every
// selected workload, kept in step with its size and selector, never over pods that
// another budget already covers, and single replicas handled by a declared strategy.
//
// The reconciler gathers one namespace from the cache (pods only of the few workloads in
// motion that policy.NeedsPods names, and the objects of custom kinds with their scale,
// straight from the apiserver), decides in the pure core, policy.Decide, acts only on
// what differs, writes status only when it changed, and records Events after the writes
// succeed.
package disruptionpolicy

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	"sigs.k8s.io/controller-runtime/pkg/source"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/announce"
	"github.com/holdfast-dev/holdfast/internal/controller/apply"
	"github.com/holdfast-dev/holdfast/internal/controller/cachelag"
	"github.com/holdfast-dev/holdfast/internal/controller/contest"
	"github.com/holdfast-dev/holdfast/internal/controller/invalidspec"
	"github.com/holdfast-dev/holdfast/internal/controller/prologue"
	"github.com/holdfast-dev/holdfast/internal/controller/summary"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// Name is the controller's name, in logs, metrics and as the Events' reporting controller.
const Name = "disruptionpolicy"

// drainIndex indexes DisruptionPolicies by what they do when a node is drained
// (spec.singleReplica, and spec.surge when it is WhenBlocked), so that a node being
// drained wakes only the policies that act on drains.
const drainIndex = "holdfast.dev/drain-strategy"

// zoneAwareIndex is drainIndex's value for a policy with spec.zoneAware: a drain
// disturbs a zone, which may change the zone that may be disrupted.
const zoneAwareIndex = "ZoneAware"

// +kubebuilder:rbac:groups=holdfast.dev,resources=disruptionpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=holdfast.dev,resources=disruptionpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// reconciler reconciles DisruptionPolicies. SetupWithManager builds it with what it
// needs injected.
type reconciler struct {
	client client.Client
	// live reads from the apiserver: pods, since the shared cache holds only companion
	// pods and only the few of workloads in motion are needed; and the objects of custom
	// kinds, which the operator cannot know in advance to cache.
	live     client.Reader
	clock    clock.PassiveClock
	recorder events.EventRecorder
	metrics  *metrics
	invalid  *invalidspec.Reporter
	windows  *invalidWindowsGauge
	patches  cachelag.Patches
	// failpoint is a test hook: see failpoint.go.
	failpoint failpoint
	// karpenter says Karpenter's NodeClaims are served, and cache reads them.
	karpenter bool
	cache     client.Reader
	// settings are the operator's flags that bound its decisions.
	settings policy.Settings
	// nodes knows which nodes may be lost.
	nodes *nodeWatcher
	// room keeps the answers on nodes' room for a while.
	room roomAnswers
	// ledger bounds the writes that another writer undoes (see contested.go).
	ledger *contest.Ledger
	// awaited are the workloads whose deletion or scale-down wakes a policy
	// (awaited.go).
	awaited awaitedWorkloads
}

// SetupWithManager registers the reconciler and its watches with mgr; settings are the
// operator's flags that bound its decisions.
func SetupWithManager(mgr ctrl.Manager, clk clock.PassiveClock, settings policy.Settings) error {
	m, err := newMetrics(ctrlmetrics.Registry, mgr.GetClient(), mgr.GetAPIReader())
	if err != nil {
		return err
	}
	fp, err := failpointFromEnv()
	if err != nil {
		return err
	}
	r := &reconciler{
		failpoint: fp,
		client:    mgr.GetClient(),
		live:      mgr.GetAPIReader(),
		clock:     clk,
		recorder:  mgr.GetEventRecorder("holdfast-" + Name),
		metrics:   m,
		cache:     mgr.GetCache(),
		settings:  settings,
		ledger:    contest.NewLedger(clk),
	}
	r.nodes = newNodeWatcher(mgr.GetClient(), mgr.GetCache(), mgr.GetAPIReader(), clk, r.ledger)
	if err := mgr.Add(r.nodes); err != nil {
		return fmt.Errorf("adding the node watcher: %w", err)
	}
	if r.karpenter, err = karpenterInstalled(mgr); err != nil {
		return err
	}
	if r.invalid, err = invalidspec.New(ctrlmetrics.Registry, "DisruptionPolicy", r.recorder); err != nil {
		return err
	}
	if r.windows, err = newInvalidWindowsGauge(ctrlmetrics.Registry); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &holdfastv1alpha1.DisruptionPolicy{}, drainIndex, drainStrategies); err != nil {
		return fmt.Errorf("indexing DisruptionPolicies by strategy: %w", err)
	}
	inNamespace := handler.EnqueueRequestsFromMapFunc(r.policiesInNamespace)
	specOrLabels := predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{})
	b := ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&holdfastv1alpha1.DisruptionPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A surge set's pods becoming Ready move its surge on.
		Owns(&appsv1.ReplicaSet{}).
		// A policy's arrival or departure changes which policy wins a workload.
		Watches(&holdfastv1alpha1.DisruptionPolicy{}, inNamespace, builder.WithPredicates(predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }})).
		Watches(&appsv1.Deployment{}, inNamespace, builder.WithPredicates(workloadChanged())).
		Watches(&appsv1.StatefulSet{}, inNamespace, builder.WithPredicates(workloadChanged())).
		Watches(&appsv1.DaemonSet{}, inNamespace, builder.WithPredicates(workloadChanged())).
		Watches(&policyv1.PodDisruptionBudget{}, inNamespace, builder.WithPredicates(predicate.Or(specOrLabels, blockedChanged()))).
		// What a policy deleted while the operator was down left behind: its budgets are
		// swept by the request of a name that is not found.
		Watches(&policyv1.PodDisruptionBudget{}, handler.EnqueueRequestsFromMapFunc(labelledPolicy), builder.WithPredicates(seenOrResynced(managedBudget))).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.drainingPolicies), builder.WithPredicates(drainSignalChanged())).
		// A node that may be lost, or is back, wakes the policies of its pods' namespaces.
		WatchesRawSource(source.Channel(r.nodes.events, inNamespace)).
		// Another namespace's workload leaving a Surge single replica's node, which
		// cluster-autoscaler may then want, wakes the policy.
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.awaitingPolicies), builder.WithPredicates(shrunk())).
		Watches(&appsv1.StatefulSet{}, handler.EnqueueRequestsFromMapFunc(r.awaitingPolicies), builder.WithPredicates(shrunk()))
	if r.karpenter {
		// A node Karpenter starts to consider for consolidation may be handed over: it
		// wakes the policies of the namespaces of its pods.
		b = b.Watches(nodeClaim(), handler.EnqueueRequestsFromMapFunc(r.claimPolicies), builder.WithPredicates(consolidatableChanged()))
	}
	return b.Complete(r)
}

// Reconcile brings one DisruptionPolicy's budgets, surges and status in line with the
// namespace.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	p := &holdfastv1alpha1.DisruptionPolicy{}
	// A policy being deleted is left alone (someone else's finalizer holds it); its
	// budgets go once it is gone.
	gone := func() error {
		r.metrics.forget(req.NamespacedName)
		r.awaited.set(req.NamespacedName, nil)
		r.windows.forget(req.NamespacedName)
		return r.sweep(ctx, req.Namespace)
	}
	invalid := func(ctx context.Context) error { return r.invalidSpec(ctx, p) }
	pro := prologue.Prologue{Kind: "DisruptionPolicy", Client: r.client, Patches: &r.patches, Invalid: r.invalid}
	if done, res, err := pro.Get(ctx, req, p, invalid, gone); done {
		return res, err
	}

	obs, err := r.observe(ctx, p, r.clock.Now())
	if err != nil {
		return ctrl.Result{}, err
	}
	r.awaited.set(req.NamespacedName, obs.Awaited())
	d := policy.Decide(obs)

	// Every write of a field another writer may undo goes through the ledger.
	var cs contests
	var fenced []announce.Event
	loosening := false
	for _, e := range d.Effects {
		if e.Loosens() && !loosening {
			loosening = true
			r.failpoint.at(FailBeforeLoosening)
		}
		ev, err := r.execute(ctx, &cs, p, obs, e)
		if err != nil {
			return ctrl.Result{}, err
		}
		if ev != nil {
			fenced = append(fenced, *ev)
		}
		if _, surge := e.(policy.Surge); surge {
			r.failpoint.at(FailAfterSurge)
		}
	}
	r.metrics.handOffsEnded(policy.HandOffsEnded(obs, d))

	meta.SetStatusCondition(&d.Status.Conditions, cs.condition(p.Generation, obs.Now))
	if cs.retry > 0 && (d.RequeueAfter == 0 || cs.retry < d.RequeueAfter) {
		d.RequeueAfter = cs.retry
	}
	summary.Set(&d.Status.Conditions, p.Generation, readyRules, "every selected workload has its budget", metav1.NewTime(obs.Now))
	var evs []announce.Event
	if !equality.Semantic.DeepEqual(p.Status, d.Status) {
		patched := p.DeepCopy()
		if err := apply.Status(ctx, r.client, patched, p.Status, d.Status); err != nil {
			return ctrl.Result{}, err
		}
		r.patches.Patched(req.NamespacedName, p.ResourceVersion, patched.ResourceVersion)
		logger.V(1).Info("Status updated", "selected", d.Status.Selected, "budgeted", d.Status.Budgeted, "conflicting", d.Status.Conflicting, "unprotected", d.Status.Unprotected)
		evs = append(invalidWindowEvents(p.Status, d.Status), statusEvents(p.Namespace, p.Status, d.Status)...)
	}
	r.metrics.set(req.NamespacedName, d.Status)
	r.metrics.recoveries.observe(req.NamespacedName, d.Status, obs)
	r.windows.set(req.NamespacedName, p.Spec.MaintenanceWindows, obs.Now)
	announce.Record(r.recorder, p, slices.Concat(fenced, cs.events, evs)...)
	return ctrl.Result{RequeueAfter: d.RequeueAfter}, nil
}

// forbidden says which permission on a scale target the operator lacks and where to
// grant it.
func forbidden(t holdfastv1alpha1.ScaleTarget, verb, resource string) string {
	return fmt.Sprintf("the operator may not %s %s (%s %s): grant get, list and watch on the resource and get on its scale subresource (Helm value scaleTargets, or the ClusterRole in docs/disruptionpolicy.md)", verb, resource, t.APIVersion, t.Kind)
}

// sweep removes what DisruptionPolicies that no longer exist left in a namespace (see
// policy.Sweep): their budgets and their pods' do-not-disrupt. It runs for any request
// whose policy is not found: a policy just deleted, or a budget labelled with a policy
// that is gone, seen at start and on every resync.
// Another policy that selects the same workloads recreates their budgets, woken by the
// deletions.
func (r *reconciler) sweep(ctx context.Context, namespace string) error {
	src := (*observer)(r)
	policies, err := src.Policies(ctx, namespace)
	if err != nil {
		return err
	}
	budgets := &policyv1.PodDisruptionBudgetList{}
	if err := r.client.List(ctx, budgets, client.InNamespace(namespace), client.HasLabels{holdfastv1alpha1.PolicyLabel}); err != nil {
		return fmt.Errorf("listing managed PodDisruptionBudgets: %w", err)
	}
	_, pods, err := src.PodMeta(ctx, namespace)
	if err != nil {
		return err
	}
	sw := policy.SweepNamespace(policies, budgets.Items, pods)
	logger := log.FromContext(ctx)
	for _, a := range sw.PodAnnotations {
		if err := r.annotatePod(ctx, namespace, "", a); err != nil {
			return err
		}
		logger.Info("Removed the pod mark of a deleted policy", "pod", klog.KRef(namespace, a.Pod), "annotation", a.Mark.Key)
	}
	for _, b := range sw.Delete {
		if err := r.deleteBudget(ctx, b); err != nil {
			return err
		}
		logger.Info("Deleted the budget of a deleted policy", "budget", klog.KObj(b), "policy", b.Labels[holdfastv1alpha1.PolicyLabel])
	}
	return nil
}

// readyRules sum up a policy's conditions in Ready. A policy outside its windows, or
// whose workloads are Degraded, still does its job; one overridden by an older policy
// leaves those workloads to it, by design.
var readyRules = []summary.Rule{
	summary.When(holdfastv1alpha1.ConditionBudgetsReady, metav1.ConditionFalse),
	summary.WhenReason(holdfastv1alpha1.ConditionConflicted, holdfastv1alpha1.ReasonConflictingBudgets),
	summary.WhenReason(holdfastv1alpha1.ConditionWindowOpen, holdfastv1alpha1.ReasonInvalidWindow),
	summary.When(holdfastv1alpha1.ConditionWritesContested, metav1.ConditionTrue),
}
