package nodecompanion

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

func TestStatusEvents(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC))
	old := holdfastv1alpha1.NodeCompanionStatus{
		Drained: []holdfastv1alpha1.DrainedNode{{Node: "node-1", Since: since}},
		Guarded: []string{"node-4"},
	}
	cur := holdfastv1alpha1.NodeCompanionStatus{
		Drained:  []holdfastv1alpha1.DrainedNode{{Node: "node-2", Since: since}},
		Excluded: []holdfastv1alpha1.NodeGap{{Node: "node-3", Reason: policy.GapCordoned, Message: "cordoned"}},
		Guarded:  []string{"node-5"},
	}
	var got []string
	for _, e := range statusEvents(old, cur) {
		// Each names its node as the related object, so that Events of one reason about
		// several nodes are not folded into one.
		got = append(got, fmt.Sprintf("%s %s: %s", e.Reason, e.Related.Name, e.Message))
	}
	want := []string{
		"BudgetHeld node-2: node node-2 was drained and is still cordoned: it holds the disruption budget since 2026-11-22T08:00:00Z, so other nodes cannot be drained; uncordon or delete it to release the budget",
		"BudgetReleased node-1: node node-1 no longer holds the disruption budget",
		"NodeExcluded node-3: node node-3 is cordoned",
		"GuardHeld node-5: the companion on node node-5 holds the guard: evictions from node-5 are refused",
		"GuardCleared node-4: the companion on node node-4 cleared the guard: node-4 can be drained",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if evs := statusEvents(cur, cur); len(evs) != 0 {
		t.Errorf("events without a change: %v", evs)
	}
}
