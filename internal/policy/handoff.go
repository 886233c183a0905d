package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// The hand-off of a Surge single replica's node to a node autoscaler's scale-down.
//
// Karpenter's consolidation and cluster-autoscaler's scale-down both take a node only
// when every pod on it may be evicted: they check the budgets before they commit to the
// node. A Surge single replica's budget (minAvailable 1 over one pod) therefore keeps
// its node for good. Neither says so in the API (Karpenter leaves the node
// Consolidatable; cluster-autoscaler logs it as unremovable and looks again after its
// recheck timeout), and the taints a surge for a drain waits for never come. So holdfast
// surges ahead: once the autoscaler may want the node (Karpenter: its NodeClaim is
// Consolidatable; cluster-autoscaler: the node is in one of its node groups), the node's
// pods request at most the utilisation threshold, and nothing else keeps the autoscaler
// off it, holdfast adds a pod beside it, which lets the budget allow one eviction once the
// new pod counts as available. The autoscaler's next look may then take the node, and
// its taint (or cordon) turns the hand-off into an ordinary surge for a drain. If the
// autoscaler leaves the node alone, the surge ends at a deadline, and holdfast backs off
// from that node, doubling the wait each time, and gives up after maxHandOffs.
//
// Cluster-autoscaler simulates a node's removal at its first scan after the node falls
// under its threshold (every 10 s by default); the new pod is rarely Ready by then, so
// it finds the budget at 0, and the hand-off costs its recheck timeout on top of its
// unneeded time. A pod marked cluster-autoscaler.kubernetes.io/safe-to-evict: "true"
// skips the budgets in that simulation, not in the eviction, which the Eviction API
// holds until the new pod counts: the node goes at cluster-autoscaler's own pace, and the
// hand-off need only open the budget within its unneeded time. So holdfast marks the
// single replica's pod so, with its own mark beside (SafeToEvict), for as long as the
// hand-off to cluster-autoscaler runs (caMark), when the annotation changes nothing else
// that cluster-autoscaler checks of the pod (caUnsafe).

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
	// caDecision is how long cluster-autoscaler may take, once it finds the node
	// unneeded for its unneeded time, to taint and cordon it: a few of its scans.
	caDecision = time.Minute
	// handOffStartup bounds the new pod's start-up and readiness flaps: a hand-off ends
	// at most this long plus the autoscaler's window after it began.
	handOffStartup = 10 * time.Minute
	// RoomAnswerLife is how long an answer on a node's room holds: the operator reads
	// every node and pod to answer, at most once per node in this time.
	RoomAnswerLife = time.Minute
	// caCandidateRecheck is how often a Surge single replica's node in a
	// cluster-autoscaler node group is looked at again while no hand-off runs: its load,
	// blockers and room change with other workloads' pods, new nodes and uncordons, and
	// its back-off with time, none of which sends an event a policy is woken by.
	// (Karpenter's Consolidatable condition, which a policy watches, moves with the pods.)
	// A node whose pods are known to be going is looked at sooner (departure.go).
	caCandidateRecheck = 30 * time.Second
	// caDepartureRecheck is how soon such a node is looked at again while it would be
	// handed over but for pods that may leave soon (awaitsDeparture): cluster-autoscaler
	// scans every 10 s by default, and finds the node unremovable for the budget at its
	// first scan after they go unless holdfast's mark came first.
	caDepartureRecheck = 2 * time.Second
	// handOffCooldown is the least time between the starts of the first two hand-offs of
	// one node, for a node the autoscaler did not take; it doubles with each further one.
	handOffCooldown = 15 * time.Minute
	// maxHandOffs is how many hand-offs of one node holdfast makes at most: after that
	// many declined, it surges ahead of that node no more (a drain still surges).
	maxHandOffs = 3
	// consolidateUnderutilized is the consolidation policy under which Karpenter moves
	// pods off nodes; under WhenEmpty it waits for nodes without pods, which a single
	// replica never leaves, so a hand-off would change nothing.
	consolidateUnderutilized = "WhenEmptyOrUnderutilized"
	// caDeletionCandidateTaint is what cluster-autoscaler puts on a node it has found
	// unneeded and means to remove once its unneeded time has passed: the hand-off is
	// accepted, and holds past its deadline while the taint stays.
	caDeletionCandidateTaint = "DeletionCandidateOfClusterAutoscaler"
	// Autoscaler names, for status.
	karpenterName = "Karpenter"
	caName        = "cluster-autoscaler"
)

