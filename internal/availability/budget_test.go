package availability_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

var web = map[string]string{"app": "web"}

func three(c *snapshottest.Cluster) {
	for _, n := range []string{"n1", "n2", "n3"} {
		c.Node(n, "")
	}
}

// budgetOutcome is what the tests compare for one budget.
type budgetOutcome struct {
	Status       availability.Status
	AtFullHealth int32
	SyncError    string
	Unmanaged    []string
}

func TestBudgetArithmetic(t *testing.T) {
	int32v, str := intstr.FromInt32, intstr.FromString
	tests := map[string]struct {
		build func(c *snapshottest.Cluster)
		want  budgetOutcome
	}{
		"minAvailable below replicas allows the difference": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1", "n2", "n3"})
				c.PDB("ns", "pdb", web, snapshottest.MinAvailable(int32v(2)))
			},
			want: budgetOutcome{Status: availability.Status{ExpectedPods: 3, DesiredHealthy: 2, CurrentHealthy: 3, DisruptionsAllowed: 1}, AtFullHealth: 1},
		},
		"minAvailable 50% of one replica rounds up to a deadlock": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1"})
				c.PDB("ns", "pdb", web, snapshottest.MinAvailable(str("50%")))
			},
			want: budgetOutcome{Status: availability.Status{ExpectedPods: 1, DesiredHealthy: 1, CurrentHealthy: 1}},
		},
		"maxUnavailable 0 never allows": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1", "n2", "n3"})
				c.PDB("ns", "pdb", web, snapshottest.MaxUnavailable(int32v(0)))
			},
			want: budgetOutcome{Status: availability.Status{ExpectedPods: 3, DesiredHealthy: 3, CurrentHealthy: 3}},
		},
		"maxUnavailable percentage rounds up": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1", "n2", "n3"})
				c.PDB("ns", "pdb", web, snapshottest.MaxUnavailable(str("10%")))
			},
			want: budgetOutcome{Status: availability.Status{ExpectedPods: 3, DesiredHealthy: 2, CurrentHealthy: 3, DisruptionsAllowed: 1}, AtFullHealth: 1},
		},
		"percentage uses the controller's scale, not the pods that exist": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1", "n2"}, func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To(int32(4)) })
				c.PDB("ns", "pdb", web, snapshottest.MinAvailable(str("50%")))
			},
			want: budgetOutcome{Status: availability.Status{ExpectedPods: 4, DesiredHealthy: 2, CurrentHealthy: 2}, AtFullHealth: 2},
		},
		"integer minAvailable counts pods, pending ones included, but only ready ones as healthy": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1", "n2", ""})
				c.PDB("ns", "pdb", web, snapshottest.MinAvailable(int32v(1)))
			},
			want: budgetOutcome{Status: availability.Status{ExpectedPods: 3, DesiredHealthy: 1, CurrentHealthy: 2, DisruptionsAllowed: 1}, AtFullHealth: 2},
		},
		"unready pod is not healthy": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1", "n2", "n3"})
				c.SetReady("ns", "web-rs-0", false)
				c.PDB("ns", "pdb", web, snapshottest.MinAvailable(int32v(2)))
			},
			want: budgetOutcome{Status: availability.Status{ExpectedPods: 3, DesiredHealthy: 2, CurrentHealthy: 2}, AtFullHealth: 1},
		},
		"pod evicted less than two minutes ago is not healthy, an older one is": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1", "n2", "n3"})
				c.PDB("ns", "pdb", web, snapshottest.MaxUnavailable(int32v(1)), func(p *policyv1.PodDisruptionBudget) {
					p.Status.DisruptedPods = map[string]metav1.Time{
						"web-rs-0": metav1.NewTime(now.Add(-time.Minute)),
						"web-rs-1": metav1.NewTime(now.Add(-3 * time.Minute)),
					}
				})
			},
			want: budgetOutcome{Status: availability.Status{ExpectedPods: 3, DesiredHealthy: 2, CurrentHealthy: 2}, AtFullHealth: 1},
		},
		"terminating pod counts as expected but not healthy": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1", "n2"})
				c.Snapshot.Pods[0].DeletionTimestamp = ptr.To(metav1.NewTime(now))
				c.PDB("ns", "pdb", web, snapshottest.MinAvailable(int32v(1)))
			},
			want: budgetOutcome{Status: availability.Status{ExpectedPods: 2, DesiredHealthy: 1, CurrentHealthy: 1}, AtFullHealth: 1},
		},
		"integer minAvailable over a DaemonSet is computed": {
			build: func(c *snapshottest.Cluster) {
				c.DaemonSet("ns", "agent", web, []string{"n1", "n2", "n3"})
				c.PDB("ns", "pdb", web, snapshottest.MinAvailable(int32v(2)))
			},
			want: budgetOutcome{Status: availability.Status{ExpectedPods: 3, DesiredHealthy: 2, CurrentHealthy: 3, DisruptionsAllowed: 1}, AtFullHealth: 1},
		},
		"maxUnavailable over a DaemonSet fails to sync": {
			build: func(c *snapshottest.Cluster) {
				c.DaemonSet("ns", "agent", web, []string{"n1", "n2", "n3"})
				c.PDB("ns", "pdb", web, snapshottest.MaxUnavailable(int32v(1)))
			},
			want: budgetOutcome{SyncError: "daemonsets.apps does not implement the scale subresource"},
		},
		"maxUnavailable over bare pods expects none and allows nothing": {
			build: func(c *snapshottest.Cluster) {
				c.Pod("ns", "a", web, "n1")
				c.Pod("ns", "b", web, "n2")
				c.PDB("ns", "pdb", web, snapshottest.MaxUnavailable(int32v(1)))
			},
			want: budgetOutcome{Status: availability.Status{CurrentHealthy: 2}, Unmanaged: []string{"a", "b"}},
		},
		"integer minAvailable over bare pods works": {
			build: func(c *snapshottest.Cluster) {
				c.Pod("ns", "a", web, "n1")
				c.Pod("ns", "b", web, "n2")
				c.PDB("ns", "pdb", web, snapshottest.MinAvailable(int32v(1)))
			},
			want: budgetOutcome{Status: availability.Status{ExpectedPods: 2, DesiredHealthy: 1, CurrentHealthy: 2, DisruptionsAllowed: 1}, AtFullHealth: 1},
		},
		"matchExpressions select across workloads, other namespaces do not count": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1", "n2"})
				c.Deployment("ns", "api", map[string]string{"app": "api"}, []string{"n3"})
				c.Deployment("other", "web", web, []string{"n3"})
				c.PDB("ns", "pdb", nil, snapshottest.MaxUnavailable(int32v(1)), func(p *policyv1.PodDisruptionBudget) {
					p.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}},
					}}
				})
			},
			want: budgetOutcome{Status: availability.Status{ExpectedPods: 3, DesiredHealthy: 2, CurrentHealthy: 3, DisruptionsAllowed: 1}, AtFullHealth: 1},
		},
		"empty selector matches the whole namespace": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1", "n2"})
				c.Deployment("ns", "api", map[string]string{"app": "api"}, []string{"n3"})
				c.PDB("ns", "pdb", nil, snapshottest.MinAvailable(int32v(2)), func(p *policyv1.PodDisruptionBudget) {
					p.Spec.Selector = &metav1.LabelSelector{}
				})
			},
			want: budgetOutcome{Status: availability.Status{ExpectedPods: 3, DesiredHealthy: 2, CurrentHealthy: 3, DisruptionsAllowed: 1}, AtFullHealth: 1},
		},
		"no selector matches nothing": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1", "n2"})
				c.PDB("ns", "pdb", nil, snapshottest.MinAvailable(int32v(1)), func(p *policyv1.PodDisruptionBudget) {
					p.Spec.Selector = nil
				})
			},
			want: budgetOutcome{Status: availability.Status{DesiredHealthy: 1}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := snapshottest.New()
			three(c)
			tc.build(c)
			m := availability.Build(c.Snapshot, now)
			if len(m.Budgets) != 1 {
				t.Fatalf("got %d budgets, want 1", len(m.Budgets))
			}
			b := m.Budgets[0]
			got := budgetOutcome{Status: b.Status, AtFullHealth: b.AtFullHealth, SyncError: b.SyncError, Unmanaged: b.UnmanagedPods}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("budget (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEviction(t *testing.T) {
	alwaysAllow := func(p *policyv1.PodDisruptionBudget) {
		p.Spec.UnhealthyPodEvictionPolicy = ptr.To(policyv1.AlwaysAllow)
	}
	type verdict struct {
		Allowed bool
		Code    int
	}
	tests := map[string]struct {
		build func(c *snapshottest.Cluster)
		pod   string
		want  verdict
	}{
		"budget with a disruption to give": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1", "n2", "n3"})
				c.PDB("ns", "pdb", web, snapshottest.MaxUnavailable(intstr.FromInt32(1)))
			},
			pod: "web-rs-0", want: verdict{Allowed: true},
		},
		"budget with nothing to give": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1"})
				c.PDB("ns", "pdb", web, snapshottest.MinAvailable(intstr.FromInt32(1)))
			},
			pod: "web-rs-0", want: verdict{Code: 429},
		},
		"two budgets": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1", "n2", "n3"})
				c.PDB("ns", "a", web, snapshottest.MaxUnavailable(intstr.FromInt32(1)))
				c.PDB("ns", "b", web, snapshottest.MaxUnavailable(intstr.FromInt32(1)))
			},
			pod: "web-rs-0", want: verdict{Code: 500},
		},
		"unready pod, budget not satisfied, IfHealthyBudget": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1", "n2"})
				c.SetReady("ns", "web-rs-0", false)
				c.PDB("ns", "pdb", web, snapshottest.MinAvailable(intstr.FromInt32(2)))
			},
			pod: "web-rs-0", want: verdict{Code: 429},
		},
		"unready pod, budget satisfied without it": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1", "n2", "n3"})
				c.SetReady("ns", "web-rs-0", false)
				c.PDB("ns", "pdb", web, snapshottest.MinAvailable(intstr.FromInt32(2)))
			},
			pod: "web-rs-0", want: verdict{Allowed: true},
		},
		"unready pod under AlwaysAllow": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{"n1", "n2"})
				c.SetReady("ns", "web-rs-0", false)
				c.PDB("ns", "pdb", web, snapshottest.MinAvailable(intstr.FromInt32(2)), alwaysAllow)
			},
			pod: "web-rs-0", want: verdict{Allowed: true},
		},
		"pending pod": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ns", "web", web, []string{""})
				c.PDB("ns", "pdb", web, snapshottest.MinAvailable(intstr.FromInt32(1)))
			},
			pod: "web-rs-0", want: verdict{Allowed: true},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := snapshottest.New()
			three(c)
			tc.build(c)
			m := availability.Build(c.Snapshot, now)
			p, ok := m.Pod("ns", tc.pod)
			if !ok {
				t.Fatalf("no pod %s", tc.pod)
			}
			e := m.Eviction(p)
			if diff := cmp.Diff(tc.want, verdict{Allowed: e.Allowed, Code: e.Code}); diff != "" || e.Reason == "" {
				t.Errorf("eviction %q (-want +got):\n%s", e.Reason, diff)
			}
		})
	}
}

// What the operator records on a budget reads back the same, and a budget without it
// (a user's own) opens by its numbers only.
func TestOpeningRoundTrip(t *testing.T) {
	escape := 10 * time.Minute
	for _, o := range []availability.Opening{
		{},
		{Strategy: holdfastv1alpha1.SingleReplicaSurge},
		{Strategy: holdfastv1alpha1.SingleReplicaProtect},
		{Strategy: holdfastv1alpha1.SingleReplicaProtect, EscapeAfter: &escape},
		{ZoneKey: "topology.kubernetes.io/zone", ZoneLimits: map[string]int32{"a": 1, "b": 2}},
	} {
		pdb := &policyv1.PodDisruptionBudget{}
		o.Record(pdb)
		if diff := cmp.Diff(o, availability.OpeningOf(pdb)); diff != "" {
			t.Errorf("read back (-recorded +read) from %v:\n%s", pdb.Annotations, diff)
		}
	}
	if got := availability.ZoneCounts("a=1,=2,b=x,c=3"); cmp.Diff(map[string]int32{"a": 1, "c": 3}, got) != "" {
		t.Errorf("ZoneCounts kept malformed entries: %v", got)
	}
}
