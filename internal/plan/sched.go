package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/holdfast-dev/holdfast/internal/availability"
)

// refusal is why the simulation would not put a pod on a node, in the scheduler's words.
type refusal int

const (
	accepted refusal = iota
	refusedUnschedulable
	refusedAffinity
	refusedTaint
	refusedCPU
	refusedMemory
	refusedPods
	refusedScalar
	refusedAntiAffinity
	refusedSpread
	refusals
)

var refusalText = [refusals]string{
	"", "cordoned or being drained", "not matching the pod's node selector or affinity", "with a taint the pod does not tolerate",
	"with too little cpu", "with too little memory", "with too many pods",
	"with too little of an extended resource (such as nvidia.com/gpu) or hugepages", "refused by pod anti-affinity",
	"refused by a topology spread constraint",
}

// nodeOK values: a profile caches how each node answers its affinity and taints.
const (
	unknownNode int8 = iota
	matchingNode
	affinityMismatch
	taintMismatch
)

// fixed checks what does not change during a plan: node selector, required node affinity
// and taints, cached per profile.
func (c *cluster) fixed(p *pod, n *node) refusal {
	ok := &p.prof.nodeOK[n.idx]
	if *ok == unknownNode {
		*ok = matchingNode
		if match, err := p.prof.affinity.Match(n.obj); err != nil || !match {
			*ok = affinityMismatch
		} else if untolerated(n.obj, p.prof.tolerations) {
			*ok = taintMismatch
		}
	}
	switch *ok {
	case affinityMismatch:
		return refusedAffinity
	case taintMismatch:
		return refusedTaint
	}
	return accepted
}

// fits is the scheduler's NodeResourcesFit: every resource the pod requests, extended
// ones included, against what the node has left. A node that does not list a resource has
// none of it: a GPU pod does not fit on a node without GPUs.
func fits(req, alloc, used resources) refusal {
	switch {
	case req.cpu > alloc.cpu-used.cpu:
		return refusedCPU
	case req.memory > alloc.memory-used.memory:
		return refusedMemory
	case req.pods > alloc.pods-used.pods:
		return refusedPods
	}
	for name, q := range req.scalar {
		if q > alloc.scalar[name]-used.scalar[name] {
			return refusedScalar
		}
	}
	return accepted
}

func untolerated(n *corev1.Node, tolerations []corev1.Toleration) bool {
	return availability.Untolerated(n.Spec.Taints, tolerations)
}

// feasible runs the scheduler's filters for the pod on the node; mins are the
// spreadMins of the pod.
func (c *cluster) feasible(p *pod, n *node, mins []int32) (bool, refusal) {
	if n.unschedulable {
		return false, refusedUnschedulable
	}
	if !n.unlimited {
		if r := fits(p.req, n.alloc, n.used); r != accepted {
			return false, r
		}
	}
	if r := c.fixed(p, n); r != accepted {
		return false, r
	}
	for _, t := range p.prof.anti {
		if d := c.domains[t.key].of[n.idx]; d >= 0 && t.g.byKey[t.key][d] > 0 {
			return false, refusedAntiAffinity
		}
	}
	for i, t := range p.prof.spread {
		d := c.domains[t.key].of[n.idx]
		if d < 0 {
			return false, refusedSpread
		}
		self := int32(0)
		if t.self {
			self = 1
		}
		if t.g.byKey[t.key][d]+self-mins[i] > t.maxSkew {
			return false, refusedSpread
		}
	}
	return true, accepted
}

// spreadMins returns, per DoNotSchedule constraint of the pod, the fewest matching pods in
// any eligible domain, as the scheduler's PodTopologySpread computes it: domains are the
// nodes' values of the key on nodes matching the pod's node affinity (and, with
// nodeTaintsPolicy Honor, whose taints it tolerates, which leaves cordoned nodes out), so
// by default cordoned and drained nodes count, with their zero pods.
func (c *cluster) spreadMins(p *pod) []int32 {
	if len(p.prof.spread) == 0 {
		return nil
	}
	mins := make([]int32, len(p.prof.spread))
	for i := range p.prof.spread {
		t := &p.prof.spread[i]
		counts := t.g.byKey[t.key]
		if (p.prof.anyNode || t.ignoreAffinity) && !t.honourTaints {
			// Every domain counts: the usual case, and the cheap one.
			if len(counts) > int(t.g.totals[t.key]) {
				// More domains than matching pods: one of them is empty.
				continue
			}
			mins[i] = slices.Min(counts)
			continue
		}
		eligible := t.eligible
		if !t.known || t.honourTaints {
			// Without Honor, eligibility depends on fixed things only: compute it once.
			eligible = c.eligibleDomains(p, t)
			t.eligible, t.known = eligible, !t.honourTaints
		}
		if len(eligible) > int(t.g.totals[t.key]) {
			continue
		}
		mins[i] = -1
		for _, dom := range eligible {
			if mins[i] < 0 || counts[dom] < mins[i] {
				mins[i] = counts[dom]
			}
		}
		mins[i] = max(mins[i], 0)
	}
	return mins
}

// eligibleDomains lists the domains of the constraint's key that count for the pod.
func (c *cluster) eligibleDomains(p *pod, t *spreadTerm) []int {
	d := c.domains[t.key]
	seen := make([]bool, d.n)
	out := []int{}
	for _, n := range c.nodes {
		dom := d.of[n.idx]
		if dom < 0 || seen[dom] {
			continue
		}
		switch c.fixed(p, n) {
		case refusedAffinity:
			if !t.ignoreAffinity {
				continue
			}
		case refusedTaint:
			if t.honourTaints {
				continue
			}
		}
		// A cordoned node carries node.kubernetes.io/unschedulable:NoSchedule.
		if n.unschedulable && t.honourTaints {
			continue
		}
		seen[dom] = true
		out = append(out, dom)
	}
	return out
}