// Autoscalers is what holdfast knows of the node autoscalers' configuration, from the
// operator's flags. The zero value is the autoscalers' defaults, without
// cluster-autoscaler.
type Autoscalers struct {
	// Threshold is the share of a node's allocatable CPU and of its memory that its pods
	// may request at most for holdfast to hand the node over (cluster-autoscaler's
	// --scale-down-utilization-threshold; the larger of the two counts). 0 means 0.5.
	Threshold float64
	// UnneededTime and Recheck are cluster-autoscaler's --scale-down-unneeded-time and
	// --unremovable-node-recheck-timeout; 0 means their defaults, 10 and 5 minutes.
	UnneededTime, Recheck time.Duration
	// NodeGroupLabel is the node label that names a node's cluster-autoscaler node group,
	// which Observe reads into Observed.NodeGroups; "" where cluster-autoscaler
	// does not run.
	NodeGroupLabel string
}

func (a Autoscalers) threshold() float64 {
	if a.Threshold > 0 {
		return a.Threshold
	}
	return DefaultSettings.Autoscalers.Threshold
}

// caWindow is how long cluster-autoscaler may take to take a node once its budget
// allows the eviction: it found the node unremovable and looks again only after its
// recheck timeout, then waits its unneeded time, then decides. Under a pod marked safe
// to evict it does not find the node unremovable for the budget, but it may have done so
// before the mark came: holdfast marks the pod when the hand-off starts, and notices a
// node under the threshold up to caCandidateRecheck after it fell there (another
// namespace's pods leaving send it no event), while cluster-autoscaler simulates the
// node's removal at its first scan (every 10 s by default), and sets a node it found
// unremovable aside for the recheck timeout whatever the node's pods do meanwhile. So the
// window counts the recheck under the mark too: a window too short would end a hand-off
// that cluster-autoscaler was about to take, where a longer one only holds a declined
// surge longer.
func (a Autoscalers) caWindow() time.Duration {
	unneeded, recheck := a.UnneededTime, a.Recheck
	if unneeded <= 0 {
		unneeded = DefaultSettings.Autoscalers.UnneededTime
	}
	if recheck <= 0 {
		recheck = DefaultSettings.Autoscalers.Recheck
	}
	return recheck + unneeded + caDecision
}

// NodeClaim is what Decide reads of the Karpenter NodeClaim behind a node.
type NodeClaim struct {
	Name string
	// ConsolidatableSince is when its Consolidatable condition turned True: the node's
	// pods have not changed for the NodePool's consolidateAfter, and Karpenter's
	// consolidation looks at it. Zero while the condition is not True. It says nothing of
	// whether consolidation would pay: Karpenter decides that only for nodes whose pods
	// may all be evicted.
	ConsolidatableSince time.Time
	// ConsolidationPolicy and ConsolidateAfter are its NodePool's.
	ConsolidationPolicy string
	ConsolidateAfter    time.Duration
	// Budget is what its NodePool's disruption budgets allow Karpenter's consolidation
	// of the node; read only while the node is Consolidatable.
	Budget PoolBudget
	// Load is read only while the node is Consolidatable.
	Load
}

// Load is what runs on a node, as a hand-off reads it.
type Load struct {
	// Blocker names what keeps the autoscaler off the node whatever the budgets allow
	// (Karpenter: karpenter.sh/do-not-disrupt on the node or a pod; cluster-autoscaler:
	// scale-down-disabled on the node, a pod that is not safe to evict or has no
	// controller, another budget that allows no eviction). "" when nothing does.
	Blocker string
	// Requested is what the node's pods (but DaemonSets') request; not those leaving for
	// sure (cluster-autoscaler only: departure.go).
	Requested corev1.ResourceList
	// MayLeave is what those of them that may leave soon request, counted in Requested
	// too: the pods of a Deployment scaled down, that runs more than it wants
	// (cluster-autoscaler only, read for a node above the threshold). nil when none.
	MayLeave corev1.ResourceList
	// Unplaceable names the first of the node's pods (DaemonSets' aside, the single
	// replica's included) that would fit on no other node, and why: the autoscaler would
	// not take the node, and the surge's new pod would have nowhere to go but the node.
	// "" when they all fit. Read with the planner only when a hand-off of the node would
	// start but for room (RoomWanted, SetRoom).
	Unplaceable string
}

