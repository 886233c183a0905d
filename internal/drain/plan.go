package drain

import "github.com/holdfast-dev/holdfast/internal/plan"

// WavesOf turns a plan into waves for Run: the plan's, then the nodes it found blocked, in
// a wave of their own, so that the drain still cordons them, evicts what it can and says,
// from the cluster as it is then, what stops each.
func WavesOf(p *plan.Plan) [][]string {
	var waves [][]string
	for _, w := range p.Waves {
		waves = append(waves, w.Nodes)
	}
	var blocked []string
	for _, b := range p.Blocked {
		blocked = append(blocked, b.Node)
	}
	if len(blocked) > 0 {
		waves = append(waves, blocked)
	}
	return waves
}

// InOneWave puts the waves' nodes, in order, into one wave. Run then starts each node as
// soon as a slot is free and its workloads are (PickNext), instead of waiting for the
// whole of the previous wave: pacing and the budgets keep the plan's promise that no
// budget goes below its floor, and a node is not held back by the slowest node of the
// wave before it (on the testbed's rolling drain of test/e2e/drain/speed, about a third
// less time than the waves in turn).
func InOneWave(waves [][]string) [][]string {
	var all []string
	for _, w := range waves {
		all = append(all, w...)
	}
	return [][]string{all}
}
