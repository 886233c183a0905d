package plan

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// drainWaves plans the named nodes' drain, changing the simulation's state as it goes.
//
// Waves are packed greedily: each wave takes the remaining nodes in order while no
// budget's disruptions on the wave's nodes exceed what it allows (a node holding more pods
// of a budget than it allows may go, alone for that budget: the drain then evicts them
// as replacements become Ready), up to MaxConcurrent. The wave's pods are then re-placed;
// a node whose pods do not all fit leaves the wave, and if it does not fit alone either,
// it is blocked.
func (c *cluster) drainWaves(names []string, opts Options) *Plan {
	plan := &Plan{Waves: []Wave{}, Blocked: []Blocker{}}
	var targets []*node
	for _, name := range names {
		n := c.nodes[c.index[name]]
		n.queued = true
		targets = append(targets, n)
	}
	c.filter(targets, opts.DrainFilter)
	blocked := map[*node][]Reason{}
	var remaining []*node
	for _, n := range targets {
		if rs := c.staticReasons(n, opts); len(rs) > 0 {
			blocked[n] = rs
			n.queued = false
		} else {
			remaining = append(remaining, n)
		}
	}
	remaining = c.unplaceable(remaining, opts, blocked)
	// The bound counts the pods each node holds now, before any wave re-places others
	// onto it, and only the nodes the plan drains in the end: a node found blocked on
	// the way needs no wave.
	start := c.boundStart(remaining)
	bound := c.lowerBound(remaining, start, opts)
	planned := len(remaining)
	remaining = c.order(remaining, start, bound.Waves, opts)
	for i, n := range remaining {
		n.rank = i
	}
	// Every round drains a wave or blocks a node, so the loop ends.
	for len(remaining) > 0 {
		wave, moves := c.nextWave(remaining, opts, len(plan.Waves), blocked)
		if len(wave) > 0 {
			plan.Waves = append(plan.Waves, c.record(wave, moves, opts.DrainFilter))
		}
		for n := range blocked {
			// A node left as it is takes replacements like any other.
			n.queued = false
		}
		// Drained nodes are not queued any more either.
		remaining = slices.DeleteFunc(remaining, func(n *node) bool { return !n.queued })
	}
	var drained []*node
	for _, n := range targets {
		if rs, ok := blocked[n]; ok {
			sortReasons(rs)
			plan.Blocked = append(plan.Blocked, Blocker{Node: n.name, Reasons: rs})
		} else {
			drained = append(drained, n)
		}
	}
	plan.LowerBound = bound
	if len(drained) < planned {
		plan.LowerBound = c.lowerBound(drained, start, opts)
	}
	return plan
}

// unplaceable blocks, before any wave, the nodes with a pod whose replacement fits on no
// other node even with every other node still up (a one-per-node companion, without
// Uncordon), and returns the others. Left among the others, each would be planned as if it
// would drain: its budgets, such as a companion's allowing one eviction in the whole
// cluster, would spread the nodes that do drain over as many waves as it has nodes, and
// replacements would go to it last, as to a node still queued.
func (c *cluster) unplaceable(nodes []*node, opts Options, blocked map[*node][]Reason) []*node {
	// One placer serves every try: each node is cordoned only for its own, and the placer
	// checks that as it goes.
	pl := c.newPlacer()
	return slices.DeleteFunc(nodes, func(n *node) bool {
		undo, failed := c.evict([]*node{n}, opts, pl)
		undo.revert()
		if len(failed) == 0 {
			return false
		}
		blocked[n] = c.roomReasons(failed, 0)
		n.queued = false
		return true
	})
}

// demand is how many ready pods of one budget a node would lose.
type demand struct {
	budget int
	pods   int32
}

// demands lists, per budget, the node's ready pods a drain would evict.
func (c *cluster) demands(n *node) []demand {
	if n.stale || n.demands == nil {
		n.demands, n.stale = c.demandsOf(n), false
	}
	return n.demands
}

func (c *cluster) demandsOf(n *node) []demand {
	out := []demand{}
	for _, p := range n.pods {
		if p.skip || !p.ready {
			continue
		}
		b := c.budgetOf(p)
		if b < 0 || c.surges(b) {
			// A surge pays for its own eviction: the budget is not drawn on.
			continue
		}
		i := slices.IndexFunc(out, func(d demand) bool { return d.budget == b })
		if i < 0 {
			out = append(out, demand{budget: b})
			i = len(out) - 1
		}
		out[i].pods++
	}
	return out
}

