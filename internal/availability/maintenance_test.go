package availability_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
)

// A node whose maintenance is planned (Kubernetes 1.37's MaintenancePlanned condition)
// is as good as cordoned: no pod counts it as a place to run, except a DaemonSet's,
// which tolerates the cordon.
func TestMaintenancePlannedIsCordoned(t *testing.T) {
	planned := func(status corev1.ConditionStatus) []corev1.NodeCondition {
		return []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
			{Type: corev1.NodeMaintenancePlanned, Status: status},
		}
	}
	tests := map[string]struct {
		conditions  []corev1.NodeCondition
		cordoned    bool
		wantPlanned bool
		wantNodes   int
	}{
		"neither":                       {wantNodes: 2},
		"cordoned":                      {cordoned: true, wantNodes: 1},
		"maintenance planned":           {conditions: planned(corev1.ConditionTrue), wantPlanned: true, wantNodes: 1},
		"maintenance no longer planned": {conditions: planned(corev1.ConditionFalse), wantNodes: 2},
		"maintenance status unknown":    {conditions: planned(corev1.ConditionUnknown), wantNodes: 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := snapshottest.New()
			c.Node("n1", "a")
			c.Node("n2", "a")
			n := &c.Snapshot.Nodes[1]
			n.Spec.Unschedulable, n.Status.Conditions = tc.cordoned, tc.conditions
			if got := availability.MaintenancePlanned(n); got != tc.wantPlanned {
				t.Errorf("MaintenancePlanned = %t, want %t", got, tc.wantPlanned)
			}
			if got, want := availability.Cordoned(n), tc.cordoned || tc.wantPlanned; got != want {
				t.Errorf("Cordoned = %t, want %t", got, want)
			}
			m := availability.Build(c.Snapshot, now)
			if got := m.EligibleNodes(&corev1.PodTemplateSpec{}); got != tc.wantNodes {
				t.Errorf("EligibleNodes = %d, want %d", got, tc.wantNodes)
			}
			if got := m.DaemonSetNodes(&corev1.PodTemplateSpec{}); got != 2 {
				t.Errorf("DaemonSetNodes = %d, want 2: a DaemonSet's pods tolerate the cordon", got)
			}
		})
	}
}
