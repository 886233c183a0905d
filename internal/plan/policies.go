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

// zoneRule is how the operator lets a zone-aware workload's pods go (see
// internal/policy/zones.go): from one zone at a time, up to the zone's limit, once its
// budget of no zone disrupted has let the first go.
type zoneRule struct {
	spec  *holdfastv1alpha1.ZoneAwareSpec
	sizes map[string]int32
}

// zoneRules maps each budget a zone-aware DisruptionPolicy keeps while no zone is
// disrupted (the one carrying the zones' sizes) to its rule.
func zoneRules(m *availability.Model, snap *snapshot.Snapshot) map[int]zoneRule {
	out := map[int]zoneRule{}
	for i, b := range m.Budgets {
		sizes := policy.ZoneSizes(b.PDB)
		if b.Policy() == "" || len(sizes) == 0 {
			continue
		}
		for j := range snap.DisruptionPolicies {
			p := &snap.DisruptionPolicies[j]
			if p.Namespace == b.Namespace && p.Name == b.Policy() && p.Spec.ZoneAware != nil {
				out[i] = zoneRule{spec: p.Spec.ZoneAware, sizes: sizes}
			}
		}
	}
	return out
}

// zoneOf is node n's zone under budget b's zone rule, and whether b has one.
func (c *cluster) zoneOf(b int, n *node) (string, bool) {
	r, ok := c.zoned[b]
	if !ok {
		return "", false
	}
	return policy.NodeZone(r.spec, n.obj), true
}

// zoneAllowed is how many pods budget b's zone rule lets a wave take from zone, at
// most what the budget allows while no pod is lost for good.
func (c *cluster) zoneAllowed(b int, zone string) int32 {
	r := c.zoned[b]
	if c.m.Budgets[b].Status.DisruptionsAllowed <= 0 {
		return 0
	}
	return policy.ZoneLimit(r.spec, r.sizes[zone]) - c.lost[b]
}