// placer puts evicted pods back, as the scheduler would with holdfast drain's queued
// taint: on nodes that will not be drained (or are done) before nodes still queued, which
// would have to move them again. On those, a pod goes first where its workload has no pod
// yet, spreading it, nodes taken round-robin from where the last pod went, so that
// replacements spread and a placement costs about one check. On queued nodes, a pod under
// a budget goes first to a node of a planned wave that still has room in that budget, the
// latest such wave first; failing that, next to a pod of its workload, where it adds no
// node to those its budget's disruptions are spread over (the budget then has that node's
// drain evict them one after the other). Other pods go to the queued node planned last
// that fits them: gathered there, the replacements add the budgets they take to as few
// nodes as possible, which fill up to a wave of their own at the end, where spread over
// many they would make each a node that shares its wave with nothing (in the shape of the
// drain speed test, four services allowing one disruption each and two per node, 8 or 9
// waves spread against 7 gathered).
type placer struct {
	c     *cluster
	tiers [2][]*node
	// cursor is where the next scan of the nodes not queued starts.
	cursor int
}

// newPlacer sorts the schedulable nodes into the two tiers; queued nodes by planned
// order, the last first.
func (c *cluster) newPlacer() *placer {
	pl := &placer{c: c}
	for _, n := range c.nodes {
		if n.unschedulable {
			continue
		}
		t := 0
		if n.queued {
			t = 1
		}
		pl.tiers[t] = append(pl.tiers[t], n)
	}
	slices.SortFunc(pl.tiers[1], func(a, b *node) int { return cmp.Compare(b.rank, a.rank) })
	return pl
}

// place finds a node for the pod and binds it there; it returns false and, per refusal,
// how many nodes refused the pod, when no node fits.
func (pl *placer) place(p *pod) (bool, [refusals]int) {
	c := pl.c
	mins := c.spreadMins(p)
	n := pl.scan(p, mins, true)
	if n == nil {
		n = pl.scan(p, mins, false)
	}
	if n == nil {
		n = pl.room(p, mins)
	}
	if n == nil {
		n = pl.together(p, mins)
	}
	if n == nil {
		n = pl.last(p, mins)
	}
	if n != nil {
		c.bind(p, n.idx)
		return true, [refusals]int{}
	}
	var why [refusals]int
	for _, n := range c.nodes {
		_, r := c.feasible(p, n, mins)
		why[r]++
	}
	return false, why
}

// scan returns the first node not queued, from the cursor on, that fits the pod and,
// when spread, holds no pod of its workload.
func (pl *placer) scan(p *pod, mins []int32, spread bool) *node {
	nodes := pl.tiers[0]
	c := pl.c
	for i := range nodes {
		at := (pl.cursor + i) % len(nodes)
		n := nodes[at]
		if spread && p.wl >= 0 && c.onNode[[2]int32{p.wl, int32(n.idx)}] > 0 {
			continue
		}
		if ok, _ := c.feasible(p, n, mins); ok {
			pl.cursor = (at + 1) % len(nodes)
			return n
		}
	}
	return nil
}

// last returns the queued node planned last that fits the pod.
func (pl *placer) last(p *pod, mins []int32) *node {
	for _, n := range pl.tiers[1] {
		if ok, _ := pl.c.feasible(p, n, mins); ok {
			return n
		}
	}
	return nil
}

// room returns a queued node of the latest planned wave whose budget usage leaves room
// for the pod, holding no pod of its workload, and counts the pod there.
func (pl *placer) room(p *pod, mins []int32) *node {
	c := pl.c
	b := c.budgetOf(p)
	if b < 0 {
		return nil
	}
	for k := len(c.classes) - 1; k >= 0; k-- {
		cl := c.classes[k]
		if cl.alone[b] || cl.used[b]+1 > c.allowed(b) {
			continue
		}
		for i := range cl.nodes {
			at := (cl.cursor + i) % len(cl.nodes)
			n := cl.nodes[at]
			if !n.queued || n.unschedulable || (p.wl >= 0 && c.onNode[[2]int32{p.wl, int32(n.idx)}] > 0) {
				continue
			}
			if ok, _ := c.feasible(p, n, mins); ok {
				cl.cursor = at
				cl.used[b]++
				return n
			}
		}
	}
	return nil
}

// together returns the queued node planned last that holds a pod of the pod's workload
// and fits it, for a workload with a budget.
func (pl *placer) together(p *pod, mins []int32) *node {
	c := pl.c
	if p.wl < 0 || p.budget < 0 {
		return nil
	}
	var best *node
	for _, i := range c.where[p.wl] {
		n := c.nodes[i]
		if !n.queued || (best != nil && n.rank <= best.rank) {
			continue
		}
		if ok, _ := c.feasible(p, n, mins); ok {
			best = n
		}
	}
	return best
}

// describe renders why no node took the pod, as the scheduler's FailedScheduling event
// does: "0/5 nodes are available: 2 cordoned or being drained, 3 with too little cpu".
func describe(total int, why [refusals]int) string {
	var parts []string
	for r := refusedUnschedulable; r < refusals; r++ {
		if why[r] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", why[r], refusalText[r]))
		}
	}
	return fmt.Sprintf("0/%d nodes are available: %s", total, strings.Join(parts, ", "))
}
