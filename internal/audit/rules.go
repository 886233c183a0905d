package audit

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// rules is the catalogue. IDs are stable: never renumber, only append.
var rules = []Rule{
	{
		ID: "HF001", Name: "budget-never-allows", Severity: Error,
		Summary: "PodDisruptionBudget allows no disruption even with every pod healthy",
		Rationale: `A PodDisruptionBudget whose floor equals the pods it covers can never allow an
eviction: one replica with minAvailable 1 (or 50%, which rounds up to 1), minAvailable equal
to replicas, minAvailable 100%, or maxUnavailable 0. kubectl drain, managed node upgrades and
autoscalers call the Eviction API, get 429 forever, and the node never empties: the
single-replica drain deadlock. Allow one pod to go (maxUnavailable: 1) and run enough replicas for
the service to survive that.`,
		Budget: budgetNeverAllows,
	},
	{
		ID: "HF002", Name: "no-budget", Severity: Warning,
		Summary: "workload with several replicas and no PodDisruptionBudget",
		Rationale: `Replicas only protect a service if they are not all evicted at once. Without a
PodDisruptionBudget nothing stops a script draining every node in parallel (a loop
over the nodes), a burst of autoscaler consolidations or an upgrade from evicting every
replica together. A budget with maxUnavailable: 1 makes every voluntary disruption wait for
the replacement before taking the next pod.`,
		Workload: noBudget,
	},
	{
		ID: "HF003", Name: "budget-matches-nothing", Severity: Warning,
		Summary: "PodDisruptionBudget selector matches no pod",
		Rationale: `A PodDisruptionBudget protects only the pods its selector matches in its own
namespace. A selector with a typo, labels that changed, an invalid expression or the wrong
namespace protects nothing, and the workload it was written for can be evicted freely. In
policy/v1 an empty selector matches every pod of the namespace; in the retired
policy/v1beta1 it matched none.`,
		Budget: budgetMatchesNothing,
	},
	{
		ID: "HF004", Name: "overlapping-budgets", Severity: Error,
		Summary: "two PodDisruptionBudgets select the same pod",
		Rationale: `The Eviction API refuses to evict a pod covered by more than one
PodDisruptionBudget: it answers 500 "This pod has more than one PodDisruptionBudget, which
the eviction subresource does not support". Every drain of a node running such a pod fails
until one of the budgets is removed or narrowed.`,
		Budget: overlappingBudgets,
	},
	{
		ID: "HF005", Name: "budget-uncomputable", Severity: Error,
		Summary: "maxUnavailable or a percentage over pods without a scalable controller",
		Rationale: `For maxUnavailable and percentage minAvailable, the disruption controller needs
the scale of every covered pod's controller. DaemonSets have no scale subresource, and bare
pods have no controller: the controller cannot compute the budget, sets disruptionsAllowed
to 0 (with a SyncFailed condition for DaemonSets) and every eviction is refused. Only an
integer minAvailable works for them, and it must follow the pod count (holdfast's
NodeCompanion and DisruptionPolicy keep it so).`,
		Budget: budgetUncomputable,
	},
	{
		ID: "HF006", Name: "no-spread", Severity: Warning,
		Summary: "replicas with nothing spreading them across nodes",
		Rationale: `The scheduler scores nodes; it does not promise to spread replicas. After a node
is replaced, the new idle node scores best and every replica can land on it (replicas
packed on one node); its drain or crash then takes the whole service down. A topology spread constraint on
kubernetes.io/hostname with whenUnsatisfiable: DoNotSchedule (or required pod anti-affinity)
keeps replicas on different nodes.`,
		Workload: noSpread,
	},
	{
		ID: "HF007", Name: "preferred-spread-only", Severity: Info,
		Summary: "spread across nodes is only preferred",
		Rationale: `preferredDuringSchedulingIgnoredDuringExecution anti-affinity and
whenUnsatisfiable: ScheduleAnyway are scores the scheduler trades against resource balance:
on a cluster with one idle node all replicas can still land together on it. Use
DoNotSchedule, or required anti-affinity when there are always more nodes than replicas.`,
		Workload: preferredSpreadOnly,
	},
	{
		ID: "HF008", Name: "concentrated-on-node", Severity: Warning, LiveOnly: true,
		Summary: "more than half of the replicas run on one node",
		Rationale: `Kubernetes never moves running pods to rebalance. After a node loss or a
drain, replicas pile onto the remaining nodes and stay there; a node-by-node
upgrade then loses most of the capacity at once (2 of 3 replicas on one node means 2/3
lost). Spread constraints act only at scheduling: restart the rollout once the
constraint is in place, or opt the workload into holdfast's rebalancing.`,
		Workload: concentratedOnNode,
	},
	{
		ID: "HF009", Name: "concentrated-in-zone", Severity: Warning, LiveOnly: true,
		Summary: "every replica runs in one zone of a multi-zone cluster",
		Rationale: `A zone outage, or a zonal upgrade, takes down every replica at once when they
all run in one zone, although the cluster has others. Spread over
topology.kubernetes.io/zone, then restart the rollout to move existing pods.`,
		Workload: concentratedInZone,
	},
	{
		ID: "HF010", Name: "surge-with-one-per-node", Severity: Warning,
		Summary: "one-per-node anti-affinity with a rollout that surges",
		Rationale: `With required pod anti-affinity on kubernetes.io/hostname, at most one replica
runs per node. When replicas reach the number of eligible nodes, the extra pod a surging
rollout creates (maxSurge > 0, and the default is 25%) has no node to go to: it stays
Pending and the rollout hangs. Roll one node at a time instead: maxSurge 0,
maxUnavailable 1.`,
		Workload: surgeWithOnePerNode,
	},
	{
		ID: "HF011", Name: "no-readiness-probe", Severity: Warning,
		Summary: "container without a readiness probe",
		Rationale: `Without a readiness probe a pod is Ready as soon as its containers start. During a
drain or upgrade the budget counts the replacement as healthy before it can serve and lets
the next pod go, and Services send it traffic too early: a probe is how Kubernetes knows a pod
serves.`,
		Workload: noReadinessProbe,
	},
	{
		ID: "HF012", Name: "no-liveness-probe", Severity: Info,
		Summary: "container without a liveness probe",
		Rationale: `Without a liveness probe a hung process is never restarted: the pod keeps
running, and may keep counting as healthy in its budget, while serving errors.`,
		Workload: noLivenessProbe,
	},
	{
		ID: "HF013", Name: "single-replica-no-strategy", Severity: Warning,
		Summary: "single replica with no strategy for disruptions",
		Rationale: `A single replica goes down on every drain, upgrade and autoscaler consolidation:
the eviction kills it before the replacement is Ready. Either run two
replicas with a budget of maxUnavailable 1, or declare that it must not be disrupted
(karpenter.sh/do-not-disrupt: "true" on the pod template, or a holdfast DisruptionPolicy),
and plan its moves.`,
		Workload: singleReplicaNoStrategy,
	},
	{
		ID: "HF014", Name: "budget-above-hpa-minimum", Severity: Error,
		Summary: "PodDisruptionBudget minAvailable not below the HPA's minReplicas",
		Rationale: `A HorizontalPodAutoscaler scales the workload down to minReplicas when traffic is
low. A budget that requires that many healthy pods (or more) then allows no disruption, and
drains block exactly when the cluster is quiet enough to do maintenance.`,
		Budget: budgetAboveHPAMinimum,
	},
	{
		ID: "HF015", Name: "critical-daemonset-unprotected", Severity: Warning,
		Summary: "critical DaemonSet that drains may take down everywhere at once",
		Rationale: `Managed drains run with --ignore-daemonsets: DaemonSet pods are not evicted
through the Eviction API and no PodDisruptionBudget stops them going down on every drained
node together: DaemonSet pods no budget protects. For a DaemonSet marked holdfast.dev/critical: "true", run a
holdfast NodeCompanion next to it: one pod per node, owned by a Deployment with a budget of
maxUnavailable 1, so that drains take its nodes one at a time.`,
		Workload: criticalDaemonSetUnprotected,
	},
	{
		ID: "HF016", Name: "budget-blocked-now", Severity: Warning, LiveOnly: true,
		Summary: "PodDisruptionBudget allows no disruption right now",
		Rationale: `A budget can allow disruptions in principle and none at the moment: pods are
unready, pending or being replaced. Every drain touching its pods waits until they recover.
Unready pods also stay unevictable under the default unhealthyPodEvictionPolicy
IfHealthyBudget, so a crash-looping pod can hold a drain; AlwaysAllow lets it go.`,
		Budget: budgetBlockedNow,
	},
	{
		ID: "HF017", Name: "budget-status-stale", Severity: Error, LiveOnly: true,
		Summary: "PodDisruptionBudget status is stale or failed to sync",
		Rationale: `The Eviction API trusts the budget's status. When the status is older than the
spec (observedGeneration behind generation) it refuses every eviction as "still being
processed"; when the disruption controller could not compute it (condition DisruptionAllowed
False, reason SyncFailed) it keeps disruptionsAllowed at 0. Either way no pod of the budget
can be evicted until the cause is fixed.`,
		Budget: budgetStatusStale,
	},
	{
		ID: "HF018", Name: "invalid-maintenance-window", Severity: Error,
		Summary: "DisruptionPolicy maintenance window that cannot be read",
		Rationale: `A maintenance window is a cron schedule, a duration and a time zone. A schedule
that is not a standard five-field cron expression, or a time zone that is not an IANA name,
cannot be evaluated: such a window never opens (it fails closed, since a disruption at a
forbidden hour cannot be undone while a held drain resumes once the window is fixed). Outside
the policy's other windows its budgets allow no voluntary disruption, so drains, upgrades and
consolidation wait; the operator reports WindowOpen InvalidWindow, a Warning Event and
holdfast_disruptionpolicy_invalid_windows.`,
		Own: invalidWindow,
	},
	{
		ID: "HF019", Name: "policy-selects-nothing", Severity: Warning,
		Summary: "DisruptionPolicy that selects no workload",
		Rationale: `A DisruptionPolicy protects only the workloads its selector and kinds pick in its
namespace. One that picks none (a typo in a label, the wrong namespace, an invalid
selector) makes no budget, and the workloads it was written for drain unprotected while the
policy looks in place.`,
		Own: policySelectsNothing,
	},
	{
		ID: "HF020", Name: "policy-overridden", Severity: Warning,
		Summary: "DisruptionPolicy whose every workload is managed by another policy",
		Rationale: `When two DisruptionPolicies select one workload, one manages its budget: the
namespace's own before a ClusterDisruptionPolicy's copy, then the older, then the first by
name. A policy that loses every workload it selects has no effect at all: its budgets,
single-replica strategy, windows and pacing apply to nothing.`,
		Own: policyOverridden,
	},
	{
		ID: "HF021", Name: "companion-daemonset-missing", Severity: Warning,
		Summary: "NodeCompanion whose DaemonSet is missing",
		Rationale: `A NodeCompanion runs one pod next to every pod of its DaemonSet and keeps its
budget, so that drains take its nodes one at a time. When the DaemonSet it names does not exist (a typo, another namespace,
not applied yet), the operator cannot tell the eligible nodes: it leaves the companions as
they are and reports TargetNotFound, so new nodes get none. From manifests the DaemonSet may
simply be in a file not given: pass it too.`,
		Own: companionDaemonSetMissing,
	},
	{
		ID: "HF022", Name: "budget-without-floor", Severity: Error,
		Summary: "PodDisruptionBudget with neither minAvailable nor maxUnavailable",
		Rationale: `A PodDisruptionBudget says how many of its pods may go with minAvailable or
maxUnavailable. With neither (often a typo such as minAvaliable, which kubectl and the API
server drop as an unknown field) the disruption controller expects no pod and writes
disruptionsAllowed 0: the Eviction API refuses every eviction of the pods it selects, and
every drain, upgrade or autoscaler consolidation of their nodes blocks forever, as with a
budget that never allows (the single-replica drain deadlock). Set maxUnavailable: 1.`,
		Budget: budgetWithoutFloor,
	},
	{
		ID: "HF023", Name: "long-unreachable-toleration", Severity: Warning,
		Summary: "pods tolerate an unreachable node for longer than the default 300 s",
		Rationale: `When a node dies, the node-lifecycle controller marks it unreachable after 50 s and
evicts its pods once their toleration of node.kubernetes.io/unreachable runs out: 300 s,
which the API server gives every pod that sets none. A longer tolerationSeconds, or a
toleration without one, keeps the pods bound to the dead node that much longer, or until
it returns, and their replacements wait as long: a crashed node then costs minutes, or more.
Drop the toleration or shorten it; holdfast's DisruptionPolicy adds replicas for a lost
node's pods after 30 s whatever they tolerate.`,
		Workload: longUnreachableToleration,
	},
	{
		ID: "HF024", Name: "stuck-on-node-loss", Severity: Info,
		Summary: "StatefulSet whose pods on a dead node are never replaced",
		Rationale: `Kubernetes never starts a StatefulSet's pod elsewhere while the old one may
still run: two pods of one identity could both write its data. A pod on a node that died
stays Terminating until someone deletes the Node, force-deletes the pod, or taints the
node node.kubernetes.io/out-of-service (non-graceful node shutdown), and the StatefulSet
runs one short meanwhile. holdfast's DisruptionPolicy with nodeFailure.fencing: Verified
applies that taint once the node is proven down: its Karpenter NodeClaim gone, the
holdfast.dev/node-down annotation an agent sets after checking the machine, or
fenceAfter.`,
		Workload: stuckOnNodeLoss,
	},
	{
		ID: "HF025", Name: "single-replica-no-failure-response", Severity: Warning,
		Summary: "single replica whose DisruptionPolicy leaves a node's crash to Kubernetes",
		Rationale: `A single replica is down from its node's crash until Kubernetes replaces it:
50 s before the node is marked unreachable and 300 s of toleration, about six minutes.
nodeFailure.surge: Never turns off holdfast's response, which starts an extra pod beside
the Deployment 30 s after the node's last Lease renewal, without touching the first.`,
		Workload: singleReplicaNoFailureResponse,
	},
	{
		ID: "HF026", Name: "cross-zone-double-disruption", Severity: Warning,
		Summary: "StatefulSet spread over zones whose budget lets two zones lose a pod at once",
		Rationale: `A quorum system spread over zones (one copy of its data per zone: etcd,
ZooKeeper, Kafka, Cassandra) survives losing any number of pods in one zone, not one pod
in each of two. A PodDisruptionBudget cannot say so: with maxUnavailable 2 or more, two
drains in two zones (or a drain and an autoscaler's consolidation) each take a pod and a
majority is lost; with maxUnavailable 1, maintenance goes one pod at a time. A
DisruptionPolicy with zoneAware lets one zone at a time lose up to its limit and holds
every other zone at zero, in budgets every disruptor reads.`,
		Workload: crossZoneDoubleDisruption,
	},
	{
		ID: "HF027", Name: "zone-aware-workload-per-zone", Severity: Warning,
		Summary: "zone-aware DisruptionPolicy over one workload per zone, which it cannot hold against each other",
		Rationale: `Some quorum systems run one StatefulSet per zone (ingester-zone-a,
ingester-zone-b, ...). holdfast's zone-aware budgets are per workload: they hold the other
zones of one workload's pods, and a workload that runs in a single zone has no other zone
to hold. Each workload's budget then lets its own zone be disrupted up to the per-zone
limit, whatever the other workloads' zones are doing: two drains in two zones take pods of
two copies at once. Until holdfast groups such workloads, one PodDisruptionBudget over
all of their pods at maxUnavailable 1 (the workloads left out of the zone-aware policy)
keeps every disruption to one pod at a time.`,
		Workload: zoneAwareWorkloadPerZone,
	},
	{
		ID: "HF028", Name: "single-replica-handed-off", Severity: Info,
		Summary: "Surge single replica the operator surges ahead of an autoscaler's scale-down",
		Rationale: `Karpenter's consolidation and cluster-autoscaler's scale-down take a node only when
every pod on it may be evicted, so a single replica's budget keeps its node for good.
Under singleReplica: Surge the operator hands such a node over: once the autoscaler may
want it (Karpenter: its NodeClaim is Consolidatable and its NodePool consolidates
WhenEmptyOrUnderutilized; cluster-autoscaler: it is in one of the node groups that
--cluster-autoscaler-node-group-label names), its pods request at most
--scale-down-utilization-threshold of it and nothing keeps the autoscaler off it, the
operator starts an extra pod beside the Deployment so that the budget lets the old pod
go. The finding names the Deployments the operator surges now and the nodes it hands over; plan and audit take
the operator's autoscaler flags to see cluster-autoscaler's node groups as it does.`,
		Own: handedOff,
	},
}

