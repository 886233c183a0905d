package invalidspec

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// The condition is written once per change: a second pass over the same invalid spec
// changes nothing (no status write, no second Event); a new generation does.
func TestMarkStatus(t *testing.T) {
	now := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	var conds []metav1.Condition
	var observed int64 = 1
	msg := Message("spec", []string{`escapeAfter: time: invalid duration "banana"`})
	if !MarkStatus(&conds, &observed, holdfastv1alpha1.ConditionBudgetsReady, msg, 2, now) {
		t.Fatal("first pass: not changed")
	}
	c := meta.FindStatusCondition(conds, holdfastv1alpha1.ConditionBudgetsReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != holdfastv1alpha1.ReasonInvalidSpec || c.Message != msg || observed != 2 {
		t.Errorf("condition %+v, observed %d", c, observed)
	}
	if MarkStatus(&conds, &observed, holdfastv1alpha1.ConditionBudgetsReady, msg, 2, now.Add(time.Minute)) {
		t.Error("second pass over the same spec: changed")
	}
	if !MarkStatus(&conds, &observed, holdfastv1alpha1.ConditionBudgetsReady, msg, 3, now.Add(time.Minute)) {
		t.Error("a new generation, still invalid: not changed")
	}
}