// NodeGroupMember is what Decide reads of a node in one of cluster-autoscaler's node
// groups.
type NodeGroupMember struct {
	Group string
	Load
	// Workloads are the Deployments and StatefulSets of the pods counted in Load, as
	// OwnerKey names them; read only for a node above the threshold (Observed.Awaited).
	Workloads []string
}

// underused reports whether a node's pods request at most threshold of its allocatable
// CPU and of its memory.
func underused(n *corev1.Node, requested corev1.ResourceList, threshold float64) bool {
	if n == nil {
		return false
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		alloc := n.Status.Allocatable[r]
		used := requested[r]
		if alloc.IsZero() || float64(used.MilliValue()) > threshold*float64(alloc.MilliValue()) {
			return false
		}
	}
	return true
}

// handOff is a surge ahead of an autoscaler's scale-down, as HandOffAnnotation records
// it: the node, when the surge began, how many hand-offs of that node it is, and whether
// it ended because the surge's new pod was scheduled onto the node itself.
type handOff struct {
	node   string
	start  time.Time
	count  int
	landed bool
}

// landedMark ends the record of a hand-off whose new pod landed on its node.
const landedMark = "landed"

func (h handOff) String() string {
	s := fmt.Sprintf("%s %s %d", h.node, stamp(h.start), h.count)
	if h.landed {
		s += " " + landedMark
	}
	return s
}

// next is when a hand-off of h's node may follow h; zero once holdfast has given up.
func (h handOff) next() time.Time {
	if h.count >= maxHandOffs {
		return time.Time{}
	}
	return h.start.Add(handOffCooldown << (h.count - 1))
}

// deadline is when the hand-off ends unless the autoscaler takes the node: the
// autoscaler's window after the surge's new pod counts as available in the budget (only
// then may the autoscaler evict the other), but no later than handOffStartup and the
// window after the surge began, however slowly the new pod starts or often it flaps.
func (h handOff) deadline(o Observed, w *Workload, window time.Duration) time.Time {
	latest := h.latest(window)
	if w.Surge == nil || len(w.Surge.Pods) == 0 {
		return latest
	}
	newest := slices.MaxFunc(w.Surge.Pods, func(a, b Pod) int { return a.Created.Compare(b.Created) })
	if !newest.Ready {
		return latest
	}
	base := h.start
	if available := newest.Since.Add(minReady(o.Policy, w)); available.After(base) {
		base = available
	}
	if end := base.Add(window); end.Before(latest) {
		return end
	}
	return latest
}

// latest is when the hand-off ends at the latest, whatever its new pod or the
// autoscaler's taints do.
func (h handOff) latest(window time.Duration) time.Time { return h.start.Add(handOffStartup + window) }

// handOffOf reads w's last hand-off from its surge set; false when it has none, or one
// holdfast did not write. A record without a count is a first hand-off.
func handOffOf(w *Workload) (handOff, bool) {
	return parseHandOff(record(w))
}

// parseHandOff reads a HandOffAnnotation.
func parseHandOff(record string) (handOff, bool) {
	fields := strings.Fields(record)
	landed := len(fields) == 4 && fields[3] == landedMark
	if landed {
		fields = fields[:3]
	}
	if len(fields) < 2 || len(fields) > 3 {
		return handOff{}, false
	}
	start, err := time.Parse(time.RFC3339, fields[1])
	if err != nil {
		return handOff{}, false
	}
	count := 1
	if len(fields) == 3 {
		if count, err = strconv.Atoi(fields[2]); err != nil || count < 1 {
			return handOff{}, false
		}
	}
	return handOff{node: fields[0], start: start, count: count, landed: landed}, true
}

// candidate is a node an autoscaler may want to remove, but for w's budget.
type candidate struct {
	node       string
	autoscaler string
	Load
	// window is how long the autoscaler may take to remove the node once the budget
	// allows the eviction.
	window time.Duration
	// pool is what the NodePool's disruption budgets allow (Karpenter only).
	pool PoolBudget
}

