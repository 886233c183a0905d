package audit

import (
	"strings"

	"github.com/holdfast-dev/holdfast/internal/availability"
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
applies that taint once the node is proven down: its Karpenter NodeClaim gone, or the
holdfast.dev/node-down annotation an agent sets after checking the machine (fenceAfter,
where the operator runs with --allow-fence-after, takes time for proof). The taint
releases every StatefulSet pod on the node, whichever namespace's, so only a cluster
administrator's ClusterDisruptionPolicy fences, or any namespace's policy where the
operator runs with --allow-namespaced-fencing.`,
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

func workloadNames(ws []*availability.Workload) string {
	names := make([]string, len(ws))
	for i, w := range ws {
		names[i] = describe(w)
	}
	return strings.Join(names, ", ")
}