func describe(w *availability.Workload) string { return w.Kind + " " + w.Name }

// zoneAwareWorkloadPerZone flags a workload under a zone-aware policy that runs in one
// zone while another workload of the policy runs in another.
func zoneAwareWorkloadPerZone(m *availability.Model, w *availability.Workload) *Result {
	p := policy.Managing(m.DisruptionPolicies, w.Object)
	if p == nil || p.Spec.ZoneAware == nil || !policy.ZoneAware(p, &policy.Workload{Kind: w.Kind}) {
		return nil
	}
	zone := soleZone(m, p.Spec.ZoneAware, w)
	if zone == "" {
		return nil
	}
	var others []string
	common := maps.Clone(podLabels(w))
	for _, o := range m.Workloads {
		if o == w || o.Namespace != w.Namespace || !policy.ZoneAware(p, &policy.Workload{Kind: o.Kind}) {
			continue
		}
		if q := policy.Managing(m.DisruptionPolicies, o.Object); q == nil || q.Name != p.Name {
			continue
		}
		if z := soleZone(m, p.Spec.ZoneAware, o); z != "" && z != zone {
			others = append(others, fmt.Sprintf("%s (zone %s)", describe(o), z))
			maps.DeleteFunc(common, func(k, v string) bool { return podLabels(o)[k] != v })
		}
	}
	if len(others) == 0 {
		return nil
	}
	r := &Result{Message: fmt.Sprintf("%s runs in zone %s only, and DisruptionPolicy %s also manages %s: its zone-aware budgets are per workload, so each lets its own zone lose up to the per-zone limit while another zone loses pods too.",
		describe(w), zone, p.Name, strings.Join(others, ", "))}
	if len(common) > 0 {
		r.Fix = snippet(fmt.Sprintf("one pod at a time over every zone's pods; leave these workloads out of DisruptionPolicy %s", p.Name), obj{
			"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
			// Named after the policy: every workload's finding gives the same budget.
			"metadata": obj{"name": p.Name + "-zones", "namespace": w.Namespace},
			"spec":     obj{"selector": obj{"matchLabels": common}, "maxUnavailable": 1},
		})
	}
	return r
}

