package plan_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/predict"
)

// A 3-zone, 9-node cluster whose 9-replica workload is under a zone-aware policy of
// per-zone limit 3 drains zone by zone: every node of a zone in one wave, where its
// budget alone (one pod at a time while no zone is disrupted) would take 9 waves.
func TestDrainZoneByZone(t *testing.T) {
	nodes := []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9"}
	// cluster puts node i in zone i%3: n1, n4 and n7 in zone-a.
	zone := map[string]string{}
	for i, n := range nodes {
		zone[n] = "zone-" + string(rune('a'+i%3))
	}
	for name, tc := range map[string]struct {
		limit int32
		waves int
	}{
		"limit 3": {limit: 3, waves: 3},
		"limit 2": {limit: 2, waves: 6},
	} {
		t.Run(name, func(t *testing.T) {
			// A spare node takes the replacements, since drained nodes stay cordoned.
			c := cluster(append(nodes, "spare")...)
			db := map[string]string{"app": "db"}
			c.Deployment("ns", "db", db, nodes, func(d *appsv1.Deployment) { d.Labels = map[string]string{"tier": "quorum"} })
			c.Snapshot.DisruptionPolicies = append(c.Snapshot.DisruptionPolicies, holdfastv1alpha1.DisruptionPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: "quorum", Namespace: "ns", Generation: 1},
				Spec: holdfastv1alpha1.DisruptionPolicySpec{
					Selector: metav1.LabelSelector{}, MaxUnavailable: ptr.To(intstr.FromInt32(1)),
					ZoneAware: &holdfastv1alpha1.ZoneAwareSpec{MaxUnavailable: intstr.FromInt32(tc.limit)},
				},
			})
			snap, _ := predict.Operator(c.Snapshot, now, policy.Settings{})
			p, err := plan.DrainWaves(snap, now, plan.Targets{Names: nodes}, plan.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Waves) != tc.waves || len(p.Blocked) > 0 {
				t.Errorf("%d waves and %d nodes blocked, want %d waves and none blocked: %+v", len(p.Waves), len(p.Blocked), tc.waves, p.Waves)
			}
			for _, w := range p.Waves {
				zones := map[string]int32{}
				for _, n := range w.Nodes {
					zones[zone[n]]++
				}
				if len(zones) != 1 || zones[zone[w.Nodes[0]]] > tc.limit {
					t.Errorf("wave %v: want nodes of one zone, at most %d: %v", w.Nodes, tc.limit, zones)
				}
			}
		})
	}
}