// nextWave picks the next wave's nodes among remaining and re-places their pods; nodes
// found blocked on the way are added to blocked. done is the number of waves before.
func (c *cluster) nextWave(remaining []*node, opts Options, done int, blocked map[*node][]Reason) ([]*node, []moved) {
	used := map[int]int32{}
	alone := map[int]bool{}
	// zones are the zone each zone-aware budget's pods leave from in this wave.
	zones := map[int]string{}
	var wave []*node
	for _, n := range remaining {
		if opts.MaxConcurrent > 0 && len(wave) == opts.MaxConcurrent {
			break
		}
		ds := c.demands(n)
		if rs := c.exhausted(ds, done); len(rs) > 0 {
			blocked[n] = rs
			continue
		}
		if !c.fitsBudgets(n, ds, used, alone, zones) {
			continue
		}
		c.admit(n, ds, used, alone, zones)
		wave = append(wave, n)
	}
	for len(wave) > 0 {
		undo, failed := c.evict(wave, opts, nil)
		if len(failed) == 0 {
			return wave, undo.moves
		}
		undo.revert()
		if len(wave) == 1 {
			blocked[wave[0]] = c.roomReasons(failed, done)
			return nil, nil
		}
		// The nodes whose pods did not fit try again in a later wave, alone if need be.
		var fitting []*node
		for _, n := range wave {
			if !slices.ContainsFunc(failed, func(f homeless) bool { return f.from == n }) {
				fitting = append(fitting, n)
			}
		}
		if len(fitting) == 0 {
			fitting = wave[:1]
		}
		wave = fitting
	}
	return nil, nil
}

// fitsBudgets reports whether a node's demands fit the budgets next to the wave's.
func (c *cluster) fitsBudgets(n *node, ds []demand, used map[int]int32, alone map[int]bool, zones map[int]string) bool {
	for _, d := range ds {
		zone, taken := zones[d.budget]
		if !c.fitsBudget(n, d, used[d.budget], alone[d.budget], zone, taken) {
			return false
		}
	}
	return true
}

// fitsBudget reports whether a node's pods of one budget fit next to the wave's: used of
// them, alone when a node of the wave holds more than the budget allows, and, when taken,
// the zone they leave from. A zone-aware budget's pods leave from one zone per wave, up to
// that zone's limit.
func (c *cluster) fitsBudget(n *node, d demand, used int32, alone bool, zone string, taken bool) bool {
	if alone {
		return false
	}
	allowed := c.allowed(d.budget)
	if z, ok := c.zoneOf(d.budget, n); ok {
		if taken && z != zone {
			return false
		}
		allowed = c.zoneAllowed(d.budget, z)
	}
	// More pods than the budget allows at once: only as the wave's one node with pods of
	// that budget, evicted one by one as replacements become Ready.
	return used+d.pods <= allowed || used == 0
}

// admit adds a node's demands to a wave's.
func (c *cluster) admit(n *node, ds []demand, used map[int]int32, alone map[int]bool, zones map[int]string) {
	for _, d := range ds {
		if zone, ok := c.zoneOf(d.budget, n); ok {
			zones[d.budget] = zone
		}
		used[d.budget] += d.pods
		if d.pods > c.allowed(d.budget) {
			alone[d.budget] = true
		}
	}
}