// scaleDownCandidate returns the node of w's only pod when an autoscaler considers it
// for removal: Karpenter, when its NodeClaim is Consolidatable under
// WhenEmptyOrUnderutilized; cluster-autoscaler, when the node is in one of its node
// groups. Not a node being drained already (a drain's own surge covers that).
func scaleDownCandidate(o Observed, w *Workload) (candidate, bool) {
	pods := o.Pods[WorkloadKey(w.Kind, w.Name)]
	if len(pods) != 1 || pods[0].Node == "" || BeingDrained(o.Nodes[pods[0].Node]) {
		return candidate{}, false
	}
	node := pods[0].Node
	if c, ok := o.Claims[node]; ok {
		if c.ConsolidatableSince.IsZero() || c.ConsolidationPolicy != consolidateUnderutilized {
			return candidate{}, false
		}
		return candidate{node: node, autoscaler: karpenterName, Load: c.Load, window: c.ConsolidateAfter + handOffGrace, pool: c.Budget}, true
	}
	if m, ok := o.NodeGroups[node]; ok {
		return candidate{node: node, autoscaler: caName, Load: m.Load, window: o.Autoscalers.caWindow()}, true
	}
	return candidate{}, false
}

// autoscalerOf names the autoscaler of a hand-off's node, and how long it may take to
// remove the node: Karpenter for a node with a NodeClaim, else cluster-autoscaler.
func autoscalerOf(o Observed, node string) (string, time.Duration) {
	if c, ok := o.Claims[node]; ok {
		return karpenterName, c.ConsolidateAfter + handOffGrace
	}
	return caName, o.Autoscalers.caWindow()
}

// accepted reports whether the autoscaler has said it will remove the node:
// cluster-autoscaler's deletion-candidate taint. (Karpenter's taint is a drain's.)
func accepted(n *corev1.Node) bool {
	return n != nil && slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == caDeletionCandidateTaint })
}

// handingOff returns the hand-off in progress of a surged w, its autoscaler and its
// deadline: before the deadline (or past it, up to its latest, while the autoscaler has
// accepted the node), while a pod of w is still on the node, and unless the surge's new
// pod landed there too (landed). Once no pod is on the node, the autoscaler has taken it
// and the surge ends as any other, when the original number of pods is Ready.
func handingOff(o Observed, w *Workload) (handOff, string, time.Time, bool) {
	h, ok := handOffOf(w)
	if !ok || h.landed || !slices.ContainsFunc(o.Pods[WorkloadKey(w.Kind, w.Name)], func(p Pod) bool { return p.Node == h.node }) {
		return handOff{}, "", time.Time{}, false
	}
	if _, ok := landed(o, w); ok {
		return handOff{}, "", time.Time{}, false
	}
	autoscaler, window := autoscalerOf(o, h.node)
	deadline := h.deadline(o, w, window)
	if !o.Now.Before(deadline) && !(accepted(o.Nodes[h.node]) && o.Now.Before(h.latest(window))) {
		return handOff{}, "", time.Time{}, false
	}
	return h, autoscaler, deadline, true
}

// handOffStart is the hand-off of w's node that surgeAhead starts if the node's pods fit
// elsewhere: its candidate and record. False when w is no Surge single replica at rest,
// the node is no candidate, is blocked, its NodePool's budgets allow Karpenter no
// disruption now, or it is used above the threshold, or its last hand-off
// did not lead to its removal and the back-off after it has not passed or holdfast has
// given up on the node.
func handOffStart(o *Observed, w *Workload) (candidate, handOff, bool) {
	if w.surging() || w.Replicas != 1 || !Surges(o.Policy, w.Kind) {
		return candidate{}, handOff{}, false
	}
	c, ok := scaleDownCandidate(*o, w)
	if !ok || c.Blocker != "" || c.pool.Closed != "" || !underused(o.Nodes[c.node], c.Requested, o.Autoscalers.threshold()) {
		return candidate{}, handOff{}, false
	}
	h := handOff{node: c.node, start: o.Now, count: 1}
	if last, ok := handOffOf(w); ok && last.node == c.node {
		if next := last.next(); next.IsZero() || o.Now.Before(next) {
			return candidate{}, handOff{}, false
		}
		h.count = last.count + 1
	}
	return c, h, true
}

// RoomWanted are the nodes whose room Decide reads (SetRoom): those a hand-off would
// start from but for room. Only those: an answer reads the whole cluster.
func (o *Observed) RoomWanted() []string {
	var out []string
	for i := range o.Workloads {
		if c, _, ok := handOffStart(o, &o.Workloads[i]); ok && !slices.Contains(out, c.node) {
			out = append(out, c.node)
		}
	}
	return out
}

