package policy

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// Karpenter's consolidation, and how a single replica under Surge hands its node over.
//
// Karpenter consolidates a node only when every pod on it may be evicted at that moment:
// it checks the budgets before it taints the node. A Surge single replica's budget
// (minAvailable 1 over one pod) therefore keeps its node out of consolidation for good,
// and the karpenter.sh/disrupted taint that a surge for a drain waits for never comes.
// So holdfast surges ahead: once Karpenter counts the node as settled (its NodeClaim is
// Consolidatable), the node is underutilised, and nothing else keeps Karpenter off it,
// the Deployment goes to 2,
// which lets the budget allow one eviction once the new pod counts as available.
// Karpenter's next pass may then take the node, and its taint turns the hand-off into an
// ordinary surge for a drain. If Karpenter leaves the node alone (its pods fit nowhere
// else, or moving them saves nothing) the surge ends at a deadline, and holdfast does
// not surge ahead of that node again until it has settled anew and a cooldown has
// passed.

const (
	// handOffGrace is how long past the NodePool's consolidateAfter a hand-off waits for
	// Karpenter once the budget allows the eviction. Karpenter looks at consolidation
	// again only when a pod is bound or deleted, a node changes, or 5 minutes have passed;
	// a budget that starts to allow an eviction is none of these, and the new pod was
	// bound before it was Ready. So in a quiet cluster the hand-off waits for the
	// 5-minute look, then Karpenter's pass (every 10 s) and its validation (15 s). The new
	// pod may land on the node itself and restart its consolidateAfter, hence that is
	// counted too.
	handOffGrace = 6 * time.Minute
	// handOffCooldown is the least time between the starts of two hand-offs of one node,
	// for a node whose consolidation did not follow, so that holdfast does not surge
	// over and over.
	handOffCooldown = 15 * time.Minute
	// underutilised is the share of a node's allocatable CPU or memory that its pods may
	// request at most for holdfast to hand it over (cluster-autoscaler's default
	// scale-down threshold). Karpenter's own test, whether the pods fit elsewhere or on a
	// cheaper node, needs the whole cluster; a fuller node is left blocked rather than
	// surged for on every settle.
	underutilised = 0.5
	// consolidateUnderutilized is the consolidation policy under which Karpenter moves
	// pods off nodes; under WhenEmpty it waits for nodes without pods, which a single
	// replica never leaves, so a hand-off would change nothing.
	consolidateUnderutilized = "WhenEmptyOrUnderutilized"
)

// NodeClaim is what Decide reads of the Karpenter NodeClaim behind a node.
type NodeClaim struct {
	Name string
	// Deleting says the NodeClaim is being deleted: Karpenter is terminating its
	// instance, proof enough that the node's pods run no more once it is lost.
	Deleting bool
	// ConsolidatableSince is when its Consolidatable condition turned True: the node's
	// pods have not changed for the NodePool's consolidateAfter, and Karpenter's
	// consolidation looks at it. Zero while the condition is not True. It says nothing of
	// whether consolidation would pay: Karpenter decides that only for nodes whose pods
	// may all be evicted.
	ConsolidatableSince time.Time
	// ConsolidationPolicy and ConsolidateAfter are its NodePool's.
	ConsolidationPolicy string
	ConsolidateAfter    time.Duration
	// Blocker names what keeps Karpenter off the node whatever the budgets allow: the
	// node or a pod on it with karpenter.sh/do-not-disrupt. "" when nothing does.
	Blocker string
	// Requested is what the node's pods (but DaemonSets') request; read, with Blocker,
	// only while the node is Consolidatable.
	Requested corev1.ResourceList
}

// underused reports whether a node's pods request at most the underutilised share of
// its allocatable CPU and memory.
func underused(n *corev1.Node, requested corev1.ResourceList) bool {
	if n == nil {
		return false
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		alloc := n.Status.Allocatable[r]
		used := requested[r]
		if alloc.IsZero() || float64(used.MilliValue()) > underutilised*float64(alloc.MilliValue()) {
			return false
		}
	}
	return true
}

// handOff is a surge ahead of Karpenter's consolidation, as HandOffAnnotation records it:
// the node and when the surge began.
type handOff struct {
	node  string
	start time.Time
}

func (h handOff) String() string { return h.node + " " + stamp(h.start) }

// deadline is when the hand-off ends unless Karpenter takes the node: consolidateAfter
// and handOffGrace after the surge's newest pod counts as available in the budget (only
// then may Karpenter evict the other), or after the surge began. Zero while a pod of the
// surge is still starting: a slow application gets its start-up on top.
func (h handOff) deadline(o Observed, w *Workload) time.Time {
	if assess(o, w).starting > 0 {
		return time.Time{}
	}
	base, gate := h.start, minReady(o.Policy, w)
	for _, pod := range o.Pods[WorkloadKey(w.Kind, w.Name)] {
		if available := pod.Since.Add(gate); pod.Ready && available.After(base) {
			base = available
		}
	}
	return base.Add(o.Claims[h.node].ConsolidateAfter + handOffGrace)
}

