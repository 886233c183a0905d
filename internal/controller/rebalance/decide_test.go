package rebalance

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/holdfast-dev/holdfast/internal/plan"
)

func TestAfterDecision(t *testing.T) {
	tests := map[plan.RebalanceOutcome]after{
		plan.RebalanceBalanced:        {},
		plan.RebalanceSingleReplica:   {},
		plan.RebalanceSettling:        {RequeueAfter: settleRetry},
		plan.RebalanceCooldown:        {RequeueAfter: 12 * time.Second},
		plan.RebalanceNoBetterPlace:   {Type: corev1.EventTypeWarning, Reason: EventRebalanceHeld, RequeueAfter: 2 * time.Minute},
		plan.RebalanceBudgetExhausted: {Type: corev1.EventTypeWarning, Reason: EventRebalanceHeld, RequeueAfter: 2 * time.Minute},
	}
	for outcome, want := range tests {
		got := afterDecision(plan.Rebalancing{Outcome: outcome, Wait: 12 * time.Second}, 2*time.Minute)
		if got != want {
			t.Errorf("%s: got %+v, want %+v", outcome, got, want)
		}
	}
	// A short cooldown does not make a refused move a hot loop.
	if got := afterDecision(plan.Rebalancing{Outcome: plan.RebalanceNoBetterPlace}, time.Second); got.RequeueAfter != heldRetry {
		t.Errorf("held with a 1s cooldown: requeue after %s, want %s", got.RequeueAfter, heldRetry)
	}
}
