// Package summary sums up an object's conditions into its Ready condition, so that
// `kubectl wait --for=condition=Ready` and GitOps health checks read one condition
// whatever the kind.
package summary

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// Rule says when one condition means the object is not doing its job.
type Rule struct {
	// Type is the condition the rule reads.
	Type string
	// Failing reports whether the condition says the object is not working.
	Failing func(metav1.Condition) bool
}

// When fails while the condition of type t has status s.
func When(t string, s metav1.ConditionStatus) Rule {
	return Rule{Type: t, Failing: func(c metav1.Condition) bool { return c.Status == s }}
}

// WhenReason fails while the condition of type t has one of reasons, whatever its status.
func WhenReason(t string, reasons ...string) Rule {
	return Rule{Type: t, Failing: func(c metav1.Condition) bool {
		for _, r := range reasons {
			if c.Reason == r {
				return true
			}
		}
		return false
	}}
}

// Summarise returns the Ready condition of an object of generation gen with conditions
// conds: False with the reason and message of the first rule that fails, in the order
// given (the most telling first), or of the first condition not written yet; True with
// working as its message otherwise. LastTransitionTime is left for Set.
func Summarise(conds []metav1.Condition, gen int64, rules []Rule, working string) metav1.Condition {
	c := metav1.Condition{Type: holdfastv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: gen,
		Reason: holdfastv1alpha1.ReasonWorking, Message: working}
	for _, r := range rules {
		got := meta.FindStatusCondition(conds, r.Type)
		switch {
		case got == nil:
			c.Status, c.Reason = metav1.ConditionFalse, holdfastv1alpha1.ReasonPending
			c.Message = fmt.Sprintf("condition %s not reported yet", r.Type)
			return c
		case r.Failing(*got):
			c.Status, c.Reason = metav1.ConditionFalse, got.Reason
			c.Message = fmt.Sprintf("%s: %s", r.Type, got.Message)
			return c
		}
	}
	return c
}

// Set writes the summary of conds into conds; the transition time is now only when the
// status changes, so that an unchanged summary leaves the status as it was.
func Set(conds *[]metav1.Condition, gen int64, rules []Rule, working string, now metav1.Time) {
	c := Summarise(*conds, gen, rules, working)
	c.LastTransitionTime = now
	meta.SetStatusCondition(conds, c)
}
