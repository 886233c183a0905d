package drain

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Candidate is a node of a wave waiting for its turn.
type Candidate struct {
	Node string
	// Pods is how many pods the drain would evict from it now, Free how many of them
	// belong to workloads this drain is not pacing.
	Pods, Free int
	// Busy says which of those pods' workloads is paced by an eviction of this drain on
	// another node, if one is.
	Busy string
	// Uncovered is how many of those pods belong to workloads of which the nodes this
	// drain holds slots for have no pod left for the next eviction, once those that can
	// go now have gone.
	Uncovered int
}

// PickNext returns the index of the candidate to drain next, or -1 when every one would
// only wait (a budget with one disruption to give serves one node at a time, so a node
// whose every workload is paced would only hold a slot). First a node with nothing to
// evict: its slot is back at once, and once drained and back it takes the replacements
// of the evictions that follow, which would otherwise land on nodes still to drain and
// be moved twice. Then the node with the most pods of workloads the nodes holding slots
// have no pod of for their next eviction: once a workload's replacement is Ready, its
// next eviction can only come from a node holding a slot, and with none, it waits for a
// slot to free, a whole pod start lost while the nodes holding them wait on other
// workloads. Then a node whose
// workloads are all free, then one with some pod it can evict now; then the one with
// the fewest pods, ties in the given order: light nodes are done soonest, and back
// sooner to take replacements.
func PickNext(cands []Candidate) int {
	rank := func(c Candidate) int {
		switch {
		case c.Busy == "":
			return 0
		case c.Free > 0:
			return 1
		}
		return 2
	}
	best := -1
	for i, c := range cands {
		if rank(c) == 2 {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := cands[best]
		empty := func(c Candidate) int { return min(c.Pods, 1) }
		if cmp.Or(cmp.Compare(empty(c), empty(b)), cmp.Compare(b.Uncovered, c.Uncovered), cmp.Compare(rank(c), rank(b)), cmp.Compare(c.Pods, b.Pods)) < 0 {
			best = i
		}
	}
	return best
}

// dispatch drains the nodes of a wave, starting each as a slot frees up.
func (d *Drainer) dispatch(ctx context.Context, wave []string) []NodeResult {
	results := make([]NodeResult, len(wave))
	index := make(map[string]int, len(wave))
	for i, n := range wave {
		index[n] = i
	}
	pending := slices.Clone(wave)
	said := map[string]string{}
	var wg sync.WaitGroup
	// draining holds the nodes holding a slot, for candidates.
	var mu sync.Mutex
	draining := map[string]bool{}
	for len(pending) > 0 && ctx.Err() == nil {
		next := 0
		if len(pending) > 1 {
			mu.Lock()
			holding := slices.Collect(maps.Keys(draining))
			mu.Unlock()
			cands := d.candidates(ctx, pending, holding)
			if next = PickNext(cands); next < 0 {
				for _, c := range cands {
					if said[c.Node] != c.Busy {
						said[c.Node] = c.Busy
						d.report(Event{Node: c.Node, Kind: WaitingForSlot, Message: "waiting for its turn: " + c.Busy})
					}
				}
				d.wait(ctx)
				continue
			}
		}
		node := pending[next]
		slot, err := d.acquire(ctx, node)
		if err != nil {
			results[index[node]] = NodeResult{Node: node, Err: stopped(ctx, err)}
			if ctx.Err() != nil {
				break
			}
			pending = slices.Delete(pending, next, next+1)
			continue
		}
		pending = slices.Delete(pending, next, next+1)
		mu.Lock()
		draining[node] = true
		mu.Unlock()
		wg.Go(func() {
			results[index[node]] = d.drainNode(ctx, node, slot)
			mu.Lock()
			delete(draining, node)
			mu.Unlock()
		})
	}
	for _, node := range pending {
		if results[index[node]].Err == nil {
			results[index[node]] = NodeResult{Node: node, Err: context.Cause(ctx)}
		}
	}
	wg.Wait()
	return results
}

// candidates describes the pending nodes for PickNext, from the run's watch of pods;
// holding are the nodes the run holds slots for.
func (d *Drainer) candidates(ctx context.Context, pending, holding []string) []Candidate {
	busy := map[workloadKey]string{}
	// paced says why the workload's next eviction waits, or "" when it can go now.
	paced := func(key workloadKey) string {
		why, seen := busy[key]
		if !seen {
			if open, w, err := d.pacer.open(ctx, d.Client, key); err == nil && !open {
				why = w
			}
			busy[key] = why
		}
		return why
	}
	// A workload is covered for its next eviction when the nodes holding slots have a pod
	// of it left once those that can go now have gone: one of them goes now.
	left := map[workloadKey]int{}
	for _, node := range holding {
		for _, pod := range d.toEvict(node) {
			if key, ok := workloadOf(pod); ok {
				left[key]++
			}
		}
	}
	if d.Pace {
		for key := range left {
			if paced(key) == "" {
				left[key]--
			}
		}
	}
	cands := make([]Candidate, len(pending))
	for i, node := range pending {
		cands[i].Node = node
		for _, pod := range d.toEvict(node) {
			cands[i].Pods++
			key, ok := workloadOf(pod)
			if ok && left[key] <= 0 {
				cands[i].Uncovered++
			}
			if !ok || !d.Pace {
				cands[i].Free++
				continue
			}
			if why := paced(key); why == "" {
				cands[i].Free++
			} else if cands[i].Busy == "" {
				cands[i].Busy = why
			}
		}
	}
	return cands
}

// toEvict lists the node's pods the drain is still to evict, from the run's watch.
func (d *Drainer) toEvict(node string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range d.pods.onNode(node) {
		if pod.DeletionTimestamp == nil && d.classify(pod).Verdict == Evict {
			out = append(out, pod)
		}
	}
	return out
}