// SetRoom records the planner's answer on node's room (plan.HandOffRoom): "" when its
// pods, DaemonSets' aside, would all fit on the other nodes, else the first that fits
// nowhere and why.
func (o *Observed) SetRoom(node, why string) {
	if c, ok := o.Claims[node]; ok {
		c.Unplaceable = why
		o.Claims[node] = c
	} else if m, ok := o.NodeGroups[node]; ok {
		m.Unplaceable = why
		o.NodeGroups[node] = m
	}
}

// landed returns w's hand-off, marked landed, when the surge's new pod (one of its set
// made since the hand-off began) was scheduled onto the node itself, and the autoscaler has
// not accepted the node: with two of w's pods there, the budget keeps the node all the
// same, and waiting for the deadline would only hold the surge. The hand-off is over, and
// the mark tells status why.
func landed(o Observed, w *Workload) (handOff, bool) {
	h, ok := handOffOf(w)
	if !ok || h.landed || accepted(o.Nodes[h.node]) {
		return handOff{}, false
	}
	if !slices.ContainsFunc(w.Surge.Pods, func(p Pod) bool { return p.Node == h.node && !p.Created.Before(h.start) }) {
		return handOff{}, false
	}
	h.landed = true
	return h, true
}

// surgeAhead starts the hand-off of w's node to its autoscaler: one extra pod, whose set
// records the hand-off. False when handOffStart finds none, or the node's pods would not
// all fit elsewhere.
func surgeAhead(o Observed, w *Workload) (verdict, bool) {
	c, h, ok := handOffStart(&o, w)
	if !ok || c.Unplaceable != "" {
		return verdict{}, false
	}
	up := surgeOf(w, 1, h.String())
	v := verdict{surges: []Surge{up}, requeueAfter: surgePoll}
	v.status.Message = msgSurgedAhead(up.Replicas, c.autoscaler, c.node, h.deadline(o, w, c.window)) + unmarkedNote(o, w, c.node)
	return v, true
}

// caMark is the pod of w that holdfast marks safe to evict under v, w's verdict: w's
// pod on the node of a hand-off to cluster-autoscaler that v starts or keeps on, while
// w is a Surge single replica. The hand-off runs, for the mark, as long as for its
// taint: while w's surge set, as v leaves it, runs extra pods and records the hand-off
// (not landed), a surge for cluster-autoscaler's drain of the node included. False when
// there is none, or the pod is Unsafe: the mark would let cluster-autoscaler take more
// than what the budget keeps. The caller sets the mark only on a pod without
// safe-to-evict: a user's "false" is a blocker (no hand-off), a user's "true" needs
// nothing.
func caMark(o Observed, w *Workload, v verdict) (Pod, bool) {
	if v.status.State != holdfastv1alpha1.WorkloadSurging || w.Replicas != 1 || !Surges(o.Policy, w.Kind) || w.Surge == nil && len(v.surges) == 0 {
		return Pod{}, false
	}
	var set Surge
	if w.Surge != nil {
		set = Surge{Replicas: w.Surge.Replicas, HandOff: w.Surge.HandOff}
	}
	if at := slices.IndexFunc(v.surges, func(s Surge) bool { return s.Deployment == w.Name }); at >= 0 {
		set = v.surges[at]
	}
	h, ok := parseHandOff(set.HandOff)
	if !ok || h.landed || set.Replicas == 0 || set.Delete {
		return Pod{}, false
	}
	if autoscaler, _ := autoscalerOf(o, h.node); autoscaler != caName {
		return Pod{}, false
	}
	pods := o.Pods[WorkloadKey(w.Kind, w.Name)]
	at := slices.IndexFunc(pods, func(p Pod) bool { return p.Node == h.node })
	if at < 0 || pods[at].Unsafe != "" {
		return Pod{}, false
	}
	return pods[at], true
}

// unmarkedNote says, for status, that w's pod on node, handed over to
// cluster-autoscaler, is not marked safe to evict because the mark would let
// cluster-autoscaler pass it for more than its budget (caUnsafe); "" otherwise.
func unmarkedNote(o Observed, w *Workload, node string) string {
	if autoscaler, _ := autoscalerOf(o, node); autoscaler != caName {
		return ""
	}
	for _, p := range o.Pods[WorkloadKey(w.Kind, w.Name)] {
		if p.Node == node && p.Unsafe != "" && p.SafeToEvict == "" {
			return "; " + msgNotMarkedSafe(p.Name, p.Unsafe)
		}
	}
	return ""
}

