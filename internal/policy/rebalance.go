package policy

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// defaultRebalanceCooldown spaces the moves of a workload that does not say otherwise:
// long enough for a replacement to start and for anyone watching to see what happened.
const defaultRebalanceCooldown = 5 * time.Minute

// Rebalance is the rebalancing a workload opted into: what spec.rebalance of its
// DisruptionPolicy and its own annotations mean.
type Rebalance struct {
	// TopologyKeys are the node labels whose domains the replicas should spread over.
	TopologyKeys []string
	// MaxSkew is the most pods one domain may hold above the emptiest eligible one.
	MaxSkew int32
	// Cooldown is the least time between two moves of the workload.
	Cooldown time.Duration
	// LastPod and LastMove are the previous move's pod and time, if any.
	LastPod  string
	LastMove time.Time
	// By names what opted the workload in, for the Events: its annotation or its policy.
	By string
	// Raised says the cooldown asked for was below MinRebalanceCooldown and was raised
	// to it: a namespace's user must not be able to make holdfast move pods back to back.
	Raised string
}

// RebalanceOf resolves the rebalancing of a workload of kind from its labels and
// annotations and the DisruptionPolicies of its namespace. The spec.rebalance of the policy that manages the
// workload (the one that wins it for its budget) opts it in; each annotation overrides
// the policy's setting of the same meaning, and holdfast.dev/rebalance: "false" opts the
// workload out whatever its policy says. ok is false when the workload is not opted in;
// err says which annotation is wrong.
func RebalanceOf(kind string, labels, annotations map[string]string, policies []holdfastv1alpha1.DisruptionPolicy) (t Rebalance, ok bool, err error) {
	t = Rebalance{TopologyKeys: []string{corev1.LabelHostname}, MaxSkew: 1, Cooldown: defaultRebalanceCooldown}
	// A policy whose stored spec cannot be decoded changes nothing until it is fixed,
	// rebalancing included.
	if winner := WinnerOf(policies, &Workload{Kind: kind, Labels: labels}); winner != nil && winner.Spec.Rebalance != nil && len(winner.Spec.DecodeErrors) == 0 {
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

// LastRebalance renders the record of a move for LastRebalanceAnnotation. The time keeps
// its fraction of a second: cut to the second, it would make every cooldown up to a
// second short.
func LastRebalance(at time.Time, pod string) string {
	return at.UTC().Format(time.RFC3339Nano) + " " + pod
}
