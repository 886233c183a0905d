package rebalance

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/plan"
)

const (
	// defaultCooldown spaces the moves of a workload that does not say otherwise: long
	// enough for a replacement to start and for anyone watching to see what happened.
	defaultCooldown = 5 * time.Minute
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
)

// targetOf reads a workload's rebalancing annotations. ok is false when the workload has
// not opted in; err says which annotation is wrong.
func targetOf(ref availability.WorkloadRef, annotations map[string]string) (t plan.RebalanceTarget, ok bool, err error) {
	v, set := annotations[holdfastv1alpha1.RebalanceAnnotation]
	v = strings.TrimSpace(v)
	if !set || v == "" || v == "false" {
		return t, false, nil
	}
	t = plan.RebalanceTarget{Workload: ref, MaxSkew: 1, Cooldown: defaultCooldown}
	if v == "true" {
		t.TopologyKeys = []string{corev1.LabelHostname}
	} else {
		for _, key := range strings.Split(v, ",") {
			key = strings.TrimSpace(key)
			if errs := validation.IsQualifiedName(key); len(errs) > 0 {
				return t, true, fmt.Errorf("%s: %q is not a label key: %s", holdfastv1alpha1.RebalanceAnnotation, key, strings.Join(errs, "; "))
			}
			t.TopologyKeys = append(t.TopologyKeys, key)
		}
	}
	if s, set := annotations[holdfastv1alpha1.RebalanceMaxSkewAnnotation]; set {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		if err != nil || n < 1 {
			return t, true, fmt.Errorf("%s: %q is not a whole number of at least 1", holdfastv1alpha1.RebalanceMaxSkewAnnotation, s)
		}
		t.MaxSkew = int32(n)
	}
	if s, set := annotations[holdfastv1alpha1.RebalanceCooldownAnnotation]; set {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d < 0 {
			return t, true, fmt.Errorf("%s: %q is not a duration such as 30s or 5m", holdfastv1alpha1.RebalanceCooldownAnnotation, s)
		}
		t.Cooldown = d
	}
	// A record that does not parse is treated as no record: at worst one move comes
	// early, and the next move writes a good one.
	if at, pod, found := strings.Cut(annotations[holdfastv1alpha1.LastRebalanceAnnotation], " "); found {
		if when, err := time.Parse(time.RFC3339, at); err == nil {
			t.LastMove, t.LastPod = when, pod
		}
	}
	return t, true, nil
}

// lastRebalance renders the record of a move for LastRebalanceAnnotation.
func lastRebalance(at time.Time, pod string) string {
	return at.UTC().Format(time.RFC3339) + " " + pod
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