// surgeOrHandOff is a Surge single replica's decision: the surge for a drain of its
// node, else the hand-off of its node to its autoscaler; and when neither, what
// holdfast waits for.
func surgeOrHandOff(o Observed, w *Workload, st holdfastv1alpha1.WorkloadStatus) verdict {
	v := surgeSingle(o, w, st)
	if v.status.State == holdfastv1alpha1.WorkloadSurging {
		return v
	}
	if ahead, ok := surgeAhead(o, w); ok {
		v.status.State, v.status.Message = holdfastv1alpha1.WorkloadSurging, ahead.status.Message
		return v.after(ahead)
	}
	c, candidate := scaleDownCandidate(o, w)
	last, handedOff := handOffOf(w)
	switch {
	case !candidate:
	case c.Blocker != "":
		v.status.Message = msgScaleDownBlocked(c.autoscaler, c.node, c.Blocker)
	case c.pool.Closed != "":
		v.status.Message = msgPoolBudgetClosed(c.node, c.pool)
		v.requeueAfter = sooner(v.requeueAfter, c.pool.recheck(o.Now))
	case c.Unplaceable != "":
		v.status.Message = msgNoRoomElsewhere(c.autoscaler, c.node, c.Unplaceable)
		v.requeueAfter = sooner(v.requeueAfter, RoomAnswerLife) // room elsewhere sends no event
	case handedOff && last.node == c.node:
		v.status.Message = msgHandOffDeclined(c.autoscaler, last)
		if next := last.next(); next.After(o.Now) {
			v.requeueAfter = sooner(v.requeueAfter, next.Sub(o.Now)) // the back-off ends without an event
		}
	}
	if candidate && c.autoscaler == caName && !(handedOff && last.node == c.node && last.next().IsZero()) {
		// Still the look, for what sends no event: room, blockers, the pods of
		// workloads that are not Deployments or StatefulSets.
		v.requeueAfter = sooner(v.requeueAfter, caCandidateRecheck)
		if awaitsDeparture(o, w) {
			v.requeueAfter = sooner(v.requeueAfter, caDepartureRecheck)
		}
	}
	return v
}

// awaitsDeparture reports whether w's node would be handed over to cluster-autoscaler
// now but for the pods there that may leave soon (Load.MayLeave): their going sends no
// event, so the node is looked at again after caDepartureRecheck.
func awaitsDeparture(o Observed, w *Workload) bool {
	c, ok := scaleDownCandidate(o, w)
	if !ok || c.autoscaler != caName || len(c.MayLeave) == 0 || underused(o.Nodes[c.node], c.Requested, o.Autoscalers.threshold()) {
		return false
	}
	left := c.Requested.DeepCopy()
	for name, q := range c.MayLeave {
		sum := left[name]
		sum.Sub(q)
		left[name] = sum
	}
	return startsUnder(o, w, c.node, left)
}

// startsUnder reports whether a hand-off of w's node to cluster-autoscaler would start
// were its pods to request requested.
func startsUnder(o Observed, w *Workload, node string, requested corev1.ResourceList) bool {
	m := o.NodeGroups[node]
	m.Requested, m.MayLeave = requested, nil
	o.NodeGroups = map[string]NodeGroupMember{node: m}
	_, _, ok := handOffStart(&o, w)
	return ok
}

