package drain

import (
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLeftovers(t *testing.T) {
	cond := func(typ corev1.NodeConditionType, status corev1.ConditionStatus, reason string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: status, Reason: reason}
	}
	draining := []corev1.NodeCondition{cond(corev1.NodeDrainInProgress, corev1.ConditionTrue, ReasonBlocked), cond(corev1.NodeDrained, corev1.ConditionFalse, ReasonDraining)}
	drained := []corev1.NodeCondition{cond(corev1.NodeDrainInProgress, corev1.ConditionFalse, ReasonDrained), cond(corev1.NodeDrained, corev1.ConditionTrue, ReasonDrained)}
	both := []corev1.NodeConditionType{corev1.NodeDrainInProgress, corev1.NodeDrained}
	queued := []corev1.Taint{{Key: "other", Effect: corev1.TaintEffectNoSchedule}, {Key: QueuedTaintKey, Effect: corev1.TaintEffectPreferNoSchedule}}
	claimed := map[string]string{RunAnnotation: "holdfast-system/holdfast-drain-run-1a2b3c4d", "other": "x"}
	tests := map[string]struct {
		cordoned    bool
		conditions  []corev1.NodeCondition
		taints      []corev1.Taint
		annotations map[string]string
		runLive     bool
		want        Leftover
	}{
		"a node no drain touched":         {conditions: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady")}},
		"drained, still cordoned":         {cordoned: true, conditions: drained},
		"drained, then uncordoned":        {conditions: drained, want: Leftover{Conditions: both}},
		"uncordoned while its drain runs": {conditions: draining, annotations: claimed, runLive: true},
		"a drain killed mid-way, still cordoned": {cordoned: true, conditions: draining, annotations: claimed,
			want: Leftover{Conditions: both, RunAnnotation: true}},
		"a drain killed mid-way, uncordoned since": {conditions: draining, annotations: claimed, want: Leftover{Conditions: both, RunAnnotation: true}},
		"a drain in progress":                      {cordoned: true, conditions: draining, annotations: claimed, runLive: true},
		"stopped with pods left, still cordoned":   {cordoned: true, conditions: []corev1.NodeCondition{cond(corev1.NodeDrainInProgress, corev1.ConditionFalse, ReasonIncomplete)}},
		"refused, then uncordoned": {conditions: []corev1.NodeCondition{cond(corev1.NodeDrainInProgress, corev1.ConditionFalse, ReasonRefused)},
			want: Leftover{Conditions: []corev1.NodeConditionType{corev1.NodeDrainInProgress}}},
		"queued by a run that lives":   {taints: queued, annotations: claimed, runLive: true},
		"queued by a run that is gone": {taints: queued, annotations: claimed, want: Leftover{QueuedTaint: true, RunAnnotation: true}},
		"another drainer's conditions": {conditions: []corev1.NodeCondition{cond(corev1.NodeDrainInProgress, corev1.ConditionTrue, "MachineDrain"), cond(corev1.NodeDrained, corev1.ConditionTrue, "MachineDrain")}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			node := &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: "node-1", Annotations: maps.Clone(tc.annotations)},
				Spec:       corev1.NodeSpec{Unschedulable: tc.cordoned, Taints: tc.taints},
				Status:     corev1.NodeStatus{Conditions: tc.conditions},
			}
			before := node.DeepCopy()
			got := Leftovers(node, tc.runLive)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Leftovers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, node); diff != "" {
				t.Errorf("Leftovers changed the node (-before +after):\n%s", diff)
			}
			got.Apply(node)
			if _, ok := node.Annotations[RunAnnotation]; ok && got.RunAnnotation {
				t.Errorf("Apply left the annotation")
			}
			if _, left := WithQueuedTaint(node.Spec.Taints, false); left && got.QueuedTaint {
				t.Errorf("Apply left the queued taint")
			}
		})
	}
}

// The status patch deletes the conditions by type, as a strategic merge of the node's
// conditions does, and leaves the others.
func TestLeftoverStatusPatch(t *testing.T) {
	if p := (Leftover{QueuedTaint: true}).StatusPatch(); p != nil {
		t.Errorf("StatusPatch without conditions = %s, want nil", p)
	}
	got := string(Leftover{Conditions: []corev1.NodeConditionType{corev1.NodeDrainInProgress, corev1.NodeDrained}}.StatusPatch())
	want := `{"status":{"conditions":[{"$patch":"delete","type":"DrainInProgress"},{"$patch":"delete","type":"Drained"}]}}`
	if got != want {
		t.Errorf("StatusPatch = %s, want %s", got, want)
	}
}