// order sorts the nodes for the greedy waves by a first-fit colouring of their budget
// conflicts, computed on the cluster as it is now. Nodes are coloured in the order of a
// maximum cardinality search over shared budgets (next, the node sharing budgets with the
// most nodes already coloured): for conflicts that form a chordal graph, as interval-like
// placements do, first-fit in that order uses the fewest colours possible. Then, for the
// others, the colouring is improved by recolouring in reverse (see recolourings), then by
// a tabu search over the conflicts in (see recolour), down to least colours at best.
func (c *cluster) order(nodes []*node, in boundInputs, least int, opts Options) []*node {
	ds := make([][]demand, len(c.nodes))
	holders := map[int][]*node{}
	for _, n := range nodes {
		ds[n.idx] = c.demands(n)
		for _, d := range ds[n.idx] {
			holders[d.budget] = append(holders[d.budget], n)
		}
	}
	order := make([]*node, 0, len(nodes))
	weight := make([]int, len(c.nodes))
	visited := make([]bool, len(c.nodes))
	// buckets[w] holds nodes of weight w, possibly stale, first come first served: a
	// bucket queue for the search, which keeps the nodes' order among equals.
	buckets := [][]*node{slices.Clone(nodes)}
	heads := []int{0}
	for top := 0; top >= 0; {
		if heads[top] == len(buckets[top]) {
			top--
			continue
		}
		n := buckets[top][heads[top]]
		heads[top]++
		if visited[n.idx] || weight[n.idx] != top {
			continue
		}
		visited[n.idx] = true
		order = append(order, n)
		for _, d := range ds[n.idx] {
			for _, o := range holders[d.budget] {
				if visited[o.idx] {
					continue
				}
				weight[o.idx]++
				w := weight[o.idx]
				for len(buckets) <= w {
					buckets, heads = append(buckets, nil), append(heads, 0)
				}
				buckets[w] = append(buckets[w], o)
				top = max(top, w)
			}
		}
	}
	c.classes = c.firstFit(order, ds, opts)
	// Culberson's iterated greedy: first-fit over the classes taken in reverse never
	// needs more colours than the classes it starts from, and often fewer.
	for range recolourings {
		if len(c.classes) <= least {
			break
		}
		var again []*node
		for _, cl := range slices.Backward(c.classes) {
			again = append(again, cl.nodes...)
		}
		if classes := c.firstFit(again, ds, opts); len(classes) <= len(c.classes) {
			c.classes = classes
		}
	}
	c.recolour(nodes, ds, in, least, opts)
	for k, cl := range c.classes {
		for _, n := range cl.nodes {
			n.class = k
		}
	}
	slices.SortStableFunc(order, func(a, b *node) int { return cmp.Compare(a.class, b.class) })
	return order
}

// recolourings is how many times order recolours the nodes: at 1,000 nodes of 30 pods,
// each under a budget allowing one disruption, the colours come down from 52 to 43 in 20
// rounds, slower after.
const recolourings = 20

// firstFit colours the nodes in order: each takes the first class its demands fit.
func (c *cluster) firstFit(order []*node, ds [][]demand, opts Options) []*class {
	var classes []*class
	for _, n := range order {
		k := slices.IndexFunc(classes, func(cl *class) bool {
			return (opts.MaxConcurrent == 0 || len(cl.nodes) < opts.MaxConcurrent) && c.fitsBudgets(n, ds[n.idx], cl.used, cl.alone, cl.zones)
		})
		if k < 0 {
			k = len(classes)
			classes = append(classes, &class{used: map[int]int32{}, alone: map[int]bool{}, zones: map[int]string{}})
		}
		c.admit(n, ds[n.idx], classes[k].used, classes[k].alone, classes[k].zones)
		classes[k].nodes = append(classes[k].nodes, n)
	}
	return classes
}

// class is one colour of the planned order: nodes expected to drain in one wave, and
// what they take from each budget.
type class struct {
	nodes []*node
	used  map[int]int32
	alone map[int]bool
	// zones are the zone each zone-aware budget's pods leave from.
	zones map[int]string
	// cursor is where the placer looks first among nodes.
	cursor int
}

// exhausted explains budgets that earlier waves left with nothing to give.
func (c *cluster) exhausted(ds []demand, done int) []Reason {
	var out []Reason
	for _, d := range ds {
		if c.allowed(d.budget) > 0 {
			continue
		}
		ref := c.budgetRef(d.budget)
		out = append(out, Reason{
			Type: BudgetExhausted, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name,
			Message: fmt.Sprintf("after wave %d, %d of its pods cannot run anywhere, so it allows no disruption", done, c.lost[d.budget]),
		})
	}
	return out
}

// homeless is an evicted pod that fits nowhere.
type homeless struct {
	pod  *pod
	from *node
	why  [refusals]int
}

// moved records a change to the simulation so that a wave that does not fit can be taken
// back.
type moved struct {
	pod   *pod
	from  int
	ready bool
	lost  int // the budget charged for a pod not re-placed, or -1
}

type undoLog struct {
	c     *cluster
	nodes []*node
	moves []moved
}