// soleZone is the one zone where w's pods run, as za counts them (from manifests, the
// zone its template pins them to); "" when they run in several, or none is known.
func soleZone(m *availability.Model, za *holdfastv1alpha1.ZoneAwareSpec, w *availability.Workload) string {
	if w.Projected {
		return policy.TemplateZone(za, w.Template)
	}
	zone := ""
	for _, member := range w.Members {
		n, ok := m.Node(member.NodeName)
		if !ok || member.Terminating {
			continue
		}
		z := policy.NodeZone(za, n.Node)
		if z == "" || zone != "" && z != zone {
			return ""
		}
		zone = z
	}
	return zone
}

// snippet renders a fix as YAML under a comment naming what to edit.
func snippet(comment string, v any) string {
	var b strings.Builder
	b.WriteString("# " + comment + "\n")
	renderYAML(&b, v, 0)
	return strings.TrimSuffix(b.String(), "\n")
}

type obj = map[string]any

// podLabels are the labels that pick the workload's pods in a fix: its own selector when
// it is plain matchLabels, else its template's labels.
func podLabels(w *availability.Workload) map[string]string {
	if s := w.LabelSelector; s != nil && len(s.MatchExpressions) == 0 && len(s.MatchLabels) > 0 {
		return s.MatchLabels
	}
	l := maps.Clone(w.Template.Labels)
	delete(l, appsv1.DefaultDeploymentUniqueLabelKey)
	return l
}

