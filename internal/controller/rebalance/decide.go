package rebalance

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/policy"
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

// workload gives a workload the shape DisruptionPolicies select on.
func workload(kind string, labels map[string]string) *policy.Workload {
	return &policy.Workload{Kind: kind, Labels: labels}
}

// targetOf resolves a workload's rebalancing from its labels and annotations and the
// DisruptionPolicies of its namespace. The spec.rebalance of the policy that manages the
// workload (the one that wins it for its budget) opts it in; each annotation overrides
// the policy's setting of the same meaning, and holdfast.dev/rebalance: "false" opts the
// workload out whatever its policy says. ok is false when the workload is not opted in;
// err says which annotation is wrong.
func targetOf(ref availability.WorkloadRef, labels, annotations map[string]string, policies []holdfastv1alpha1.DisruptionPolicy) (t target, ok bool, err error) {
	t.RebalanceTarget = plan.RebalanceTarget{Workload: ref, TopologyKeys: []string{corev1.LabelHostname}, MaxSkew: 1, Cooldown: defaultCooldown}
	// A policy whose stored spec cannot be decoded changes nothing until it is fixed,
	// rebalancing included.
	if winner := policy.WinnerOf(policies, workload(ref.Kind, labels)); winner != nil && winner.Spec.Rebalance != nil && len(winner.Spec.DecodeErrors) == 0 {
		// The apiserver defaults every field; zero values stand for the same defaults.
		rb := winner.Spec.Rebalance
		t.By = "DisruptionPolicy " + winner.Name
		if len(rb.TopologyKeys) > 0 {
			t.TopologyKeys = rb.TopologyKeys
		}
		t.MaxSkew = cmp.Or(rb.MaxSkew, t.MaxSkew)
		if rb.Cooldown != nil {
			t.Cooldown = rb.Cooldown.Duration
		}
	}
	const byAnnotation = "annotation " + holdfastv1alpha1.RebalanceAnnotation
	switch v := strings.TrimSpace(annotations[holdfastv1alpha1.RebalanceAnnotation]); v {
	case "": // absent: the policy decides
	case "false":
		return t, false, nil
	case "true":
		t.By = byAnnotation
	default:
		t.By, t.TopologyKeys = byAnnotation, nil
		for _, key := range strings.Split(v, ",") {
			key = strings.TrimSpace(key)
			if errs := validation.IsQualifiedName(key); len(errs) > 0 {
				return t, true, fmt.Errorf("%s: %q is not a label key: %s", holdfastv1alpha1.RebalanceAnnotation, key, strings.Join(errs, "; "))
			}
			t.TopologyKeys = append(t.TopologyKeys, key)
		}
	}
	if t.By == "" {
		return t, false, nil
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
	if t.Cooldown < holdfastv1alpha1.MinRebalanceCooldown {
		t.Raised = fmt.Sprintf("the cooldown %s (%s) is below the least holdfast applies: %s is used instead",
			t.Cooldown, cooldownSource(annotations), holdfastv1alpha1.MinRebalanceCooldown)
		t.Cooldown = holdfastv1alpha1.MinRebalanceCooldown
	}
	// A record that does not parse is treated as no record: at worst one move comes
	// early, and the next move writes a good one.
	if at, pod, found := strings.Cut(annotations[holdfastv1alpha1.LastRebalanceAnnotation], " "); found {
		if when, err := time.Parse(time.RFC3339Nano, at); err == nil {
			t.LastMove, t.LastPod = when, pod
		}
	}
	return t, true, nil
}

// cooldownSource names where a workload's cooldown comes from.
func cooldownSource(annotations map[string]string) string {
	if _, set := annotations[holdfastv1alpha1.RebalanceCooldownAnnotation]; set {
		return "annotation " + holdfastv1alpha1.RebalanceCooldownAnnotation
	}
	return "its policy's spec.rebalance.cooldown"
}

// lastRebalance renders the record of a move for LastRebalanceAnnotation. The time keeps
// its fraction of a second: cut to the second, it would make every cooldown up to a
// second short.
func lastRebalance(at time.Time, pod string) string {
	return at.UTC().Format(time.RFC3339Nano) + " " + pod
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
