package plan_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/predict"
)

// A 3-zone, 9-node cluster whose 9-replica workload is under a zone-aware policy of
// per-zone limit 3 drains zone by zone: every node of a zone in one wave, where its
// budget alone (one pod at a time while no zone is disrupted) would take 9 waves.
func TestDrainZoneByZone(t *testing.T) {
	nodes := []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9"}
	for name, tc := range map[string]struct {
		limit intstr.IntOrString
		want  [][]string
	}{
		"limit 3": {limit: intstr.FromInt32(3), want: [][]string{{"n1", "n4", "n7"}, {"n2", "n5", "n8"}, {"n3", "n6", "n9"}}},
		"limit 2": {limit: intstr.FromInt32(2), want: [][]string{{"n1", "n4"}, {"n2", "n5"}, {"n3", "n6"}, {"n7"}, {"n8"}, {"n9"}}},
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
					ZoneAware: &holdfastv1alpha1.ZoneAwareSpec{MaxUnavailable: tc.limit},
				},
			})
			snap, _ := predict.Operator(c.Snapshot, now)
			p, err := plan.DrainWaves(snap, now, plan.Targets{Names: nodes}, plan.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got [][]string
			for _, w := range p.Waves {
				got = append(got, w.Nodes)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("waves (-want +got):\n%s", diff)
			}
		})
	}
}