func budgetFix(w *availability.Workload) string {
	return snippet("add a PodDisruptionBudget that lets one pod go at a time", obj{
		"apiVersion": "policy/v1",
		"kind":       "PodDisruptionBudget",
		"metadata":   obj{"name": w.Name, "namespace": w.Namespace},
		"spec":       obj{"maxUnavailable": 1, "selector": obj{"matchLabels": podLabels(w)}},
	})
}

func spreadFix(w *availability.Workload, comment string) string {
	return snippet(comment, obj{"spec": obj{"template": obj{"spec": obj{
		"topologySpreadConstraints": []obj{
			{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
				"labelSelector": obj{"matchLabels": podLabels(w)}},
			{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
				"labelSelector": obj{"matchLabels": podLabels(w)}},
		},
	}}}})
}

func workloadNames(ws []*availability.Workload) string {
	names := make([]string, len(ws))
	for i, w := range ws {
		names[i] = describe(w)
	}
	return strings.Join(names, ", ")
}

// covered is the pods a budget covers when every controller is at its scale.
func covered(b *availability.Budget) int32 {
	var n int32
	for _, m := range b.Members {
		n += m.Count
	}
	return n
}

// verdict is the eviction oracle's answer for a ready pod of b, on which the rules about
// one budget's refusals switch.
func verdict(b *availability.Budget) availability.Reason {
	c := b.Count()
	return c.Verdict().Reason
}

func budgetNeverAllows(_ *availability.Model, b *availability.Budget) *Result {
	if r := verdict(b); len(b.Members) == 0 || r != availability.ReasonBudgetNeverAllows && r != availability.ReasonSingleReplicaBudget {
		return nil
	}
	res := &Result{Message: fmt.Sprintf("PodDisruptionBudget %s (%s) requires %d of its %s to stay healthy, so it allows no eviction even when every pod is ready: every drain, upgrade or autoscaler consolidation of a node running %s blocks forever.",
		b.Name, availability.BudgetSpec(b.PDB), b.Status.DesiredHealthy, policy.Plural(b.Status.ExpectedPods, "pod"), workloadNames(b.Workloads))}
	fixBudget := obj{"spec": obj{"maxUnavailable": 1, "minAvailable": nil}}
	res.Fix = snippet(fmt.Sprintf("PodDisruptionBudget %s: replace %s with maxUnavailable: 1", b.Name, availability.BudgetSpec(b.PDB)), fixBudget)
	if covered(b) < 2 {
		res.Fix += "\n---\n" + snippet("and run a second replica so that a drain leaves one serving", obj{"spec": obj{"replicas": 2}})
	}
	return res
}

func budgetWithoutFloor(_ *availability.Model, b *availability.Budget) *Result {
	if b.PDB.Spec.MinAvailable != nil || b.PDB.Spec.MaxUnavailable != nil || b.Policy() != "" {
		return nil
	}
	pods := "the pods it selects"
	if len(b.Workloads) > 0 {
		pods = "the pods of " + workloadNames(b.Workloads)
	}
	return &Result{
		Message: fmt.Sprintf("PodDisruptionBudget %s sets neither minAvailable nor maxUnavailable: the disruption controller expects none of its pods and allows 0 disruptions, so every eviction of %s is refused and every drain of their nodes blocks forever.", b.Name, pods),
		Fix:     snippet(fmt.Sprintf("PodDisruptionBudget %s: say how many pods may go at once (check the spelling of the field)", b.Name), obj{"spec": obj{"maxUnavailable": 1}}),
	}
}

