package plan_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/predict"
)

// A single replica's drain is planned from its budget as the operator keeps it, not
// from its policy's spec: a Surge policy outside its maintenance windows starts no
// surge, so the plan waits too; Protect says how long.
func TestSingleReplicaDrainsAsTheOperatorDecides(t *testing.T) {
	closed := []holdfastv1alpha1.MaintenanceWindow{{Schedule: "0 3 * * *", Duration: metav1.Duration{Duration: time.Hour}}}
	for name, tc := range map[string]struct {
		strategy holdfastv1alpha1.SingleReplicaStrategy
		windows  []holdfastv1alpha1.MaintenanceWindow
		escape   *metav1.Duration
		// surged is whether the plan drains by a surge; else blocked says why not.
		surged  bool
		blocked string
	}{
		"surge":                      {strategy: holdfastv1alpha1.SingleReplicaSurge, surged: true},
		"surge outside every window": {strategy: holdfastv1alpha1.SingleReplicaSurge, windows: closed, blocked: "holds it for now (outside its maintenance windows"},
		"protect":                    {strategy: holdfastv1alpha1.SingleReplicaProtect, blocked: "sets no escapeAfter, so the drain of its node waits until the pod is moved by hand"},
		"protect with escapeAfter": {strategy: holdfastv1alpha1.SingleReplicaProtect, escape: &metav1.Duration{Duration: 10 * time.Minute},
			blocked: "waits escapeAfter (10m0s), then the budget lets the eviction through"},
	} {
		t.Run(name, func(t *testing.T) {
			c := cluster("n1", "n2")
			c.Deployment("ns", "web", map[string]string{"app": "web"}, []string{"n1"})
			c.Snapshot.DisruptionPolicies = append(c.Snapshot.DisruptionPolicies, holdfastv1alpha1.DisruptionPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Generation: 1},
				Spec: holdfastv1alpha1.DisruptionPolicySpec{
					Selector: metav1.LabelSelector{}, MaxUnavailable: ptr.To(intstr.FromInt32(1)),
					SingleReplica: tc.strategy, EscapeAfter: tc.escape, MaintenanceWindows: tc.windows,
				},
			})
			snap, _ := predict.Operator(c.Snapshot, now, policy.Settings{})
			p, err := plan.DrainWaves(snap, now, plan.Targets{Names: []string{"n1"}}, plan.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.surged {
				if len(p.Waves) != 1 || len(p.Waves[0].Capacity) != 1 || !p.Waves[0].Capacity[0].Surged {
					t.Fatalf("want one wave that surges web, got waves %+v, blocked %+v", p.Waves, p.Blocked)
				}
				return
			}
			if len(p.Blocked) != 1 || len(p.Blocked[0].Reasons) != 1 || !strings.Contains(p.Blocked[0].Reasons[0].Message, tc.blocked) {
				t.Fatalf("want n1 blocked because the budget %q, got waves %+v, blocked %+v", tc.blocked, p.Waves, p.Blocked)
			}
		})
	}
}
