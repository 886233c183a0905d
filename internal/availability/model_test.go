package availability_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
)

func TestPlacement(t *testing.T) {
	c := snapshottest.New()
	c.Node("n1", "a")
	c.Node("n2", "a")
	c.Node("n3", "b")
	c.Deployment("ns", "web", web, []string{"n2", "n2", "n3", ""})
	m := availability.Build(c.Snapshot, now)
	w, ok := m.Workload(availability.WorkloadRef{Kind: "Deployment", Namespace: "ns", Name: "web"})
	if !ok {
		t.Fatal("Deployment ns/web not modelled")
	}
	want := availability.Placement{
		Scheduled:   3,
		PerNode:     map[string]int32{"n2": 2, "n3": 1},
		PerZone:     map[string]int32{"a": 2, "b": 1},
		BusiestNode: "n2", OnBusiestNode: 2,
		BusiestZone: "a", InBusiestZone: 2,
	}
	if diff := cmp.Diff(want, w.Placement); diff != "" {
		t.Errorf("placement (-want +got):\n%s", diff)
	}
	if got := w.Placement.NodeLoss("n1"); got != 0 {
		t.Errorf("NodeLoss(n1) = %d, want 0", got)
	}
	if got := w.Placement.ZoneLoss("a"); got != 2 {
		t.Errorf("ZoneLoss(a) = %d, want 2", got)
	}
	if w.Desired != 4 || w.Ready != 3 {
		t.Errorf("desired/ready = %d/%d, want 4/3", w.Desired, w.Ready)
	}
	if diff := cmp.Diff([]string{"a", "b"}, m.Zones()); diff != "" {
		t.Errorf("zones (-want +got):\n%s", diff)
	}
}

// TestLookups checks the maps the drain planner uses: pod to workload and budgets, and
// node to pods.
func TestLookups(t *testing.T) {
	c := snapshottest.New()
	three(c)
	c.Deployment("ns", "web", web, []string{"n1", "n2"})
	c.PDB("ns", "a", web, snapshottest.MaxUnavailable(intstr.FromInt32(1)))
	c.PDB("ns", "b", web, snapshottest.MinAvailable(intstr.FromInt32(1)))
	m := availability.Build(c.Snapshot, now)

	p, ok := m.Pod("ns", "web-rs-1")
	if !ok {
		t.Fatal("pod ns/web-rs-1 not found")
	}
	var budgets []string
	for _, b := range p.Budgets {
		budgets = append(budgets, b.Name)
	}
	if diff := cmp.Diff([]string{"a", "b"}, budgets); diff != "" {
		t.Errorf("budgets of the pod (-want +got):\n%s", diff)
	}
	if p.Workload == nil || p.Workload.Name != "web" || p.Workload.Kind != "Deployment" {
		t.Errorf("workload of the pod = %+v, want Deployment web", p.Workload)
	}
	n, _ := m.Node("n2")
	if len(n.Members) != 1 || n.Members[0] != p {
		t.Errorf("pods of n2 = %v, want the pod web-rs-1", n.Members)
	}
}

func TestManifestProjection(t *testing.T) {
	s := &snapshot.Snapshot{Source: snapshot.SourceManifests}
	s.Deployments = []appsv1.Deployment{{}}
	s.Deployments[0].Namespace, s.Deployments[0].Name = "ns", "web"
	s.Deployments[0].Spec.Template = snapshottest.Template(web)
	// No replicas: the API server's default of 1 applies.
	m := availability.Build(s, now)
	w := m.Workloads[0]
	if !w.Projected || w.Desired != 1 || w.Ready != 1 || len(w.Members) != 1 || w.Members[0].Count != 1 {
		t.Errorf("projected workload = %+v, want one projected ready replica", w)
	}
}

