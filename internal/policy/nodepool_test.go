package policy

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// nodePool is NodePool general with budgets; without the field when budgets is nil.
func nodePool(budgets []any) *unstructured.Unstructured {
	disruption := map[string]any{"consolidationPolicy": consolidateUnderutilized, "consolidateAfter": "30s"}
	if budgets != nil {
		disruption["budgets"] = budgets
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": map[string]any{"name": "general"},
		"spec": map[string]any{"disruption": disruption},
	}}
}

// poolClaim is a NodeClaim of NodePool pool with conditions (type: status), initialized
// unless they say otherwise.
func poolClaim(pool string, conds map[string]string) unstructured.Unstructured {
	var list []any
	if _, set := conds["Initialized"]; !set {
		list = append(list, map[string]any{"type": "Initialized", "status": "True"})
	}
	for typ, status := range conds {
		list = append(list, map[string]any{"type": typ, "status": status})
	}
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
		"metadata": map[string]any{"name": "claim", "labels": map[string]any{karpenterNodePoolLabel: pool}},
		"status":   map[string]any{"conditions": list},
	}}
}

// poolClaims are n initialized NodeClaims of general, the first disrupting of them
// deleted.
func poolClaims(n, disrupting int) []unstructured.Unstructured {
	var out []unstructured.Unstructured
	for i := range n {
		c := poolClaim("general", nil)
		if i < disrupting {
			c.SetDeletionTimestamp(&metav1.Time{Time: time.Unix(1, 0)})
		}
		out = append(out, c)
	}
	return out
}

// poolBudget is a NodePool budget of fields (name, value, ...).
func poolBudget(fields ...string) map[string]any {
	b := map[string]any{}
	for i := 0; i+1 < len(fields); i += 2 {
		b[fields[i]] = fields[i+1]
	}
	return b
}

