package plan

import (
	"fmt"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
)

// A wave's step follows the eviction oracle: an unready pod of a budget short of healthy
// pods waits (IfHealthyBudget), one under AlwaysAllow goes even when its budget never
// allows.
func TestStepUnreadyPods(t *testing.T) {
	tests := map[string]struct {
		alwaysAllow bool
		unready     int
		replicas    []string
		minimum     int32
		want        Action
	}{
		"IfHealthyBudget, budget short":              {replicas: []string{"node-1", "node-2", "node-3"}, unready: 2, minimum: 2, want: ActionWait},
		"IfHealthyBudget, budget healthy without it": {replicas: []string{"node-1", "node-2", "node-3"}, minimum: 2, want: ActionEvict},
		"AlwaysAllow, budget that never allows":      {alwaysAllow: true, replicas: []string{"node-1"}, minimum: 1, want: ActionEvict},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := snapshottest.New()
			for _, n := range []string{"node-1", "node-2", "node-3"} {
				c.Node(n, "")
			}
			web := map[string]string{"app": "web"}
			c.Deployment("shop", "web", web, tc.replicas)
			for i := range max(1, tc.unready) {
				c.SetReady("shop", fmt.Sprintf("web-rs-%d", i), false)
			}
			c.PDB("shop", "web", web, snapshottest.MinAvailable(intstr.FromInt32(tc.minimum)), func(p *policyv1.PodDisruptionBudget) {
				if tc.alwaysAllow {
					p.Spec.UnhealthyPodEvictionPolicy = ptr.To(policyv1.AlwaysAllow)
				}
			})
			m := availability.Build(c.Snapshot, time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
			p, ok := m.Pod("shop", "web-rs-0")
			if !ok {
				t.Fatal("no pod web-rs-0")
			}
			step, why := newCluster(m).step(availability.DrainFilter{}, p, map[snapshot.ObjectRef]*allowance{}, false)
			if step != tc.want {
				t.Errorf("step = %s (%s), want %s", step, why, tc.want)
			}
		})
	}
}
