package policy

import (
	"fmt"
	"strings"
	"time"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// The messages of status.workloads and of the conditions, one constructor each, so that
// the decision reads as logic and the wording lives in one place. Messages carry times,
// not ages, so that they stay the same from one reconcile to the next and status is not
// rewritten.

const (
	msgNoSelector        = "its scale subresource reports no usable status.selector, so holdfast cannot tell its pods: no budget; have its controller set the selector"
	msgNoReplicas        = "no replicas: nothing to budget"
	msgSurgeReady        = "single replica under Surge: a drain of its node first starts an extra pod elsewhere, then lets the eviction through once that pod is Ready"
	msgStatefulNotSurged = "single-replica StatefulSet under Surge: a second copy of the same identity cannot run, so it gets no budget and a drain restarts its pod on another node"
	msgSingleSkipped     = "single replica: any budget would block every drain, so it gets none (singleReplica: Skip); add replicas, or choose Surge or Protect"
	msgProtected         = "single replica under Protect: minAvailable 1 and karpenter.sh/do-not-disrupt on its pod"
)

func msgOverridden(p, winner *holdfastv1alpha1.DisruptionPolicy) string {
	if clusterCopy(p) && !clusterCopy(winner) {
		return fmt.Sprintf("DisruptionPolicy %s, the namespace's own, also selects it and comes before ClusterDisruptionPolicy %s: that policy manages its budget",
			winner.Name, p.Labels[holdfastv1alpha1.ClusterPolicyLabel])
	}
	return fmt.Sprintf("DisruptionPolicy %s is older and also selects it: that policy manages its budget", winner.Name)
}

func msgConflict(other string) string {
	return fmt.Sprintf("PodDisruptionBudget %s, which holdfast does not manage, already covers its pods: two budgets over one pod make every eviction fail, so holdfast adds none; delete %s or unselect the workload", other, other)
}

func msgOverlap(other string) string {
	return fmt.Sprintf("its budget would cover pods that PodDisruptionBudget %s, which holdfast keeps for another workload, covers too: two budgets over one pod make every eviction fail, so holdfast adds none; make the workloads' selectors disjoint or unselect one", other)
}

func msgSurgeUnderOtherBudget(surge, other string) string {
	return surge + fmt.Sprintf("; PodDisruptionBudget %s now covers its pods, so holdfast keeps none", other)
}

func msgHeld(until time.Time) string {
	if until.IsZero() {
		return "no maintenance window can open (see the WindowOpen condition): no voluntary disruption until the windows are fixed"
	}
	return "outside every maintenance window: no voluntary disruption until " + stamp(until)
}

func msgCustomNotSurged(kind string) string {
	return fmt.Sprintf("single-replica %s under Surge: holdfast surges only Deployments, so it gets no budget and a drain restarts its pod on another node; choose Protect to hold the drain instead", kind)
}

func msgProtectBlocks(node string) string {
	return fmt.Sprintf("blocks the drain of node %s (no escapeAfter)", node)
}

func msgProtectBlocksUntil(node string, since, escapeAt time.Time) string {
	return fmt.Sprintf("blocks the drain of node %s since %s; lets it through at %s", node, stamp(since), stamp(escapeAt))
}

func msgEscaped(node string, escapeAfter time.Duration) string {
	return fmt.Sprintf("the drain of node %s was blocked for escapeAfter (%s): its budget now lets the eviction through", node, escapeAfter)
}

func msgSurgeStarted(node string, replicas int32) string {
	return fmt.Sprintf("node %s is being drained: 1 extra pod added beside the %s; the eviction waits until it is Ready on another node", node, Plural(replicas, "replica"))
}

func msgSurgedForDrain(replicas, extra int32, node string, ready int32) string {
	return fmt.Sprintf("%s beside the %s for the drain of node %s: %d of them Ready elsewhere", Plural(extra, "extra pod"), Plural(replicas, "replica"), node, ready)
}

func msgSurgeWaiting(replicas, extra, ready int32) string {
	return fmt.Sprintf("%s beside the %s: waiting for %d of them Ready before removing the extra (%d now)", Plural(extra, "extra pod"), Plural(replicas, "replica"), replicas, ready)
}

func msgBudgeted(allowed, replicas int32) string {
	return fmt.Sprintf("%d of %d pods may be disrupted at once", allowed, replicas)
}

func msgNoDisruption(floor, replicas int32) string {
	return fmt.Sprintf("the policy's budget keeps %d of %d pods available, which allows no disruption: no budget is created, since it would block every drain; lower minAvailable or add replicas", floor, replicas)
}

func msgDegraded(ready, size int32, stuck []string) string {
	return fmt.Sprintf("%d of %d Ready: %s", ready, size, strings.Join(stuck, ", "))
}

func msgPacing(young []string, minReady time.Duration) string {
	return fmt.Sprintf("Pacing: %s (minReadySeconds %d): the budget counts each as unavailable until then", strings.Join(young, ", "), int(minReady.Seconds()))
}

func msgUnreadable(reasons []string) string {
	return strings.Join(reasons, "; ") + "; the budgets of those kinds are kept as they are until they can be read"
}

func msgSomeWithoutBudget(without, of, unprotected, conflicts int32) string {
	return fmt.Sprintf("%d of %d selected workloads have no budget from this policy: %d unprotected, %d conflicting; see status.workloads", without, of, unprotected, conflicts)
}

func msgConflicting(conflicts, overridden int32) string {
	return fmt.Sprintf("%d workloads have pods another budget covers (a user's, or one holdfast keeps for another workload); %d are managed by older policies", conflicts, overridden)
}

func msgDegradedWorkloads(n int32) string {
	return fmt.Sprintf("%d selected workloads have fewer Ready pods than they want, not because of a drain or a rollout; see status.workloads", n)
}

func msgSurgedAhead(extra int32, autoscaler, node string, deadline time.Time) string {
	return fmt.Sprintf("%s ahead of %s's scale-down of node %s, which its budget blocked: removed at %s unless %s takes the node first",
		Plural(extra, "extra pod"), autoscaler, node, stamp(deadline), autoscaler)
}

func msgNotMarkedSafe(pod, why string) string {
	return fmt.Sprintf("pod %s is not marked safe to evict for cluster-autoscaler, since %s, which the mark would let cluster-autoscaler pass too: cluster-autoscaler may set the node aside for its recheck timeout first", pod, why)
}

func msgHandOffDeclined(autoscaler string, h handOff) string {
	declined := fmt.Sprintf("%s; %s did not take node %s after %d hand-offs, the last at %s", msgSurgeReady, autoscaler, h.node, h.count, stamp(h.start))
	if h.landed {
		declined = fmt.Sprintf("%s; the new pod of the last hand-off of node %s to %s (%d so far, the last at %s) was scheduled onto that node itself, which its budget then kept all the same, so the hand-off ended early",
			msgSurgeReady, h.node, autoscaler, h.count, stamp(h.start))
	}
	if next := h.next(); !next.IsZero() {
		return declined + fmt.Sprintf(": no new hand-off of that node before %s", stamp(next))
	}
	return declined + ": holdfast surges ahead of that node no more (a drain of it still surges)"
}

func msgScaleDownBlocked(autoscaler, node, blocker string) string {
	return fmt.Sprintf("%s; %s does not remove node %s whatever its budget allows (%s), so holdfast does not surge ahead of it", msgSurgeReady, autoscaler, node, blocker)
}

func msgPoolBudgetClosed(node string, b PoolBudget) string {
	m := fmt.Sprintf("%s; Karpenter does not consolidate node %s now: %s, so holdfast does not surge ahead of it", msgSurgeReady, node, b.Closed)
	if !b.Opens.IsZero() {
		m += fmt.Sprintf(" until %s, when the scheduled budgets that allow none end their windows", stamp(b.Opens))
	}
	return m
}

func msgNoRoomElsewhere(autoscaler, node, why string) string {
	return fmt.Sprintf("%s; %s would find no room elsewhere for the pods of node %s (%s), so holdfast does not surge ahead of it", msgSurgeReady, autoscaler, node, why)
}

func msgProtectedFromConsolidation(node string) string {
	return fmt.Sprintf("%s, which keeps Karpenter from consolidating node %s (it considers it: Consolidatable); choose Surge to let it go with a second replica first", msgProtected, node)
}

// onLostNodes says how many pods are on which lost nodes ("1 pod on lost node n1", "3
// pods on lost nodes n1, n2"), and the nodes as what follows names them ("the node",
// "the nodes").
func onLostNodes(lost int32, nodes []string) (string, string) {
	if len(nodes) > 1 {
		return fmt.Sprintf("%s on lost nodes %s", Plural(lost, "pod"), strings.Join(nodes, ", ")), "the nodes"
	}
	return fmt.Sprintf("%s on lost node %s", Plural(lost, "pod"), strings.Join(nodes, ", ")), "the node"
}

func msgSurgedForFailure(lost int32, nodes []string, replicas, extra, homeless int32) string {
	on, them := onLostNodes(lost, nodes)
	back := them + " is back"
	if len(nodes) > 1 {
		back = them + " are back"
	}
	msg := fmt.Sprintf("%s: %s beside the %s until %s or Kubernetes has replaced them; the pods there are left alone, as they may still serve behind a partition",
		on, Plural(extra, "extra pod"), Plural(replicas, "replica"), back)
	if homeless > 0 {
		msg += fmt.Sprintf("; %d would fit on no surviving node, and are left to Kubernetes and the node autoscalers", homeless)
	}
	return msg
}

func msgLostNotSurged(kind string, lost int32, nodes []string) string {
	on, them := onLostNodes(lost, nodes)
	return fmt.Sprintf("%s: holdfast surges only Deployments, so the %s waits for %s or for Kubernetes", on, kind, them)
}

func msgLostNotFenced(lost int32, nodes []string, why string) string {
	on, them := onLostNodes(lost, nodes)
	return fmt.Sprintf("%s: %s; the StatefulSet waits for %s or for Kubernetes", on, why, them)
}

func msgLostNoSurge(lost int32, nodes []string) string {
	on, _ := onLostNodes(lost, nodes)
	return fmt.Sprintf("%s: not surged (nodeFailure.surge: Never); Kubernetes replaces them once their unreachable toleration runs out", on)
}

func msgLostBraked(lost int32, nodes []string, brake string) string {
	on, _ := onLostNodes(lost, nodes)
	return fmt.Sprintf("%s: %s", on, brake)
}

func msgBrakeShare(lost, total, zones int) string {
	where := fmt.Sprintf("in %d zones", zones)
	if zones < 2 {
		where = "in a cluster without zones"
	}
	return fmt.Sprintf("%d of %d nodes %s stopped renewing their Leases at once, more than a fifth: holdfast starts no extra pods and fences nothing, since the control plane or the network is the likelier cause", lost, total, where)
}

func msgNodesLost(nodes []string, recovering int32) string {
	return fmt.Sprintf("%d selected workloads have pods on lost nodes %s", recovering, strings.Join(nodes, ", "))
}

func msgCorrelated(nodes []string, recovering int32, brake string) string {
	return msgNodesLost(nodes, recovering) + "; " + brake
}

// msgFencing says where fencing stands; afterTime is the fenceAfter the operator lets
// count, "" for none.
func msgFencing(lost int32, fenced, waiting, bystanders []string, afterTime string) string {
	var parts []string
	if len(fenced) > 0 {
		parts = append(parts, fmt.Sprintf("node %s proven down and tainted out-of-service: Kubernetes deletes the pods there and the StatefulSet starts them elsewhere", strings.Join(fenced, ", ")))
	}
	if len(bystanders) > 0 {
		parts = append(parts, fmt.Sprintf("the taint releases too StatefulSet pods this policy does not fence for: %s", strings.Join(bystanders, ", ")))
	}
	if len(waiting) > 0 {
		or := "or its Karpenter NodeClaim gone"
		if afterTime != "" {
			or = "its Karpenter NodeClaim gone, or " + afterTime + " unreachable (fenceAfter: time, not proof)"
		}
		parts = append(parts, fmt.Sprintf("node %s not proven down: its pods stay until it is (annotation %s with the time of the check, %s), since two pods of one identity must never run",
			strings.Join(waiting, ", "), holdfastv1alpha1.NodeDownAnnotation, or))
	}
	return fmt.Sprintf("%s on lost nodes; %s", Plural(lost, "pod"), strings.Join(parts, "; "))
}

// The gaps of a NodeCompanion's nodes.
const (
	msgCordonedAway = "cordoned and its companion went away without a drain: left out so that it does not hold the budget; uncordon it to get a companion back"
	msgNoCompanion  = "no companion scheduled yet"
)

func msgDrainedHolds(since time.Time) string {
	return fmt.Sprintf("drained and still cordoned: holds the disruption budget since %s; uncordon or delete the node to release it", since.UTC().Format(time.RFC3339))
}

func msgCompanionNotReady(pod string) string {
	return "companion " + pod + " is not Ready"
}

func msgUnzoned(key string, pods []string) string {
	return fmt.Sprintf("; pod %s runs on nodes without the label %s: counted in no zone, under the workload's budget, and the node wants the label", strings.Join(pods, ", "), key)
}

func msgZonesIdle(allowed, replicas int32) string {
	return fmt.Sprintf("no zone is being disrupted: %d of %d pods may be disrupted at once, in any zone", allowed, replicas)
}

func msgZoneActive(zone string, limit, size int32, open bool) string {
	if !open {
		return fmt.Sprintf("zone %s is being disrupted, but another zone has a pod not Ready, or more pods are missing than this zone lost: every zone is held until they are back", zone)
	}
	return fmt.Sprintf("zone %s is being disrupted: %d of its %d pods may be disrupted at once; every other zone is held", zone, limit, size)
}

func msgZoneClosing(zone string) string {
	return fmt.Sprintf("zone %s is being disrupted: it opens once the budgets that let pods of other zones go have been closed", zone)
}

func msgZonesClosing(replicas int32) string {
	return fmt.Sprintf("no zone is being disrupted: 0 of %d pods may be disrupted until the zones' budgets have been closed", replicas)
}

// Plural is "1 pod", "2 pods": the count and the noun in English.
func Plural(n int32, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %ss", n, one)
}

const (
	msgFencingNotAllowed    = "nodeFailure.fencing: Verified is not in effect: the out-of-service taint releases every StatefulSet pod on the node, whichever namespace's, so a namespaced DisruptionPolicy fences only with a cluster administrator's consent: a ClusterDisruptionPolicy whose template fences, or the operator's --allow-namespaced-fencing"
	msgFenceAfterNotAllowed = "nodeFailure.fenceAfter is ignored: it takes time for proof, and a node cut off by a partition keeps running its pods, so it counts only where the operator runs with --allow-fence-after; fencing waits for proof (the node-down annotation, or the node's Karpenter NodeClaim gone)"
)