func TestPoolBudgetOf(t *testing.T) {
	// now is Sunday 2026-11-22 12:00 UTC.
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		budgets []any
		claims  []unstructured.Unstructured
		reason  string
		// closed is part of PoolBudget.Closed; "" for open.
		closed string
		opens  string
	}{
		"no budgets: Karpenter's 10%, of 3 nodes rounded up to 1": {claims: poolClaims(3, 0)},
		"no budgets, and a node being disrupted": {
			claims: poolClaims(3, 1), closed: `default budget (nodes "10%" of 3 nodes) allows 1 disruption, and 1 of its nodes is being disrupted`,
		},
		"an empty list: no limit": {budgets: []any{}, claims: poolClaims(3, 3)},
		"nodes 0": {
			budgets: []any{poolBudget("nodes", "0")}, claims: poolClaims(3, 0),
			closed: `NodePool general's spec.disruption.budgets[0] (nodes "0" of 3 nodes) allows 0 disruptions`,
		},
		"nodes 2, one being disrupted": {budgets: []any{poolBudget("nodes", "2")}, claims: poolClaims(3, 1)},
		"nodes 2, two being disrupted": {budgets: []any{poolBudget("nodes", "2")}, claims: poolClaims(3, 2), closed: "allows 2 disruptions, and 2 of its nodes are being disrupted"},
		"a node Karpenter marked for disruption counts": {
			budgets: []any{poolBudget("nodes", "1")},
			claims:  append(poolClaims(2, 0), poolClaim("general", map[string]string{"DisruptionReason": "True"})),
			closed:  "allows 1 disruption, and 1 of its nodes is being disrupted",
		},
		"50% of 3 nodes is 2, one being disrupted": {budgets: []any{poolBudget("nodes", "50%")}, claims: poolClaims(3, 1)},
		"50% of 3 nodes is 2, two being disrupted": {budgets: []any{poolBudget("nodes", "50%")}, claims: poolClaims(3, 2), closed: `(nodes "50%" of 3 nodes) allows 2`},
		"0%": {budgets: []any{poolBudget("nodes", "0%")}, claims: poolClaims(3, 0), closed: "allows 0 disruptions"},
		"nodes neither initialized nor of the NodePool, or terminating, are not counted": {
			// 50% of 2 nodes is 1, which the one deleted takes.
			budgets: []any{poolBudget("nodes", "50%")},
			claims: append(poolClaims(2, 1), poolClaim("general", map[string]string{"Initialized": "False"}),
				poolClaim("general", map[string]string{"InstanceTerminating": "True"}), poolClaim("other", nil)),
			closed: `(nodes "50%" of 2 nodes) allows 1 disruption`,
		},
		"the most restrictive budget decides": {
			budgets: []any{poolBudget("nodes", "10"), poolBudget("nodes", "1"), poolBudget("nodes", "5")}, claims: poolClaims(3, 1),
			closed: "spec.disruption.budgets[1] (nodes \"1\"",
		},
		"a budget for other reasons": {
			budgets: []any{map[string]any{"nodes": "0", "reasons": []any{"Drifted", "Empty"}}}, claims: poolClaims(3, 0),
		},
		"a budget for Underutilized": {
			budgets: []any{map[string]any{"nodes": "0", "reasons": []any{"Drifted", "Underutilized"}}}, claims: poolClaims(3, 0),
			closed: "allows 0 disruptions",
		},
		"a budget for Empty, of an empty node": {
			budgets: []any{map[string]any{"nodes": "0", "reasons": []any{"Empty"}}}, claims: poolClaims(3, 0), reason: "Empty",
			closed: "allows 0 disruptions",
		},
		"a scheduled budget, active": {
			budgets: []any{poolBudget("nodes", "10"), poolBudget("nodes", "0", "schedule", "0 9 * * *", "duration", "8h")}, claims: poolClaims(3, 0),
			closed: "budgets[1]", opens: "2026-11-22T17:00:00Z",
		},
		"a scheduled budget, inactive": {
			budgets: []any{poolBudget("nodes", "0", "schedule", "0 18 * * *", "duration", "2h")}, claims: poolClaims(3, 0),
		},
		"a macro": {
			budgets: []any{poolBudget("nodes", "0", "schedule", "@daily", "duration", "13h")}, claims: poolClaims(3, 0),
			closed: "allows 0", opens: "2026-11-22T13:00:00Z",
		},
		"a schedule that fires again within its window keeps it open": {
			budgets: []any{poolBudget("nodes", "0", "schedule", "@hourly", "duration", "2h")}, claims: poolClaims(3, 0),
			closed: "allows 0",
		},
		"a schedule that never fires is active for good, as Karpenter has it": {
			budgets: []any{poolBudget("nodes", "0", "schedule", "0 0 30 2 *", "duration", "1h")}, claims: poolClaims(3, 0),
			closed: "allows 0",
		},
		"a budget without schedule closes it too: no end known": {
			budgets: []any{poolBudget("nodes", "0", "schedule", "0 9 * * *", "duration", "8h"), poolBudget("nodes", "0")}, claims: poolClaims(3, 0),
			closed: "allows 0",
		},
		"of two scheduled budgets, the later end": {
			budgets: []any{poolBudget("nodes", "0", "schedule", "0 9 * * *", "duration", "8h"), poolBudget("nodes", "0", "schedule", "0 11 * * *", "duration", "2h")},
			claims:  poolClaims(3, 0), closed: "allows 0", opens: "2026-11-22T17:00:00Z",
		},
		"a schedule that does not parse": {
			budgets: []any{poolBudget("nodes", "10"), poolBudget("nodes", "10", "schedule", "0 25 * * *", "duration", "1h")}, claims: poolClaims(3, 0),
			closed: `NodePool general's spec.disruption.budgets[1].schedule cannot be read ("0 25 * * *" is no cron schedule`,
		},
		"a duration that does not parse": {
			budgets: []any{poolBudget("nodes", "10", "schedule", "@daily", "duration", "a day")}, claims: poolClaims(3, 0),
			closed: `budgets[0].duration cannot be read ("a day" is no duration`,
		},
		"a schedule without duration": {
			budgets: []any{poolBudget("nodes", "10", "schedule", "@daily")}, claims: poolClaims(3, 0),
			closed: `budgets[0].duration cannot be read`,
		},
		"nodes that do not parse": {
			budgets: []any{poolBudget("nodes", "ten")}, claims: poolClaims(3, 0),
			closed: `budgets[0].nodes cannot be read ("ten" is neither a number of nodes nor a percentage up to 100%)`,
		},
		"a percentage above 100": {budgets: []any{poolBudget("nodes", "101%")}, claims: poolClaims(3, 0), closed: "budgets[0].nodes cannot be read"},
		"nodes as a number, not a string": {
			budgets: []any{map[string]any{"nodes": int64(3)}}, claims: poolClaims(3, 0), closed: "budgets[0].nodes cannot be read",
		},
		"reasons that are not a list": {
			budgets: []any{map[string]any{"nodes": "3", "reasons": "Underutilized"}}, claims: poolClaims(3, 0), closed: "budgets[0].reasons cannot be read",
		},
		"budgets that are not a list": {budgets: []any{"3"}, claims: poolClaims(3, 0), closed: "budgets[0] cannot be read (not an object)"},
		"an unreadable budget for another reason is ignored, as Karpenter does": {
			budgets: []any{map[string]any{"nodes": "ten", "reasons": []any{"Drifted"}}}, claims: poolClaims(3, 0),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reason := tc.reason
			if reason == "" {
				reason = reasonUnderutilized
			}
			got := poolBudgetOf(nodePool(tc.budgets), tc.claims, reason, now)
			if tc.closed == "" && got.Closed != "" || !strings.Contains(got.Closed, tc.closed) {
				t.Errorf("closed %q, want it to say %q", got.Closed, tc.closed)
			}
			var opens string
			if !got.Opens.IsZero() {
				opens = stamp(got.Opens)
			}
			if opens != tc.opens {
				t.Errorf("opens %q, want %q", opens, tc.opens)
			}
		})
	}
}

// A budget closed with no window end is looked at again after poolPoll; one whose
// scheduled budgets end, then.
func TestPoolBudgetRecheck(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	if got := (PoolBudget{Closed: "x"}).recheck(now); got != poolPoll {
		t.Errorf("recheck %v, want %v", got, poolPoll)
	}
	if got := (PoolBudget{Closed: "x", Opens: now.Add(5 * time.Hour)}).recheck(now); got != 5*time.Hour {
		t.Errorf("recheck %v, want 5h", got)
	}
}
