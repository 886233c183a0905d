package summary

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cond(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
}

func TestSummarise(t *testing.T) {
	rules := []Rule{
		When("BudgetsReady", metav1.ConditionFalse),
		WhenReason("WindowOpen", "InvalidWindow"),
	}
	for name, tc := range map[string]struct {
		conds []metav1.Condition
		want  metav1.Condition
	}{
		"all working": {
			conds: []metav1.Condition{cond("BudgetsReady", "True", "AllBudgetsManaged", "3 budgets"), cond("WindowOpen", "False", "OutsideWindows", "closed")},
			want:  cond("Ready", "True", "Working", "all good"),
		},
		"the first failing condition names the reason": {
			conds: []metav1.Condition{cond("WindowOpen", "False", "InvalidWindow", "bad cron"), cond("BudgetsReady", "False", "SomeWithoutBudget", "1 of 2 unprotected")},
			want:  cond("Ready", "False", "SomeWithoutBudget", "BudgetsReady: 1 of 2 unprotected"),
		},
		"a reason fails whatever the status": {
			conds: []metav1.Condition{cond("BudgetsReady", "True", "AllBudgetsManaged", ""), cond("WindowOpen", "False", "InvalidWindow", "bad cron")},
			want:  cond("Ready", "False", "InvalidWindow", "WindowOpen: bad cron"),
		},
		"a condition not written yet": {
			conds: []metav1.Condition{cond("BudgetsReady", "True", "AllBudgetsManaged", "")},
			want:  cond("Ready", "False", "Pending", "condition WindowOpen not reported yet"),
		},
	} {
		t.Run(name, func(t *testing.T) {
			before := append([]metav1.Condition(nil), tc.conds...)
			got := Summarise(tc.conds, 0, rules, "all good")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Summarise (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.conds); diff != "" {
				t.Errorf("Summarise changed its input:\n%s", diff)
			}
		})
	}
}

// Set moves the transition time only when the status changes, so that a reconcile that
// changes nothing writes nothing.
func TestSetKeepsTheTransitionTime(t *testing.T) {
	rules := []Rule{When("BudgetsReady", metav1.ConditionFalse)}
	t0, t1 := metav1.Unix(100, 0), metav1.Unix(200, 0)
	conds := []metav1.Condition{cond("BudgetsReady", "True", "AllBudgetsManaged", "")}
	Set(&conds, 1, rules, "ok", t0)
	Set(&conds, 1, rules, "ok", t1)
	if got := conds[1].LastTransitionTime; !got.Equal(&t0) {
		t.Errorf("LastTransitionTime = %v after an unchanged pass, want %v", got, t0)
	}
	conds[0].Status = metav1.ConditionFalse
	Set(&conds, 1, rules, "ok", t1)
	if got := conds[1]; got.Status != metav1.ConditionFalse || !got.LastTransitionTime.Equal(&t1) {
		t.Errorf("after BudgetsReady went False: %+v", got)
	}
}