func noBudget(_ *availability.Model, w *availability.Workload) *Result {
	if w.Kind == snapshot.KindDaemonSet || w.Desired < 2 || len(w.Budgets) > 0 {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("%s runs %d replicas and no PodDisruptionBudget covers them: draining several nodes at once (a kubectl drain loop, a cluster upgrade, autoscaler consolidation) can evict all of them together.", describe(w), w.Desired),
		Fix:     budgetFix(w),
	}
}

func budgetMatchesNothing(m *availability.Model, b *availability.Budget) *Result {
	if len(b.Members) > 0 {
		return nil
	}
	var why string
	switch {
	case b.SelectorErr != nil:
		why = fmt.Sprintf("has an invalid selector (%v)", b.SelectorErr)
	case b.PDB.Spec.Selector == nil:
		why = "has no selector"
	case m.Source == snapshot.SourceLive:
		why = fmt.Sprintf("selects %q and no pod in namespace %s has those labels", b.Selector.String(), b.Namespace)
	default:
		why = fmt.Sprintf("selects %q and no workload of namespace %s in the manifests has those labels", b.Selector.String(), b.Namespace)
	}
	res := &Result{Message: fmt.Sprintf("PodDisruptionBudget %s %s: it protects nothing, so the pods it was written for can all be evicted at once.", b.Name, why)}
	// Point at the one unprotected workload of the namespace when there is exactly one.
	var orphans []*availability.Workload
	for _, w := range m.Workloads {
		if w.Namespace == b.Namespace && len(w.Budgets) == 0 && w.Kind != snapshot.KindDaemonSet {
			orphans = append(orphans, w)
		}
	}
	if len(orphans) == 1 {
		res.Fix = snippet(fmt.Sprintf("PodDisruptionBudget %s: select the pods of %s", b.Name, describe(orphans[0])),
			obj{"spec": obj{"selector": obj{"matchLabels": podLabels(orphans[0])}}})
	} else {
		res.Fix = snippet(fmt.Sprintf("PodDisruptionBudget %s: select the labels of the pods to protect (kubectl get pods -n %s --show-labels)", b.Name, b.Namespace),
			obj{"spec": obj{"selector": obj{"matchLabels": obj{"app": "<app>"}}}})
	}
	return res
}

func overlappingBudgets(_ *availability.Model, b *availability.Budget) *Result {
	shared := map[*availability.Budget]int32{}
	example := map[*availability.Budget]string{}
	for _, p := range b.Members {
		for _, o := range p.Budgets {
			// Report each pair once, on the budget that sorts first.
			if o == b || o.Name < b.Name {
				continue
			}
			shared[o] += p.Count
			if _, ok := example[o]; !ok {
				example[o] = p.Name
			}
		}
	}
	if len(shared) == 0 {
		return nil
	}
	others := slices.SortedFunc(maps.Keys(shared), func(x, y *availability.Budget) int { return strings.Compare(x.Name, y.Name) })
	var parts []string
	for _, o := range others {
		parts = append(parts, fmt.Sprintf("%s (%s, e.g. %s)", o.Name, policy.Plural(shared[o], "pod"), example[o]))
	}
	return &Result{
		Message: fmt.Sprintf("PodDisruptionBudget %s covers the same pods as %s: the Eviction API answers 500 for a pod with more than one budget, so every drain of their nodes fails.", b.Name, strings.Join(parts, ", ")),
		Fix: snippet(fmt.Sprintf("keep one budget per pod: delete %s, or narrow the selectors so they no longer overlap", others[0].Name),
			obj{"spec": obj{"selector": obj{"matchLabels": b.PDB.Spec.Selector.MatchLabels}}}),
	}
}

func budgetUncomputable(_ *availability.Model, b *availability.Budget) *Result {
	unmanaged := b.UsesScale() && len(b.UnmanagedPods) > 0
	if b.SelectorErr != nil || (b.SyncError == "" && !unmanaged) {
		return nil
	}
	var over, cause string
	switch {
	case b.SyncError != "":
		over, cause = workloadNames(b.Workloads), b.SyncError
		if over == "" {
			over = "its pods"
		}
	default:
		over = "pods with no controller (" + strings.Join(firstN(b.UnmanagedPods, 3), ", ") + ")"
		cause = "pods without a controller have no scale to count"
	}
	res := &Result{Message: fmt.Sprintf("PodDisruptionBudget %s uses %s over %s, which the disruption controller cannot compute (%s): it keeps disruptionsAllowed at 0 and every eviction of these pods is refused.",
		b.Name, availability.BudgetSpec(b.PDB), over, cause)}
	floor := any("<number of pods - 1>")
	if n := covered(b); n >= 2 {
		floor = n - 1
	}
	res.Fix = snippet(fmt.Sprintf("PodDisruptionBudget %s: an integer minAvailable, the only form computed for DaemonSet and bare pods; keep it one below the pod count as nodes come and go (a holdfast DisruptionPolicy does)", b.Name),
		obj{"spec": obj{"maxUnavailable": nil, "minAvailable": floor}})
	return res
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}

func noSpread(_ *availability.Model, w *availability.Workload) *Result {
	if w.Kind == snapshot.KindDaemonSet || w.Desired < 2 || w.Facts.NodeSpread != availability.SpreadNone {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("%s runs %d replicas with nothing spreading them across nodes: the scheduler may put them all on one node (a fresh idle node scores best), and that node's drain or crash takes the whole service down.", describe(w), w.Desired),
		Fix:     spreadFix(w, describe(w)+": keep replicas on different nodes, and prefer different zones"),
	}
}

func preferredSpreadOnly(_ *availability.Model, w *availability.Workload) *Result {
	if w.Kind == snapshot.KindDaemonSet || w.Desired < 2 || w.Facts.NodeSpread != availability.SpreadPreferred {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("%s spreads its %d replicas across nodes only as a preference (preferred anti-affinity or ScheduleAnyway): when nodes are busy the scheduler trades it away and all of them can land on one node.", describe(w), w.Desired),
		Fix:     spreadFix(w, describe(w)+": make the spread across nodes a requirement"),
	}
}

