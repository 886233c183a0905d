package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/drain"
)

func node(ready bool, annotations map[string]string, taints ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: annotations}}
	for _, k := range taints {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k, Effect: corev1.TaintEffectNoSchedule})
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}
	return n
}

// Uninstall removes holdfast's node marks and only them; the out-of-service taint only
// when holdfast's fenced annotation vouches for it and the node is Ready again.
func TestNodeMarks(t *testing.T) {
	fenced := map[string]string{holdfastv1alpha1.FencedAnnotation: "2026-01-01T00:00:00Z"}
	tests := map[string]struct {
		node *corev1.Node
		want marks
	}{
		"no marks": {node: node(true, map[string]string{"team": "a"}, "dedicated")},
		"steering taints and a drain's annotation": {
			node: node(true, map[string]string{drain.RunAnnotation: "holdfast-drain/run-1"}, "dedicated", holdfastv1alpha1.HandOffTaintKey, holdfastv1alpha1.LostTaintKey, drain.QueuedTaintKey),
			want: marks{taints: []string{holdfastv1alpha1.HandOffTaintKey, holdfastv1alpha1.LostTaintKey, drain.QueuedTaintKey}, annotations: []string{drain.RunAnnotation}},
		},
		"fenced, Ready again": {
			node: node(true, fenced, holdfastv1alpha1.OutOfServiceTaintKey),
			want: marks{taints: []string{holdfastv1alpha1.OutOfServiceTaintKey}, annotations: []string{holdfastv1alpha1.FencedAnnotation}},
		},
		"fenced, still down": {
			node: node(false, fenced, holdfastv1alpha1.OutOfServiceTaintKey, holdfastv1alpha1.LostTaintKey),
			want: marks{taints: []string{holdfastv1alpha1.LostTaintKey}, kept: holdfastv1alpha1.OutOfServiceTaintKey + " and " + holdfastv1alpha1.FencedAnnotation,
				why: "the node is not Ready and its pods are being moved off it; remove them once it is back or gone"},
		},
		"a person's out-of-service taint": {node: node(false, nil, holdfastv1alpha1.OutOfServiceTaintKey)},
		"a person's proof of a node down": {node: node(false, map[string]string{holdfastv1alpha1.NodeDownAnnotation: "true"})},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := tc.node.DeepCopy()
			if diff := cmp.Diff(tc.want, nodeMarks(tc.node), cmp.AllowUnexported(marks{})); diff != "" {
				t.Errorf("marks (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.node); diff != "" {
				t.Errorf("nodeMarks changed the node:\n%s", diff)
			}
		})
	}
}

func TestWithoutTaints(t *testing.T) {
	taints := []corev1.Taint{{Key: "dedicated"}, {Key: holdfastv1alpha1.LostTaintKey}, {Key: "other"}}
	got := withoutTaints(taints, []string{holdfastv1alpha1.LostTaintKey})
	if diff := cmp.Diff([]corev1.Taint{{Key: "dedicated"}, {Key: "other"}}, got); diff != "" {
		t.Errorf("taints (-want +got):\n%s", diff)
	}
	if len(taints) != 3 {
		t.Errorf("withoutTaints changed its input: %v", taints)
	}
}

// A pod loses its zone label and holdfast's marks, never a do-not-disrupt or a
// safe-to-evict that someone else put there.
func TestPodMarks(t *testing.T) {
	tests := map[string]struct {
		labels, annotations map[string]string
		want                marks
	}{
		"zone label":                 {labels: map[string]string{holdfastv1alpha1.ZoneLabel: "a", "app": "web"}, want: marks{labels: []string{holdfastv1alpha1.ZoneLabel}}},
		"someone's do-not-disrupt":   {annotations: map[string]string{holdfastv1alpha1.DoNotDisruptAnnotation: "true"}},
		"Protect's do-not-disrupt":   {annotations: map[string]string{holdfastv1alpha1.DoNotDisruptAnnotation: "true", holdfastv1alpha1.DoNotDisruptByAnnotation: "single"}, want: marks{annotations: []string{holdfastv1alpha1.DoNotDisruptAnnotation, holdfastv1alpha1.DoNotDisruptByAnnotation}}},
		"Protect's record, no mark":  {annotations: map[string]string{holdfastv1alpha1.DoNotDisruptByAnnotation: "single"}, want: marks{annotations: []string{holdfastv1alpha1.DoNotDisruptByAnnotation}}},
		"rebalancing opt-in is kept": {annotations: map[string]string{holdfastv1alpha1.RebalanceAnnotation: "true"}},
		"someone's safe-to-evict":    {annotations: map[string]string{availability.AnnotationSafeToEvict: "true"}},
		"a hand-off's safe-to-evict": {annotations: map[string]string{availability.AnnotationSafeToEvict: "true", holdfastv1alpha1.SafeToEvictByAnnotation: "single"}, want: marks{annotations: []string{availability.AnnotationSafeToEvict, holdfastv1alpha1.SafeToEvictByAnnotation}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels, Annotations: tc.annotations}}
			if diff := cmp.Diff(tc.want, podMarks(p), cmp.AllowUnexported(marks{})); diff != "" {
				t.Errorf("marks (-want +got):\n%s", diff)
			}
		})
	}
}

// A workload loses the record of its last move, not its opt-in.
func TestWorkloadMarks(t *testing.T) {
	got := workloadMarks(map[string]string{holdfastv1alpha1.RebalanceAnnotation: "true", holdfastv1alpha1.LastRebalanceAnnotation: "2026-01-01T00:00:00Z web-1"})
	if diff := cmp.Diff(marks{annotations: []string{holdfastv1alpha1.LastRebalanceAnnotation}}, got, cmp.AllowUnexported(marks{})); diff != "" {
		t.Errorf("marks (-want +got):\n%s", diff)
	}
}

// The patch names only the keys it removes, each set to null.
func TestRemovalPatch(t *testing.T) {
	got := removalPatch(marks{labels: []string{holdfastv1alpha1.ZoneLabel}, annotations: []string{holdfastv1alpha1.DoNotDisruptAnnotation}})
	want := map[string]any{"metadata": map[string]any{
		"labels":      map[string]any{holdfastv1alpha1.ZoneLabel: nil},
		"annotations": map[string]any{holdfastv1alpha1.DoNotDisruptAnnotation: nil},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("patch (-want +got):\n%s", diff)
	}
}
