package plan

import (
	"math/bits"
	"math/rand/v2"
	"slices"
)

// tabuSteps is how many moves recolour tries for each colour it takes away: on make
// bench-scale's cluster it brings 44 waves down to 35 in about 0.07 s of CPU; ten times
// as many find no fewer.
const tabuSteps = 20_000

// recolour takes colours away from c.classes one at a time, down to least, while a tabu
// search finds the nodes a colouring with one colour fewer in which no two nodes of a
// colour conflict, and first-fit over that colouring's classes keeps to its count. (The
// conflicts are pairwise: a budget allowing two or more can refuse three nodes that fit
// it two by two, and first-fit then needs more colours; the colouring is then left.)
func (c *cluster) recolour(nodes []*node, ds [][]demand, in boundInputs, least int, opts Options) {
	if len(nodes) == 0 || len(in.conflicts) == 0 {
		return
	}
	// The search runs on the nodes' own vertices, 0 to len(nodes)-1.
	at := make([]int, len(in.conflicts))
	set := newBitset(len(in.conflicts))
	for i, n := range nodes {
		at[in.at[n]] = i
		set.add(in.at[n])
	}
	adj := make([][]int32, len(nodes))
	for i, n := range nodes {
		cs := in.conflicts[in.at[n]]
		for w := range cs {
			for word := cs[w] & set[w]; word != 0; word &= word - 1 {
				adj[i] = append(adj[i], int32(at[w*64+bits.TrailingZeros64(word)]))
			}
		}
	}
	colour := make([]int, len(nodes))
	for k, cl := range c.classes {
		for _, n := range cl.nodes {
			colour[at[in.at[n]]] = k
		}
	}
	// A fixed seed: the same cluster gets the same plan.
	r := rand.New(rand.NewPCG(uint64(len(nodes)), uint64(len(c.classes))))
	for len(c.classes) > least {
		k := len(c.classes) - 1
		for i := range colour {
			if colour[i] >= k {
				colour[i] = r.IntN(k)
			}
		}
		if !tabuColour(adj, colour, k, r) {
			return
		}
		byColour := slices.Clone(nodes)
		slices.SortStableFunc(byColour, func(a, b *node) int { return colour[at[in.at[a]]] - colour[at[in.at[b]]] })
		classes := c.firstFit(byColour, ds, opts)
		if len(classes) >= len(c.classes) {
			return
		}
		c.classes = classes
		for k, cl := range c.classes {
			for _, n := range cl.nodes {
				colour[at[in.at[n]]] = k
			}
		}
	}
}

// tabuColour changes colour, k colours over the vertices of adj, until no two adjacent
// vertices share a colour or tabuSteps moves are made, and reports whether it got there.
// Each move recolours a vertex that has a neighbour of its colour with the colour that
// leaves the fewest such pairs; a vertex does not go back to a colour it left for a
// while (the search's tabu), unless that would beat the best count seen.
func tabuColour(adj [][]int32, colour []int, k int, r *rand.Rand) bool {
	n := len(adj)
	// clash[v*k+c] counts v's neighbours of colour c; until[v*k+c] is the move until
	// which v may not take colour c again.
	clash := make([]int32, n*k)
	until := make([]int, n*k)
	pairs := 0
	for v, ns := range adj {
		for _, u := range ns {
			clash[v*k+colour[u]]++
			if colour[u] == colour[v] && int(u) > v {
				pairs++
			}
		}
	}
	best := pairs
	for step := 0; step < tabuSteps && pairs > 0; step++ {
		mv, mc, delta, ties, clashing := -1, -1, 0, 0, 0
		for v := range n {
			own := clash[v*k+colour[v]]
			if own == 0 {
				continue
			}
			clashing++
			for c := range k {
				if c == colour[v] {
					continue
				}
				d := int(clash[v*k+c] - own)
				if until[v*k+c] > step && pairs+d >= best {
					continue
				}
				switch {
				case mv < 0 || d < delta:
					mv, mc, delta, ties = v, c, d, 1
				case d == delta:
					// Ties broken at random, each equally likely.
					ties++
					if r.IntN(ties) == 0 {
						mv, mc = v, c
					}
				}
			}
		}
		if mv < 0 {
			continue
		}
		old := colour[mv]
		colour[mv] = mc
		for _, u := range adj[mv] {
			clash[int(u)*k+old]--
			clash[int(u)*k+mc]++
		}
		pairs += delta
		best = min(best, pairs)
		until[mv*k+old] = step + 1 + r.IntN(10) + clashing*6/10
	}
	return pairs == 0
}