func concentratedOnNode(m *availability.Model, w *availability.Workload) *Result {
	p := w.Placement
	if len(m.Nodes) < 2 || p.Scheduled < 2 || p.OnBusiestNode*2 <= p.Scheduled {
		return nil
	}
	loss := "more than half of its capacity"
	if p.OnBusiestNode == p.Scheduled {
		loss = "the whole service"
	}
	res := &Result{Message: fmt.Sprintf("%d of the %d running pods of %s are on node %s: draining, upgrading or losing that node takes down %s at once.",
		p.OnBusiestNode, p.Scheduled, describe(w), p.BusiestNode, loss)}
	restart := fmt.Sprintf("then move the pods: kubectl rollout restart %s/%s -n %s", strings.ToLower(w.Kind), w.Name, w.Namespace)
	if w.Facts.NodeSpread == availability.SpreadRequired {
		res.Fix = "# " + restart
	} else {
		res.Fix = spreadFix(w, describe(w)+": require spread across nodes, "+restart)
	}
	return res
}

func concentratedInZone(m *availability.Model, w *availability.Workload) *Result {
	p := w.Placement
	zones := m.Zones()
	if len(zones) < 2 || p.Scheduled < 2 || p.InBusiestZone < p.Scheduled {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("all %d running pods of %s are in zone %s of a cluster with %d zones: an outage or upgrade of that zone takes the whole service down.", p.Scheduled, describe(w), p.BusiestZone, len(zones)),
		Fix: snippet(fmt.Sprintf("%s: spread across zones, then kubectl rollout restart %s/%s -n %s", describe(w), strings.ToLower(w.Kind), w.Name, w.Namespace),
			obj{"spec": obj{"template": obj{"spec": obj{"topologySpreadConstraints": []obj{
				{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
					"labelSelector": obj{"matchLabels": podLabels(w)}},
			}}}}}),
	}
}

func surgeWithOnePerNode(m *availability.Model, w *availability.Workload) *Result {
	if w.Kind != snapshot.KindDeployment || !w.Facts.OnePerNode || w.Facts.Strategy.MaxSurge == 0 || w.Desired < 1 {
		return nil
	}
	eligible := m.EligibleNodes(w.Template)
	var nodes string
	switch {
	case eligible < 0:
		nodes = fmt.Sprintf("on a cluster with %d or fewer eligible nodes", w.Desired)
	case int(w.Desired) >= eligible:
		nodes = fmt.Sprintf("and %s fit on the %s", policy.Plural(w.Desired, "replica"), policy.Plural(int32(eligible), "eligible node"))
	default:
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("%s allows one pod per node (required anti-affinity on kubernetes.io/hostname) and its rollout surges %s, %s: the surge pod has no node to go to, stays Pending, and the rollout hangs.",
			describe(w), policy.Plural(w.Facts.Strategy.MaxSurge, "extra pod"), nodes),
		Fix: snippet(describe(w)+": replace one pod at a time instead of surging",
			obj{"spec": obj{"strategy": obj{"type": "RollingUpdate", "rollingUpdate": obj{"maxSurge": 0, "maxUnavailable": 1}}}}),
	}
}

func probeFix(w *availability.Workload, containers []string, field string) string {
	var list []obj
	for _, name := range containers {
		probe := obj{"periodSeconds": 5}
		if port := firstPort(w, name); port > 0 {
			probe["tcpSocket"] = obj{"port": port}
		} else {
			probe["exec"] = obj{"command": []string{"<command that succeeds when the container is healthy>"}}
		}
		list = append(list, obj{"name": name, field: probe})
	}
	return snippet(fmt.Sprintf("%s: add a %s (an httpGet on a health endpoint is better when there is one)", describe(w), field),
		obj{"spec": obj{"template": obj{"spec": obj{"containers": list}}}})
}

func firstPort(w *availability.Workload, container string) int32 {
	for _, c := range w.Template.Spec.Containers {
		if c.Name == container && len(c.Ports) > 0 {
			return c.Ports[0].ContainerPort
		}
	}
	return 0
}

func noReadinessProbe(_ *availability.Model, w *availability.Workload) *Result {
	if len(w.Facts.NoReadiness) == 0 {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("%s: container %s has no readinessProbe, so a replacement pod counts as ready the moment it starts: during a drain or rollout the budget lets the next pod go before the new one can serve.",
			describe(w), strings.Join(w.Facts.NoReadiness, ", ")),
		Fix: probeFix(w, w.Facts.NoReadiness, "readinessProbe"),
	}
}

func noLivenessProbe(_ *availability.Model, w *availability.Workload) *Result {
	if len(w.Facts.NoLiveness) == 0 {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("%s: container %s has no livenessProbe, so a hung process is never restarted and keeps its pod in service while it fails.",
			describe(w), strings.Join(w.Facts.NoLiveness, ", ")),
		Fix: probeFix(w, w.Facts.NoLiveness, "livenessProbe"),
	}
}

func singleReplicaNoStrategy(_ *availability.Model, w *availability.Workload) *Result {
	if w.Kind == snapshot.KindDaemonSet || w.Desired != 1 || w.Facts.DoNotDisrupt {
		return nil
	}
	if w.HPA != nil && w.HPA.Spec.MinReplicas != nil && *w.HPA.Spec.MinReplicas >= 2 {
		return nil
	}
	for _, b := range w.Budgets {
		if b.Policy() != "" {
			return nil // the DisruptionPolicy's single-replica strategy is its strategy
		}
	}
	return &Result{
		Message: fmt.Sprintf("%s runs a single replica and declares no strategy for disruptions: every drain, upgrade or autoscaler consolidation of its node takes it down until the replacement is ready.%s", describe(w), autoscalerNotes(w.Facts)),
		Fix: snippet(describe(w)+": run two replicas (and add a PodDisruptionBudget with maxUnavailable: 1)", obj{"spec": obj{"replicas": 2}}) +
			"\n---\n" + snippet("or, if it must stay single, tell autoscalers not to disrupt it and move it yourself",
			obj{"spec": obj{"template": obj{"metadata": obj{"annotations": obj{availability.AnnotationKarpenterDoNotDisrupt: "true"}}}}}) +
			"\n---\n" + snippet("or let holdfast start a second replica before each drain of its node",
			obj{"apiVersion": "holdfast.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": obj{"name": "defaults", "namespace": w.Namespace},
				"spec": obj{"selector": obj{}, "maxUnavailable": 1, "singleReplica": "Surge"}}),
	}
}

