package rebalance

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

const (
	// settleRetry looks again at a workload whose pods are moving, in case the workload's
	// status change that should wake it is missed.
	settleRetry = 30 * time.Second
	// heldRetry is the shortest wait before trying again a move that was refused.
	heldRetry = time.Minute
)

// Event reasons.
const (
	EventRebalanced      = "Rebalanced"
	EventRebalanceHeld   = "RebalanceHeld"
	EventInvalidSettings = "InvalidRebalanceSettings"
	EventCooldownRaised  = "RebalanceCooldownRaised"
)

// target is the rebalancing a workload opted into.
type target struct {
	plan.RebalanceTarget
	// By names what opted the workload in, for the Events: its annotation or its policy.
	By string
	// Raised says the cooldown asked for was below MinRebalanceCooldown and was raised
	// to it; "" when it was not.
	Raised string
}

// note adds to a decision's message what opted the workload in, so that an Event on a
// workload without annotations says where its rebalancing comes from.
func (t target) note(message string) string {
	return fmt.Sprintf("%s (opted in by %s)", message, t.By)
}

// targetOf resolves a workload's rebalancing (policy.RebalanceOf) for plan.Rebalance.
func targetOf(ref availability.WorkloadRef, labels, annotations map[string]string, policies []holdfastv1alpha1.DisruptionPolicy) (target, bool, error) {
	r, ok, err := policy.RebalanceOf(ref.Kind, labels, annotations, policies)
	return target{RebalanceTarget: plan.RebalanceTarget{Workload: ref, TopologyKeys: r.TopologyKeys, MaxSkew: r.MaxSkew, Cooldown: r.Cooldown,
		LastPod: r.LastPod, LastMove: r.LastMove}, By: r.By, Raised: r.Raised}, ok, err
}

// after says what a reconcile does once a decision other than a move is made: the
// Event to record (none when Reason is empty) and when to look again (0: when woken).
type after struct {
	Type, Reason string
	RequeueAfter time.Duration
}

// afterDecision maps a decision that moves nothing to its Event and requeue. A workload
// that is balanced, or cannot be rebalanced, waits for a change of its own or of the
// nodes; one that waits for its pods or its cooldown looks again; a refusal is announced
// and retried.
func afterDecision(d plan.Rebalancing, cooldown time.Duration) after {
	switch d.Outcome {
	case plan.RebalanceSettling:
		return after{RequeueAfter: settleRetry}
	case plan.RebalanceCooldown:
		return after{RequeueAfter: d.Wait}
	case plan.RebalanceNoBetterPlace, plan.RebalanceBudgetExhausted:
		return after{Type: corev1.EventTypeWarning, Reason: EventRebalanceHeld, RequeueAfter: max(cooldown, heldRetry)}
	}
	return after{}
}
