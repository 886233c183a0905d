package plan

import (
	"github.com/holdfast-dev/holdfast/internal/availability"
)

// How the operator opens the budgets it keeps is read off the budgets, as it recorded
// it there (availability.Opening), never from the policies' specs: a plan over the
// predicted snapshot then drains the way the operator decided, not a second reading of
// the policy.

// surges reports whether budget b's policy surges its single replica (a Deployment)
// before the eviction: the drain does not wait on the budget, and the workload keeps its
// Ready pod throughout, the replacement running before the pod goes.
func (c *cluster) surges(b int) bool {
	return b >= 0 && b < len(c.surged) && c.surged[b]
}

// zoneRule is how the operator lets a zone-aware workload's pods go (see
// internal/policy/zones.go): from one zone at a time, up to the zone's limit, once its
// budget of no zone disrupted has let the first go.
type zoneRule struct {
	key    string
	limits map[string]int32
}

// zoneRules maps each budget a zone-aware DisruptionPolicy keeps while no zone is
// disrupted (the one carrying the zones' limits) to its rule.
func zoneRules(m *availability.Model) map[int]zoneRule {
	out := map[int]zoneRule{}
	for i, b := range m.Budgets {
		if o := availability.OpeningOf(b.PDB); b.Policy() != "" && o.ZoneKey != "" && len(o.ZoneLimits) > 0 {
			out[i] = zoneRule{key: o.ZoneKey, limits: o.ZoneLimits}
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
	if n.obj == nil {
		return "", true
	}
	return n.obj.Labels[r.key], true
}

// zoneAllowed is how many pods budget b's zone rule lets a wave take from zone, at
// most what the budget allows while no pod is lost for good.
func (c *cluster) zoneAllowed(b int, zone string) int32 {
	if c.m.Budgets[b].Status.DisruptionsAllowed <= 0 {
		return 0
	}
	return c.zoned[b].limits[zone] - c.lost[b]
}