// autoscalerNotes says what a template's autoscaler annotations do and do not do, as
// Karpenter and cluster-autoscaler read them, for a single replica they leave exposed.
func autoscalerNotes(f availability.TemplateFacts) string {
	var notes []string
	if f.DoNotDisruptFor > 0 {
		notes = append(notes, fmt.Sprintf(" karpenter.sh/do-not-disrupt: %s keeps Karpenter off each pod's node only for the pod's first %s.", f.DoNotDisruptFor, f.DoNotDisruptFor))
	}
	if f.DoNotEvict {
		notes = append(notes, " karpenter.sh/do-not-evict is ignored since Karpenter v1: it was renamed karpenter.sh/do-not-disrupt.")
	}
	if f.NotSafeToEvict {
		notes = append(notes, " cluster-autoscaler.kubernetes.io/safe-to-evict: \"false\" keeps only cluster-autoscaler from scaling its node down: Karpenter and drains still evict it.")
	}
	return strings.Join(notes, "")
}

func budgetAboveHPAMinimum(_ *availability.Model, b *availability.Budget) *Result {
	minAvailable := b.PDB.Spec.MinAvailable
	if minAvailable == nil {
		return nil
	}
	switch verdict(b) {
	case availability.ReasonBudgetNeverAllows, availability.ReasonSingleReplicaBudget, availability.ReasonPolicyHeld, availability.ReasonBudgetUncomputable:
		return nil // the budget blocks at every size: reported as that
	}
	var atMinimum int32
	var hpa *availability.Workload
	for _, w := range b.Workloads {
		n := w.Desired
		if w.HPA != nil {
			n = 1
			if w.HPA.Spec.MinReplicas != nil {
				n = *w.HPA.Spec.MinReplicas
			}
			hpa = w
		}
		atMinimum += n
	}
	if hpa == nil {
		return nil
	}
	desired, err := availability.DesiredHealthy(policyv1.PodDisruptionBudgetSpec{MinAvailable: minAvailable}, atMinimum)
	if err != nil || desired < atMinimum {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("PodDisruptionBudget %s requires %d healthy pods (minAvailable: %s) but HorizontalPodAutoscaler %s scales %s down to %s: whenever traffic is low the budget allows no eviction and drains block.",
			b.Name, desired, minAvailable.String(), hpa.HPA.Name, describe(hpa), policy.Plural(atMinimum, "replica")),
		Fix: snippet(fmt.Sprintf("PodDisruptionBudget %s: a floor that follows the scale", b.Name), obj{"spec": obj{"maxUnavailable": 1, "minAvailable": nil}}),
	}
}

func criticalDaemonSetUnprotected(_ *availability.Model, w *availability.Workload) *Result {
	if w.Kind != snapshot.KindDaemonSet || !w.Facts.Critical || w.Companion {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("%s is marked critical but drains run with --ignore-daemonsets: no budget stops its pods going down on every drained node at once, and no NodeCompanion guards its nodes.", describe(w)),
		Fix: snippet("add a NodeCompanion: one pod per node of the DaemonSet, drained one node at a time", obj{
			"apiVersion": "holdfast.dev/v1alpha1",
			"kind":       "NodeCompanion",
			"metadata":   obj{"name": w.Name + "-companion", "namespace": w.Namespace},
			"spec": obj{
				"daemonSet":      obj{"name": w.Name},
				"maxUnavailable": 1,
				"template":       obj{"spec": obj{"containers": []obj{{"name": "guard", "image": "<image that reports whether the node's data is safe>"}}}},
			},
		}),
	}
}

func budgetBlockedNow(_ *availability.Model, b *availability.Budget) *Result {
	if len(b.Members) == 0 || b.Status.ExpectedPods <= 0 || verdict(b) != availability.ReasonBudgetExhausted {
		return nil
	}
	var unready []string
	for _, p := range b.Members {
		if p.Pod != nil && !p.Ready {
			unready = append(unready, p.Name)
		}
	}
	res := &Result{Message: fmt.Sprintf("PodDisruptionBudget %s allows no eviction right now: it needs %s and has %d",
		b.Name, policy.Plural(b.Status.DesiredHealthy, "healthy pod"), b.Status.CurrentHealthy)}
	if len(unready) > 0 {
		res.Message += " (not ready: " + strings.Join(firstN(unready, 3), ", ") + ")"
	}
	res.Message += "; every drain of a node running its pods waits until they recover."
	policy := b.PDB.Spec.UnhealthyPodEvictionPolicy
	if len(unready) > 0 && (policy == nil || *policy != policyv1.AlwaysAllow) {
		res.Fix = snippet(fmt.Sprintf("PodDisruptionBudget %s: let drains evict pods that are not ready anyway", b.Name),
			obj{"spec": obj{"unhealthyPodEvictionPolicy": string(policyv1.AlwaysAllow)}})
	} else {
		res.Fix = fmt.Sprintf("# find why its pods are not ready: kubectl describe pods -n %s -l %s", b.Namespace, b.Selector.String())
	}
	return res
}

