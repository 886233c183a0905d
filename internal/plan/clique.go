package plan

import (
	"cmp"
	"math/bits"
	"slices"
)

// bitset is a set of small integers, one bit each.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (s bitset) add(i int)      { s[i/64] |= 1 << (i % 64) }
func (s bitset) remove(i int)   { s[i/64] &^= 1 << (i % 64) }
func (s bitset) has(i int) bool { return s[i/64]&(1<<(i%64)) != 0 }

func (s bitset) len() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// first returns the smallest member, or -1 for an empty set.
func (s bitset) first() int {
	for i, w := range s {
		if w != 0 {
			return i*64 + bits.TrailingZeros64(w)
		}
	}
	return -1
}

// and returns s ∩ o as a new set.
func (s bitset) and(o bitset) bitset {
	out := make(bitset, len(s))
	for i := range s {
		out[i] = s[i] & o[i]
	}
	return out
}

// cliqueWork caps the words a clique search may read, about a third of a second: past
// it, the search returns the largest clique found so far and says it did not finish.
// The largest wave of make bench-scale's cluster takes half of it.
const cliqueWork = 100_000_000

// largestClique returns the size of the largest set of members of cand that are
// pairwise adjacent in adj, and whether the search finished within cliqueWork and
// before finding one of enough members. When it did not, the size is that of the
// largest clique found, a clique but maybe not the largest. The search is a branch and bound: vertices are taken in the order of a greedy
// colouring of the candidates, and a branch ends when its clique plus the colours left
// (each colour holds at most one vertex of a clique) cannot beat the best one found.
func largestClique(adj []bitset, cand bitset, enough int) (int, bool) {
	// Relabelled by degree among the candidates, highest first: the colouring then puts
	// the most connected vertices in the first colours, which are searched last, and
	// the bound prunes more.
	var vs []int
	for v := range adj {
		if cand.has(v) {
			vs = append(vs, v)
		}
	}
	deg := make([]int, len(adj))
	for _, v := range vs {
		deg[v] = adj[v].and(cand).len()
	}
	slices.SortStableFunc(vs, func(a, b int) int { return cmp.Compare(deg[b], deg[a]) })
	g := make([]bitset, len(vs))
	for i, v := range vs {
		g[i] = newBitset(len(vs))
		for j, u := range vs {
			if adj[v].has(u) {
				g[i].add(j)
			}
		}
	}
	s := &cliqueSearch{adj: g, work: cliqueWork, enough: enough}
	// A clique taken greedily, by degree, starts the search off, or ends it when it is
	// enough.
	all, greedy := newBitset(len(vs)), newBitset(len(vs))
	for i := range vs {
		all.add(i)
		greedy.add(i)
	}
	for v := greedy.first(); v >= 0; v = greedy.first() {
		s.best++
		greedy = greedy.and(g[v])
	}
	if s.best < enough {
		s.expand(0, all)
	}
	return s.best, s.work >= 0 && s.best < enough
}

type cliqueSearch struct {
	adj  []bitset
	best int
	// work is what is left of cliqueWork; below zero the search stops, as it does once
	// it has found a clique of enough members.
	work, enough int
	// levels hold each depth's buffers, reused by every branch at that depth.
	levels []*cliqueLevel
}

type cliqueLevel struct {
	next, left, q bitset
	order, colour []int
}

func (s *cliqueSearch) level(depth int) *cliqueLevel {
	for len(s.levels) <= depth {
		n := len(s.adj)
		s.levels = append(s.levels, &cliqueLevel{next: newBitset(n), left: newBitset(n), q: newBitset(n)})
	}
	return s.levels[depth]
}

// expand grows a clique of size members with the candidates p, all adjacent to every
// member.
func (s *cliqueSearch) expand(size int, p bitset) {
	l := s.level(size)
	order, colour := s.colour(p, l)
	for i := len(order) - 1; i >= 0 && s.work >= 0 && s.best < s.enough; i-- {
		if size+colour[i] <= s.best {
			return
		}
		v := order[i]
		empty := true
		for w := range p {
			l.next[w] = p[w] & s.adj[v][w]
			empty = empty && l.next[w] == 0
		}
		if empty {
			s.best = max(s.best, size+1)
		} else {
			s.expand(size+1, l.next)
		}
		p.remove(v)
	}
}

// colour colours p greedily, each colour a set of pairwise non-adjacent vertices, and
// returns the vertices by colour with each one's colour number, in l's buffers.
func (s *cliqueSearch) colour(p bitset, l *cliqueLevel) ([]int, []int) {
	l.order, l.colour = l.order[:0], l.colour[:0]
	copy(l.left, p)
	for k := 1; l.left.first() >= 0; k++ {
		copy(l.q, l.left)
		for v := l.q.first(); v >= 0; v = l.q.first() {
			l.left.remove(v)
			l.q.remove(v)
			for i := range l.q {
				l.q[i] &^= s.adj[v][i]
			}
			s.work -= len(l.q)
			l.order, l.colour = append(l.order, v), append(l.colour, k)
		}
	}
	return l.order, l.colour
}
