package plan

import (
	"cmp"
	"slices"
)

// boundInputs is what the lower bound reads of the simulation before its first wave:
// each node's demands, each budget's allowance, and which nodes cannot share a wave.
type boundInputs struct {
	demands map[*node][]demand
	allowed map[int]int32
	// at is each node's vertex in conflicts, which holds, for each, the nodes that cannot
	// share a wave with it: together they hold more pods of a budget than it allows at
	// once, or leave a zone-aware budget from two zones.
	at        map[*node]int
	conflicts []bitset
}

func (c *cluster) boundStart(nodes []*node) boundInputs {
	in := boundInputs{demands: make(map[*node][]demand, len(nodes)), allowed: map[int]int32{},
		at: make(map[*node]int, len(nodes)), conflicts: make([]bitset, len(nodes))}
	type holder struct {
		at   int
		pods int32
	}
	holders := map[int][]holder{}
	for i, n := range nodes {
		ds := c.demands(n)
		in.demands[n], in.at[n], in.conflicts[i] = ds, i, newBitset(len(nodes))
		for _, d := range ds {
			if _, ok := in.allowed[d.budget]; !ok {
				in.allowed[d.budget] = c.allowed(d.budget)
			}
			holders[d.budget] = append(holders[d.budget], holder{i, d.pods})
		}
	}
	// Each pair of nodes sharing a budget, the second tried next to the first as a wave
	// tries it.
	for b, hs := range holders {
		for x, u := range hs {
			zone, taken := c.zoneOf(b, nodes[u.at])
			for _, v := range hs[x+1:] {
				if !c.fitsBudget(nodes[v.at], demand{budget: b, pods: v.pods}, u.pods, u.pods > in.allowed[b], zone, taken) {
					in.conflicts[u.at].add(v.at)
					in.conflicts[v.at].add(u.at)
				}
			}
		}
	}
	return in
}

// lowerBound computes the fewest waves the nodes need: ceil(nodes/MaxConcurrent); for
// each budget allowing a disruptions: one wave for each node holding more than a of its
// ready pods (such a node shares its wave with no other node of the budget), plus
// ceil(p/a) for the p pods on the other nodes; the size of a set of nodes of which no
// two can share a wave; and ceil(nodes/w) when no wave can hold more than w nodes (see
// structure).
func (c *cluster) lowerBound(nodes []*node, in boundInputs, opts Options) LowerBound {
	if len(nodes) == 0 {
		return LowerBound{}
	}
	lb := LowerBound{Waves: 1}
	if opts.MaxConcurrent > 0 {
		lb.Waves = (len(nodes) + opts.MaxConcurrent - 1) / opts.MaxConcurrent
	}
	type load struct {
		nodes, big int
		pods       int32
	}
	loads := map[int]*load{}
	for _, n := range nodes {
		for _, d := range in.demands[n] {
			l := loads[d.budget]
			if l == nil {
				l = &load{}
				loads[d.budget] = l
			}
			l.nodes++
			if d.pods > in.allowed[d.budget] {
				l.big++
			} else {
				l.pods += d.pods
			}
		}
	}
	var bounds []BudgetBound
	for b, l := range loads {
		a := in.allowed[b]
		if a <= 0 {
			continue
		}
		waves := l.big + int((l.pods+a-1)/a)
		if waves < 2 || waves < lb.Waves {
			continue
		}
		ref := c.budgetRef(b)
		bb := BudgetBound{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, Nodes: l.nodes, Allowed: a, Waves: waves}
		if waves > lb.Waves {
			lb.Waves, bounds = waves, bounds[:0]
		}
		bounds = append(bounds, bb)
	}
	if len(nodes) > lb.Waves {
		// Only more than one node per wave leaves room for a better bound.
		switch clique, wave := in.structure(nodes, lb.Waves, opts); {
		case clique > lb.Waves && clique >= ceilDiv(len(nodes), wave):
			lb.Waves, lb.Conflicting, bounds = clique, clique, nil
		case ceilDiv(len(nodes), wave) > lb.Waves:
			lb.Waves, lb.LargestWave, bounds = ceilDiv(len(nodes), wave), wave, nil
		}
	}
	slices.SortFunc(bounds, func(a, b BudgetBound) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
	})
	lb.BudgetsAtBound = len(bounds)
	lb.Budgets = bounds[:min(len(bounds), maxBoundBudgets)]
	return lb
}

// structure returns, for the nodes' conflicts, the size of a set of nodes no two of
// which can share a wave, and the most nodes one wave can hold, or a number of them
// that bounds the waves no better than least.
//
// Every node of the first set needs a wave of its own, so its size is a lower bound; it
// exceeds the budgets' own when each node spends several budgets (four budgets allowing
// one disruption, nodes holding three of them: any two share two, and each goes alone,
// where each budget alone asks for only as many waves as nodes holding it).
//
// The second is a bound on the waves' sizes: a wave is a set of nodes no two of which
// conflict (a set that fits the budgets fits them pair by pair), so it holds at most as
// many nodes as the largest such set, and the waves, which hold every node once, number
// at least ceil(nodes/that). On a large cluster where most pairs of nodes share a budget
// allowing one disruption, it is far above the first: 334 nodes of about thirty pods
// each, 18 at most pairwise conflicting, and no 16 of them that can share a wave, so at
// least 23 waves.
//
// Both sets are found by one branch and bound, on the conflicts and on their
// complement; past its work limit, the first is the largest set found (still a bound),
// and the second, which must be the largest to bound anything, is left to MaxConcurrent.
func (in boundInputs) structure(nodes []*node, least int, opts Options) (clique, wave int) {
	set := newBitset(len(in.conflicts))
	for _, n := range nodes {
		set.add(in.at[n])
	}
	clique, _ = largestClique(in.conflicts, set, len(nodes)+1)
	least = max(least, clique)
	wave = len(nodes)
	if opts.MaxConcurrent > 0 {
		wave = min(wave, opts.MaxConcurrent)
	}
	fits := make([]bitset, len(in.conflicts))
	for i, cs := range in.conflicts {
		fits[i] = newBitset(len(in.conflicts))
		for j := range cs {
			fits[i][j] = set[j] &^ cs[j]
		}
		fits[i].remove(i)
	}
	// A wave of ceil(nodes/least) nodes or more bounds nothing better than least.
	if largest, exact := largestClique(fits, set, ceilDiv(len(nodes), least)); exact {
		wave = min(wave, largest)
	}
	return clique, wave
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