func budgetStatusStale(_ *availability.Model, b *availability.Budget) *Result {
	pdb := b.PDB
	if c := meta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition); c != nil &&
		c.Status == metav1.ConditionFalse && c.Reason == policyv1.SyncFailedReason {
		return &Result{
			Message: fmt.Sprintf("PodDisruptionBudget %s failed to sync (%s): the disruption controller keeps disruptionsAllowed at 0 and every eviction of its pods is refused.", b.Name, c.Message),
			Fix:     "# fix the cause above; for DaemonSet or bare pods use an integer minAvailable (see HF005)",
		}
	}
	if pdb.Status.ObservedGeneration < pdb.Generation {
		return &Result{
			Message: fmt.Sprintf("PodDisruptionBudget %s has status for generation %d but its spec is at generation %d: the Eviction API refuses every eviction of its pods until the disruption controller catches up.", b.Name, pdb.Status.ObservedGeneration, pdb.Generation),
			Fix:     "# check that kube-controller-manager runs the disruption controller: kubectl get --raw /readyz and its logs",
		}
	}
	return nil
}

// recoveryNote says how long w takes to be whole again after its node's crash, alone
// and with the policy that manages it, by the model the operator acts on.
func recoveryNote(m *availability.Model, w *availability.Workload) string {
	p := policy.Managing(m.DisruptionPolicies, w.Object)
	r := policy.RecoveryOf(p, w.Kind, policy.UnreachableToleration(w.Template), recoveryStartup, false)
	switch {
	case r.WithNever:
		return fmt.Sprintf("after its node's crash it is not whole again until the node returns (%s)", r.How)
	case r.AloneNever:
		return fmt.Sprintf("after its node's crash it is whole again in about %s with holdfast (%s), never without", r.With, r.How)
	case r.With < r.Alone:
		return fmt.Sprintf("after its node's crash it is whole again in about %s (%s; Kubernetes alone: %s)", r.With, r.How, r.Alone)
	}
	return fmt.Sprintf("after its node's crash it is whole again in about %s (%s)", r.Alone, r.How)
}

// recoveryStartup is the start-up the audit assumes for a replacement: a pod's own is
// not in manifests, and plan failure measures it on a live cluster.
const recoveryStartup = 10 * time.Second

func longUnreachableToleration(m *availability.Model, w *availability.Workload) *Result {
	tol := policy.UnreachableToleration(w.Template)
	if w.Kind == snapshot.KindDaemonSet || tol >= 0 && tol <= policy.DefaultToleration {
		return nil
	}
	how := fmt.Sprintf("for %s", tol)
	if tol < 0 {
		how = "for ever"
	}
	return &Result{
		Message: fmt.Sprintf("%s tolerates node.kubernetes.io/unreachable %s: %s.", describe(w), how, recoveryNote(m, w)),
		Fix: snippet(describe(w)+": tolerate an unreachable node no longer than the default (or drop the toleration)",
			obj{"spec": obj{"template": obj{"spec": obj{"tolerations": []obj{{"key": corev1.TaintNodeUnreachable, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}}}}}}),
	}
}

func stuckOnNodeLoss(m *availability.Model, w *availability.Workload) *Result {
	if w.Kind != snapshot.KindStatefulSet {
		return nil
	}
	p := policy.Managing(m.DisruptionPolicies, w.Object)
	if p != nil && p.Spec.NodeFailure != nil && p.Spec.NodeFailure.Fencing == holdfastv1alpha1.FencingVerified {
		return nil
	}
	ns := w.Namespace
	return &Result{
		Message: fmt.Sprintf("%s: %s, one replica short meanwhile.", describe(w), recoveryNote(m, w)),
		Fix: snippet("release its pods once their node is proven down",
			obj{"apiVersion": "holdfast.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": obj{"name": "defaults", "namespace": ns},
				"spec": obj{"selector": obj{}, "maxUnavailable": 1, "nodeFailure": obj{"fencing": "Verified"}}}),
	}
}

func singleReplicaNoFailureResponse(m *availability.Model, w *availability.Workload) *Result {
	if w.Kind != snapshot.KindDeployment || w.Desired != 1 {
		return nil
	}
	p := policy.Managing(m.DisruptionPolicies, w.Object)
	if p == nil || p.Spec.NodeFailure == nil || p.Spec.NodeFailure.Surge != holdfastv1alpha1.FailureSurgeNever {
		return nil // HF013 speaks for a single replica no policy manages
	}
	return &Result{
		Message: fmt.Sprintf("%s runs a single replica and DisruptionPolicy %s sets nodeFailure.surge: Never: %s.", describe(w), p.Name, recoveryNote(m, w)),
		Fix: snippet("let holdfast start a second replica when its node is lost",
			obj{"apiVersion": "holdfast.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": obj{"name": p.Name, "namespace": w.Namespace},
				"spec": obj{"nodeFailure": obj{"surge": "Replace"}}}),
	}
}

func crossZoneDoubleDisruption(m *availability.Model, w *availability.Workload) *Result {
	if w.Kind != snapshot.KindStatefulSet || w.Desired < 3 || len(w.Budgets) != 1 || w.Budgets[0].AtFullHealth < 2 {
		return nil
	}
	if len(w.Placement.PerZone) < 2 && (len(m.Zones()) < 2 && !w.Projected || w.Facts.ZoneSpread == availability.SpreadNone) {
		return nil
	}
	if p := policy.Managing(m.DisruptionPolicies, w.Object); p != nil && p.Spec.ZoneAware != nil {
		return nil
	}
	b := w.Budgets[0]
	return &Result{
		Message: fmt.Sprintf("%s spreads %d replicas over zones and PodDisruptionBudget %s allows %d disruptions at once, in any zones: two drains in two zones can take one pod from each, and a quorum with a copy per zone loses its majority.",
			describe(w), w.Desired, b.Name, b.AtFullHealth),
		Fix: snippet(fmt.Sprintf("%s: let one zone at a time lose up to %d pods, every other zone held (replaces %s)", describe(w), b.AtFullHealth, b.Name), obj{
			"apiVersion": "holdfast.dev/v1alpha1", "kind": "DisruptionPolicy",
			"metadata": obj{"name": w.Name + "-zones", "namespace": w.Namespace},
			"spec": obj{
				"selector": obj{"matchLabels": w.Object.GetLabels()}, "kinds": []string{"StatefulSet"}, "maxUnavailable": 1,
				"zoneAware": obj{"maxUnavailable": b.AtFullHealth},
			},
		}),
	}
}
