package plan

import (
	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// singleReplicaStrategies maps each budget a DisruptionPolicy keeps for a single replica
// (one that allows nothing by itself) to the policy, so that the plan drains the way the
// policy's strategy lets the operator drain.
func singleReplicaStrategies(m *availability.Model, snap *snapshot.Snapshot) map[*availability.Budget]*holdfastv1alpha1.DisruptionPolicy {
	out := map[*availability.Budget]*holdfastv1alpha1.DisruptionPolicy{}
	for _, b := range m.Budgets {
		if b.Policy() == "" || b.AtFullHealth > 0 {
			continue
		}
		for i := range snap.DisruptionPolicies {
			p := &snap.DisruptionPolicies[i]
			if p.Namespace == b.Namespace && p.Name == b.Policy() {
				out[b] = p
			}
		}
	}
	return out
}

// surges reports whether the budget's policy surges its single replica (a Deployment)
// before the eviction: the drain does not wait on the budget, and the workload keeps its
// Ready pod throughout, the replacement running before the pod goes.
func (c *cluster) surges(b int) bool {
	if b < 0 || b >= len(c.m.Budgets) {
		return false
	}
	budget := c.m.Budgets[b]
	p := c.strategies[budget]
	if p == nil {
		return false
	}
	for _, w := range budget.Workloads {
		if !policy.Surges(p, w.Kind) {
			return false
		}
	}
	return len(budget.Workloads) > 0
}

// protectMessage explains a drain held by a policy's Protect strategy, or "" when the
// budget's policy does not protect.
func (c *cluster) protectMessage(budget *availability.Budget) string {
	p := c.strategies[budget]
	if p == nil || !policy.Protects(p) {
		return ""
	}
	return policy.MsgProtectedDrain(p, availability.BudgetSpec(budget.PDB))
}