func TestTemplateFacts(t *testing.T) {
	host := func(required bool) func(*appsv1.Deployment) {
		return func(d *appsv1.Deployment) {
			term := corev1.PodAffinityTerm{LabelSelector: d.Spec.Selector, TopologyKey: corev1.LabelHostname}
			aa := &corev1.PodAntiAffinity{}
			if required {
				aa.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{term}
			} else {
				aa.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term}}
			}
			d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: aa}
		}
	}
	zoneSpread := func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: d.Spec.Selector,
		}}
	}
	surge := func(s, u intstr.IntOrString) func(*appsv1.Deployment) {
		return func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}
		}
	}
	type facts struct {
		Node, Zone availability.Spread
		OnePerNode bool
		Strategy   availability.Strategy
	}
	defaults := availability.Strategy{Type: "RollingUpdate", MaxSurge: 1, MaxUnavailable: 0}
	tests := map[string]struct {
		mutate []func(*appsv1.Deployment)
		want   facts
	}{
		"nothing":                   {want: facts{Strategy: defaults}},
		"preferred anti-affinity":   {mutate: []func(*appsv1.Deployment){host(false)}, want: facts{Node: availability.SpreadPreferred, Strategy: defaults}},
		"required anti-affinity":    {mutate: []func(*appsv1.Deployment){host(true)}, want: facts{Node: availability.SpreadRequired, OnePerNode: true, Strategy: defaults}},
		"zone spread spreads nodes": {mutate: []func(*appsv1.Deployment){zoneSpread}, want: facts{Node: availability.SpreadRequired, Zone: availability.SpreadRequired, Strategy: defaults}},
		"explicit surge and unavailability": {
			mutate: []func(*appsv1.Deployment){surge(intstr.FromInt32(0), intstr.FromString("50%"))},
			want:   facts{Strategy: availability.Strategy{Type: "RollingUpdate", MaxUnavailable: 1}},
		},
		"zero surge and zero unavailability means one unavailable": {
			mutate: []func(*appsv1.Deployment){surge(intstr.FromInt32(0), intstr.FromInt32(0))},
			want:   facts{Strategy: availability.Strategy{Type: "RollingUpdate", MaxUnavailable: 1}},
		},
		"recreate": {
			mutate: []func(*appsv1.Deployment){func(d *appsv1.Deployment) { d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType }},
			want:   facts{Strategy: availability.Strategy{Type: "Recreate"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := snapshottest.New()
			three(c)
			c.Deployment("ns", "web", web, []string{"n1", "n2", "n3"}, tc.mutate...)
			f := availability.Build(c.Snapshot, now).Workloads[0].Facts
			got := facts{Node: f.NodeSpread, Zone: f.ZoneSpread, OnePerNode: f.OnePerNode, Strategy: f.Strategy}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("facts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEligibleNodes(t *testing.T) {
	c := snapshottest.New()
	c.Node("n1", "a")
	c.Node("n2", "a")
	c.Node("n3", "b")
	c.Node("n4", "b")
	c.Snapshot.Nodes[1].Spec.Unschedulable = true
	c.Snapshot.Nodes[2].Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
	m := availability.Build(c.Snapshot, now)
	tests := map[string]struct {
		spec corev1.PodSpec
		want int
	}{
		"untolerated taint and cordon exclude nodes": {want: 2},
		"toleration admits the tainted node": {
			spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}},
			want: 3,
		},
		"node selector narrows to a zone": {
			spec: corev1.PodSpec{NodeSelector: map[string]string{corev1.LabelTopologyZone: "b"}},
			want: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := m.EligibleNodes(&corev1.PodTemplateSpec{Spec: tc.spec}); got != tc.want {
				t.Errorf("EligibleNodes = %d, want %d", got, tc.want)
			}
		})
	}
	if got := availability.Build(&snapshot.Snapshot{}, now).EligibleNodes(&corev1.PodTemplateSpec{}); got != -1 {
		t.Errorf("EligibleNodes without nodes = %d, want -1", got)
	}
	// The model used to leave cordoned nodes out of a DaemonSet's count from manifests;
	// the DaemonSet controller tolerates the cordon for its pods, so they count (its
	// desiredNumberScheduled, and the budget's expected pods).
	if got := m.DaemonSetNodes(&corev1.PodTemplateSpec{}); got != 3 {
		t.Errorf("DaemonSetNodes = %d, want 3: the cordoned node counts, the tainted one does not", got)
	}
}

// A dump's pods keep their status: an unready pod read from a file is not healthy, as
// the disruption controller counts it.
func TestManifestPodsKeepTheirStatus(t *testing.T) {
	c := snapshottest.New()
	three(c)
	c.Snapshot.Source = snapshot.SourceManifests
	c.Deployment("ns", "web", web, []string{"n1", "n2", "n3"})
	c.SetReady("ns", "web-rs-0", false)
	c.PDB("ns", "pdb", web, snapshottest.MaxUnavailable(intstr.FromInt32(1)))
	m := availability.Build(c.Snapshot, now)
	want := availability.Status{ExpectedPods: 3, DesiredHealthy: 2, CurrentHealthy: 2}
	if got := m.Budgets[0].Status; got != want {
		t.Errorf("status = %+v, want %+v", got, want)
	}
}