// handOffOf reads w's last hand-off; false when it has none, or one holdfast did not
// write.
func handOffOf(w *Workload) (handOff, bool) {
	node, at, ok := strings.Cut(w.Annotations[holdfastv1alpha1.HandOffAnnotation], " ")
	if !ok || node == "" {
		return handOff{}, false
	}
	start, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return handOff{}, false
	}
	return handOff{node: node, start: start}, true
}

// consolidationCandidate returns the node of w's only pod and its NodeClaim when
// Karpenter considers the node for consolidation and nothing but budgets keeps it off:
// Consolidatable under WhenEmptyOrUnderutilized, no do-not-disrupt, not being drained
// already (a drain's own surge covers that).
func consolidationCandidate(o Observed, w *Workload) (string, NodeClaim, bool) {
	pods := o.Pods[WorkloadKey(w.Kind, w.Name)]
	if len(pods) != 1 || pods[0].Node == "" {
		return "", NodeClaim{}, false
	}
	node := pods[0].Node
	c, ok := o.Claims[node]
	if !ok || c.ConsolidatableSince.IsZero() || c.ConsolidationPolicy != consolidateUnderutilized || BeingDrained(o.Nodes[node]) {
		return "", NodeClaim{}, false
	}
	return node, c, true
}

// handingOff returns the hand-off in progress of a surged w and its deadline (zero while
// its new pod starts): before the deadline, and while a pod of w is still on the node.
// Once none is, Karpenter has taken the node and the surge ends as any other, when the
// original number of pods is Ready.
func handingOff(o Observed, w *Workload) (handOff, time.Time, bool) {
	h, ok := handOffOf(w)
	if !ok || !slices.ContainsFunc(o.Pods[WorkloadKey(w.Kind, w.Name)], func(p Pod) bool { return p.Node == h.node }) {
		return handOff{}, time.Time{}, false
	}
	deadline := h.deadline(o, w)
	if !deadline.IsZero() && !o.Now.Before(deadline) {
		return handOff{}, time.Time{}, false
	}
	return h, deadline, true
}

// surgeAhead starts the hand-off of w's node to Karpenter's consolidation: a surge to
// 2 that records its deadline. False when the node is no candidate, or when its last
// hand-off did not lead to consolidation and the node has not settled anew since, or
// the cooldown after it has not passed.
func surgeAhead(o Observed, w *Workload) (verdict, bool) {
	node, c, ok := consolidationCandidate(o, w)
	if !ok || c.Blocker != "" || !underused(o.Nodes[node], c.Requested) {
		return verdict{}, false
	}
	if last, ok := handOffOf(w); ok && last.node == node &&
		(!c.ConsolidatableSince.After(last.start) || o.Now.Before(last.start.Add(handOffCooldown))) {
		return verdict{}, false
	}
	up := surgeScale(w, w.Replicas, w.Replicas+1)
	up.HandOff = handOff{node: node, start: o.Now}.String()
	v := verdict{scales: []Scale{up}, requeueAfter: surgePoll}
	v.status.Message = msgSurgedAhead(w.Replicas, up.Replicas, node, time.Time{})
	return v, true
}

// surgeOrHandOff is a Surge single replica's decision: the surge for a drain of its
// node, else the hand-off of its node to Karpenter's consolidation; and when neither,
// what holdfast waits for.
func surgeOrHandOff(o Observed, w *Workload, st holdfastv1alpha1.WorkloadStatus) verdict {
	v := surgeSingle(o, w, st)
	if v.status.State == holdfastv1alpha1.WorkloadSurging {
		return v
	}
	if ahead, ok := surgeAhead(o, w); ok {
		v.status.State, v.status.Message = holdfastv1alpha1.WorkloadSurging, ahead.status.Message
		return v.after(ahead)
	}
	node, c, candidate := consolidationCandidate(o, w)
	last, handedOff := handOffOf(w)
	switch {
	case !candidate:
	case c.Blocker != "":
		v.status.Message = msgConsolidationBlocked(node, c.Blocker)
	case handedOff && last.node == node:
		v.status.Message = msgHandOffFailed(last, last.start.Add(handOffCooldown))
	}
	return v
}

// protectedMessage says what Protect does to w's node: when Karpenter considers the
// node for consolidation, that Protect keeps it from consolidating it.
func protectedMessage(o Observed, w *Workload) string {
	if node, _, ok := consolidationCandidate(o, w); ok {
		return msgProtectedFromConsolidation(node)
	}
	return msgProtected
}