// evict drains the wave's nodes in the simulation: their pods are taken off and placed
// elsewhere. With Uncordon, pods that fit nowhere during the wave wait for its nodes to
// come back. It returns the pods that fit nowhere. pl places the pods, or, when nil, a
// placer made for the wave.
func (c *cluster) evict(wave []*node, opts Options, pl *placer) (*undoLog, []homeless) {
	u := &undoLog{c: c, nodes: wave}
	var evicted []*pod
	var from []*node
	for _, n := range wave {
		n.unschedulable, n.queued = true, false
		for _, p := range slices.Clone(n.pods) {
			if p.skip {
				continue
			}
			u.moves = append(u.moves, moved{pod: p, from: n.idx, ready: p.ready, lost: -1})
			c.unbind(p)
			if p.bare {
				// Forced: nothing recreates it.
				m := &u.moves[len(u.moves)-1]
				if b := c.budgetOf(p); b >= 0 && p.ready {
					c.lost[b]++
					m.lost = b
				}
				p.ready = false
				continue
			}
			evicted = append(evicted, p)
			from = append(from, n)
		}
	}
	var failed []homeless
	if pl == nil {
		pl = c.newPlacer()
	}
	var waiting []int
	for i, p := range evicted {
		if ok, why := pl.place(p); !ok {
			if opts.Uncordon {
				waiting = append(waiting, i)
				continue
			}
			failed = append(failed, homeless{pod: p, from: from[i], why: why})
		}
	}
	if len(waiting) > 0 {
		for _, n := range wave {
			n.unschedulable = false
		}
		pl := c.newPlacer()
		for _, i := range waiting {
			if ok, why := pl.place(evicted[i]); !ok {
				failed = append(failed, homeless{pod: evicted[i], from: from[i], why: why})
			}
		}
		for _, n := range wave {
			n.unschedulable = true
		}
	}
	for _, n := range wave {
		n.unschedulable = !opts.Uncordon
	}
	return u, failed
}

// revert takes the wave back: every pod returns to its node, which is queued again.
func (u *undoLog) revert() {
	c := u.c
	for i := len(u.moves) - 1; i >= 0; i-- {
		m := u.moves[i]
		if m.pod.node >= 0 {
			c.unbind(m.pod)
		}
		c.bind(m.pod, m.from)
		m.pod.ready = m.ready
		if m.lost >= 0 {
			c.lost[m.lost]--
		}
	}
	for _, n := range u.nodes {
		n.unschedulable, n.queued = n.obj.Spec.Unschedulable, true
	}
}

