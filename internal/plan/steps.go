package plan

import (
	"fmt"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// Action is what a drain does with one pod of a wave's nodes.
type Action string

const (
	// ActionEvict: the pod is evicted as the wave starts.
	ActionEvict Action = "evict"
	// ActionWait: the pod is evicted once an earlier replacement is Ready (its budget
	// has nothing left in this wave, or refuses for now).
	ActionWait Action = "wait"
	// ActionSurge: the pod's DisruptionPolicy starts an extra pod first; the eviction
	// goes through once that pod is Ready.
	ActionSurge Action = "surge"
	// ActionSkip: the drain leaves the pod where it is (a DaemonSet's, a mirror pod).
	ActionSkip Action = "skip"
	// ActionBlocked and ActionRefused: the pod stops the drain, by its budget or by the
	// drain's rules.
	ActionBlocked Action = "blocked"
	ActionRefused Action = "refused"
)

// Step is what a drain does with one pod of a wave's nodes, and why: the one answer to
// "may this pod go in this wave", which plan drain prints and holdfast drain's dry run
// shows.
type Step struct {
	Node      string `json:"node"`
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	// Workload is KIND/NAME of the pod's controller, "" without one.
	Workload string `json:"workload,omitempty"`
	Action   Action `json:"action"`
	Why      string `json:"why,omitempty"`
}

// steps says what the drain does with each pod of wave w's nodes: the eviction oracle's
// answer for the pod as the snapshot stands, then what the wave lets each budget evict at
// once (w.Allowances), spent by the wave's pods in turn. Within a wave a pod beyond its
// budget waits for pacing; between waves the budgets are whole again, because pacing
// holds each node until its replacements are Ready.
func (c *cluster) steps(w *Wave, f availability.DrainFilter) []Step {
	left := map[snapshot.ObjectRef]*allowance{}
	for _, a := range w.Allowances {
		left[a.Budget] = &allowance{allows: a.Allows, left: a.Allows}
	}
	surged := map[availability.WorkloadRef]bool{}
	for _, cp := range w.Capacity {
		surged[availability.WorkloadRef{Kind: cp.Kind, Namespace: cp.Namespace, Name: cp.Name}] = cp.Surged
	}
	var out []Step
	for _, name := range w.Nodes {
		node, ok := c.m.Node(name)
		if !ok {
			continue
		}
		for _, m := range node.Members {
			if m.Pod == nil || m.Terminating {
				continue
			}
			s := Step{Node: name, Namespace: m.Namespace, Pod: m.Name}
			if m.Workload != nil {
				s.Workload = m.Workload.Kind + "/" + m.Workload.Name
			}
			s.Action, s.Why = c.step(f, m, left, m.Workload != nil && surged[m.Workload.WorkloadRef])
			out = append(out, s)
		}
	}
	return out
}

// allowance is a budget's Allowance in a wave, and what is left of it.
type allowance struct{ allows, left int32 }

// step is what the drain does with one pod, spending its budget in left. surged is
// whether the plan counts on the pod's DisruptionPolicy surging its workload.
func (c *cluster) step(f availability.DrainFilter, m *availability.Member, left map[snapshot.ObjectRef]*allowance, surged bool) (Action, string) {
	v := f.Classify(m.Pod, c.m.DaemonSetExists)
	switch v.Verdict {
	case availability.DrainSkip:
		return ActionSkip, v.Reason
	case availability.DrainRefuse:
		return ActionRefused, v.Reason
	}
	ev := c.m.Eviction(m)
	switch {
	case surged && ev.Reason == availability.ReasonPolicyHeld:
		return ActionSurge, fmt.Sprintf("DisruptionPolicy %s starts an extra pod beside %s %s first: the budget lets the eviction through once that pod is Ready",
			availability.ManagedBy(ev.Budget.PDB), m.Workload.Kind, m.Workload.Name)
	case !ev.Allowed && ev.Permanent:
		return ActionBlocked, ev.Message
	case !ev.Allowed:
		return ActionWait, ev.Message
	}
	var budget snapshot.ObjectRef
	switch {
	case ev.Reason == availability.ReasonDisruptionAllowed:
		budget = snapshot.ObjectRef{Kind: snapshot.KindPodDisruptionBudget, Namespace: m.Budgets[0].Namespace, Name: m.Budgets[0].Name}
	case ev.Reason == availability.ReasonNoBudget && m.Workload != nil:
		budget = snapshot.ObjectRef{Kind: m.Workload.Kind, Namespace: m.Workload.Namespace, Name: m.Workload.Name}
	}
	a := left[budget]
	switch {
	case a == nil:
		// No budget the wave counts, or a pod the budget lets go without spending a
		// disruption.
		return ActionEvict, ev.Message
	case a.left > 0 && budget.Kind == snapshot.KindPodDisruptionBudget:
		a.left--
		return ActionEvict, fmt.Sprintf("budget %s allows %d, %d left in this wave", budget.Name, a.allows, a.left)
	case a.left > 0:
		a.left--
		return ActionEvict, fmt.Sprintf("no budget covers %s %s: the drain keeps one of its pods ready, %d more may go in this wave", budget.Kind, budget.Name, a.left)
	case budget.Kind == snapshot.KindPodDisruptionBudget:
		return ActionWait, fmt.Sprintf("budget %s has nothing left in this wave: evicted once an earlier replacement is Ready", budget.Name)
	}
	return ActionWait, fmt.Sprintf("no budget covers %s %s and the drain keeps one of its pods ready: evicted once an earlier replacement is Ready", budget.Kind, budget.Name)
}