// Awaited are the workloads, as OwnerKey names them, whose deletion or scale-down may let
// the hand-off of one of o's Surge single replicas' nodes to cluster-autoscaler start:
// those with pods on such a node that is above the threshold and that would be handed
// over were its load to leave. A workload of another namespace sends the policy no
// event: the operator wakes the policy when one of these is deleted or scaled down, and
// its departures are then read as any other (departure.go). Sorted, without repeats.
func (o Observed) Awaited() []string {
	var out []string
	for i := range o.Workloads {
		w := &o.Workloads[i]
		c, ok := scaleDownCandidate(o, w)
		if !ok || c.autoscaler != caName || underused(o.Nodes[c.node], c.Requested, o.Autoscalers.threshold()) ||
			!startsUnder(o, w, c.node, corev1.ResourceList{}) {
			continue
		}
		out = append(out, o.NodeGroups[c.node].Workloads...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// protectedMessage says what Protect does to w's node: when Karpenter considers the
// node for consolidation, that Protect keeps it from consolidating it.
func protectedMessage(o Observed, w *Workload) string {
	if c, ok := scaleDownCandidate(o, w); ok && c.autoscaler == karpenterName {
		return msgProtectedFromConsolidation(c.node)
	}
	return msgProtected
}

// The hand-off taint (HandOffTaintKey:PreferNoSchedule) steers the surge's new pod off the
// node being handed over: the scheduler scores a node with a PreferNoSchedule taint the
// pod does not tolerate below every other that fits it. Neither autoscaler reads the
// taints of a node it may remove (only those of the nodes its pods would move to), and
// the node's pods are not moved by it. It goes on before the surge's first write and
// stays while a surge records a hand-off of the node; the operator's node watcher takes
// off any other (a surge over, or an operator stopped between the taint and the surge).

// leftoverGrace is how old a hand-off taint is before the sweep may take it off for want
// of a surge: the surge's write follows the taint's, and reaches the cache a moment
// later.
const leftoverGrace = 30 * time.Second

// HandOffTainted reports whether n carries the hand-off taint.
func HandOffTainted(n *corev1.Node) bool {
	return n != nil && slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == holdfastv1alpha1.HandOffTaintKey })
}

// handOffTaints are the nodes to taint before the surges: those of the hand-offs that
// start (surges) or go on in o, as o saw them without the taint; not a node being
// drained, from which the surge's new pod is kept off already.
func handOffTaints(o Observed, surges []Surge) []NodeTaint {
	var out []NodeTaint
	add := func(node string) {
		if n := o.Nodes[node]; n != nil && !HandOffTainted(n) && !BeingDrained(n) && !slices.ContainsFunc(out, func(t NodeTaint) bool { return t.Node == node }) {
			out = append(out, NodeTaint{Node: node, Key: holdfastv1alpha1.HandOffTaintKey})
		}
	}
	for _, s := range surges {
		if h, ok := parseHandOff(s.HandOff); ok && s.Replicas > 0 && !h.landed {
			add(h.node)
		}
	}
	for i := range o.Workloads {
		w := &o.Workloads[i]
		if !w.surging() {
			continue
		}
		if h, _, _, ok := handingOff(o, w); ok {
			add(h.node)
		}
	}
	return out
}

// LeftoverHandOffTaints are the nodes among nodes whose hand-off taint no surge keeps at
// now: no surge set of sets (every namespace's) running extra pods records a hand-off of
// the node that is still on, and the taint is older than leftoverGrace.
func LeftoverHandOffTaints(nodes []corev1.Node, sets []SurgeSet, now time.Time) []string {
	kept := map[string]bool{}
	for _, set := range sets {
		if h, ok := parseHandOff(set.HandOff); ok && set.Replicas > 0 && !h.landed {
			kept[h.node] = true
		}
	}
	var out []string
	for i := range nodes {
		n := &nodes[i]
		at := slices.IndexFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == holdfastv1alpha1.HandOffTaintKey })
		if at < 0 || kept[n.Name] {
			continue
		}
		if added := n.Spec.Taints[at].TimeAdded; added == nil || now.Sub(added.Time) >= leftoverGrace {
			out = append(out, n.Name)
		}
	}
	return out
}

// HandOffEnd is a hand-off a decision ends: its autoscaler, whether the autoscaler took
// the node (no pod of the workload is left there), and how long it ran.
type HandOffEnd struct {
	Autoscaler string
	Taken      bool
	Duration   time.Duration
}

// HandOffsEnded are the hand-offs d ends: those of o's workloads whose surge set runs
// one and which d scales to no extra pod. Each is ended once: the next decision finds the
// set at zero.
func HandOffsEnded(o Observed, d Decision) []HandOffEnd {
	var out []HandOffEnd
	for _, s := range EffectsOf[Surge](d.Effects) {
		if s.Replicas > 0 {
			continue
		}
		for i := range o.Workloads {
			w := &o.Workloads[i]
			if w.Kind != holdfastv1alpha1.KindDeployment || w.Name != s.Deployment || !w.surging() {
				continue
			}
			h, ok := handOffOf(w)
			if !ok || h.landed {
				continue
			}
			taken := !slices.ContainsFunc(o.Pods[WorkloadKey(w.Kind, w.Name)], func(p Pod) bool { return p.Node == h.node })
			autoscaler, _ := autoscalerOf(o, h.node)
			out = append(out, HandOffEnd{Autoscaler: autoscaler, Taken: taken, Duration: o.Now.Sub(h.start)})
		}
	}
	return out
}