// roomReasons explains the pods of a node that fit nowhere.
func (c *cluster) roomReasons(failed []homeless, done int) []Reason {
	var out []Reason
	after := ""
	if done > 0 {
		after = fmt.Sprintf("after wave %d, ", done)
	}
	for _, f := range failed {
		p := f.pod
		ref := p.object()
		r := Reason{Type: NoRoom, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
		r.Message = after + "its replacement fits on no other node: " + describe(len(c.nodes), f.why)
		if p.prof.companion {
			r.Type = CompanionPending
			r.Message = after + fmt.Sprintf("%s %s runs one pod per node, so the replacement stays Pending while the node is drained, until it is uncordoned (%s)",
				p.workload.Kind, p.workload.Name, describe(len(c.nodes), f.why))
		}
		if !slices.ContainsFunc(out, func(o Reason) bool { return o.Kind == r.Kind && o.Name == r.Name && o.Namespace == r.Namespace }) {
			out = append(out, r)
		}
	}
	return out
}

// record describes a wave that fits: its nodes, where its pods went, and the capacity
// each workload keeps. ready is each workload's ready pods before the wave.
func (c *cluster) record(wave []*node, moves []moved, f availability.DrainFilter) Wave {
	w := Wave{Nodes: make([]string, len(wave)), Capacity: []Capacity{}, Moves: make([]Move, len(moves))}
	for i, n := range wave {
		w.Nodes[i] = n.name
	}
	slices.Sort(w.Nodes)
	evicted := map[int32]int32{}
	// budget is the budget of the workload's evicted pods; pods under several budgets
	// never get this far.
	budget := map[int32]int{}
	for i, m := range moves {
		p := m.pod
		w.Moves[i] = Move{Namespace: p.namespace, Pod: p.name, From: c.nodes[m.from].name}
		if p.node >= 0 {
			w.Moves[i].To = c.nodes[p.node].name
		}
		if m.ready && p.wl >= 0 {
			evicted[p.wl]++
			budget[p.wl] = c.budgetOf(p)
		}
	}
	allows := map[int]int32{}
	for wl, lost := range evicted {
		wk := c.m.Workloads[wl]
		surged := c.surges(budget[wl])
		switch b := budget[wl]; {
		case surged:
			lost = 0
		case b >= 0:
			// The budget lets only this many go before replacements are Ready.
			allows[b] = max(0, c.allowed(b))
			lost = min(lost, allows[b])
		}
		w.Capacity = append(w.Capacity, Capacity{Kind: wk.Kind, Namespace: wk.Namespace, Name: wk.Name,
			Desired: wk.Desired, Ready: c.ready[wl] - lost, Evicted: evicted[wl], Surged: surged})
	}
	slices.SortFunc(w.Capacity, func(a, b Capacity) int {
		// a.Ready/a.Desired < b.Ready/b.Desired, without division.
		return cmp.Or(cmp.Compare(int64(a.Ready)*int64(b.Desired), int64(b.Ready)*int64(a.Desired)),
			cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for b, n := range allows {
		w.Allowances = append(w.Allowances, Allowance{Budget: c.budgetRef(b), Allows: n})
	}
	slices.SortFunc(w.Allowances, func(a, b Allowance) int {
		return cmp.Or(cmp.Compare(a.Budget.Kind, b.Budget.Kind), cmp.Compare(a.Budget.Namespace, b.Budget.Namespace), cmp.Compare(a.Budget.Name, b.Budget.Name))
	})
	w.Steps = c.steps(&w, f)
	return w
}

// filter applies the drain's rules to the target nodes' pods: those it leaves stay where
// they are (skip), the others are evicted or refuse the node; an orphaned DaemonSet pod
// that --force lets go is lost like a pod with no controller.
func (c *cluster) filter(targets []*node, f availability.DrainFilter) {
	for _, n := range targets {
		for _, p := range n.pods {
			v := f.Classify(p.asPod(), c.m.DaemonSetExists)
			p.skip = v.Verdict == availability.DrainSkip
			if v.Verdict == availability.DrainEvict && v.Rule == availability.RuleNoController {
				p.bare = true
			}
		}
	}
}

// staticReasons lists what stops the node's drain before any wave: the Eviction API's
// answer for each pod as the snapshot stands, and pods the drain refuses to evict.
func (c *cluster) staticReasons(n *node, opts Options) []Reason {
	var out []Reason
	add := func(r Reason) {
		if !slices.ContainsFunc(out, func(o Reason) bool {
			return o.Type == r.Type && o.Kind == r.Kind && o.Namespace == r.Namespace && o.Name == r.Name
		}) {
			out = append(out, r)
		}
	}
	for _, p := range n.pods {
		if p.skip {
			continue
		}
		ref := p.object()
		for _, refusal := range opts.Refusals(p.asPod(), c.m.DaemonSetExists) {
			add(Reason{Type: ReasonType(refusal.Rule), Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, Permanent: true,
				Message: refusal.Reason})
		}
		if r, ok := c.evictionReason(p); ok {
			add(r)
		}
	}
	return out
}

// evictionReason turns a refusal of the Eviction API for the pod into a Reason, in the
// oracle's words.
func (c *cluster) evictionReason(p *pod) (Reason, bool) {
	ev := c.m.Eviction(p.member)
	if ev.Allowed {
		return Reason{}, false
	}
	r := Reason{Type: ReasonType(ev.Reason), Message: ev.Message, Permanent: ev.Permanent}
	if b := countedBudget(p, ev.Budget); b != nil && ev.Reason == availability.ReasonPolicyHeld {
		if c.surges(c.budgets[b]) {
			// The operator starts an extra pod beside the Deployment first; the
			// eviction goes through once that pod is Ready.
			return Reason{}, false
		}
	}
	switch {
	case ev.Budget == nil || ev.Reason == availability.ReasonUnhealthyPod:
		// The pod itself: under several budgets, or unready under a short budget.
		ref := p.object()
		r.Kind, r.Namespace, r.Name = ref.Kind, ref.Namespace, ref.Name
	default:
		r.Kind, r.Namespace, r.Name = snapshot.KindPodDisruptionBudget, ev.Budget.PDB.Namespace, ev.Budget.PDB.Name
	}
	return r, true
}

// countedBudget finds, among the pod's own budgets, the model's budget behind an
// eviction's count, or nil.
func countedBudget(p *pod, n *availability.Count) *availability.Budget {
	if n == nil {
		return nil
	}
	for _, b := range p.member.Budgets {
		if b.PDB == n.PDB {
			return b
		}
	}
	return nil
}
