package policy

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

var dawn = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

// Builders: small functions that return objects with only what a case cares about.

func companion(mods ...func(*holdfastv1alpha1.NodeCompanion)) *holdfastv1alpha1.NodeCompanion {
	nc := &holdfastv1alpha1.NodeCompanion{
		ObjectMeta: metav1.ObjectMeta{Name: "storage", Namespace: "ns", Generation: 3, UID: "uid"},
		Spec: holdfastv1alpha1.NodeCompanionSpec{
			DaemonSet: &holdfastv1alpha1.DaemonSetReference{Name: "agent"},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "watcher"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "w", Image: "watcher"}}},
			},
		},
	}
	for _, m := range mods {
		m(nc)
	}
	return nc
}

func daemonSet(mods ...func(*corev1.PodSpec)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns"}}
	for _, m := range mods {
		m(&ds.Spec.Template.Spec)
	}
	return ds
}

func companionNode(name string, mods ...func(*corev1.Node)) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	for _, m := range mods {
		m(&n)
	}
	return n
}

func cordoned(n *corev1.Node) {
	n.Spec.Unschedulable = true
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
}

func labelled(k, v string) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Labels[k] = v }
}

func tainted(k string, effect corev1.TaintEffect) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k, Effect: effect}) }
}

func companionPod(name, nodeName string, ready bool, mods ...func(*corev1.Pod)) corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{holdfastv1alpha1.CompanionLabel: "storage"}},
		Spec:       corev1.PodSpec{NodeName: nodeName},
		Status:     corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
	for _, m := range mods {
		m(&p)
	}
	return p
}

func evicted(at time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: evictionReason, LastTransitionTime: metav1.NewTime(at),
		})
	}
}

func guarding(p *corev1.Pod) { p.Labels[holdfastv1alpha1.GuardLabel] = holdfastv1alpha1.GuardHold }

func withGuard(nc *holdfastv1alpha1.NodeCompanion) {
	nc.Spec.Guard = &holdfastv1alpha1.Guard{Enabled: true}
}

// fiveNodes is the e2e testbed's shape: node-1..node-5, each with a Ready companion.
func fiveNodes() ([]corev1.Node, []corev1.Pod) {
	var nodes []corev1.Node
	var pods []corev1.Pod
	for i := 1; i <= 5; i++ {
		name := fmt.Sprintf("node-%d", i)
		nodes = append(nodes, companionNode(name))
		pods = append(pods, companionPod("c-"+name, name, true))
	}
	return nodes, pods
}

func gapNames(gaps []holdfastv1alpha1.NodeGap) []string {
	var out []string
	for _, g := range gaps {
		out = append(out, g.Node+"="+g.Reason)
	}
	return out
}

func TestDecideReplicasAndGaps(t *testing.T) {
	type want struct {
		replicas int32
		missing  []string
		excluded []string
		drained  []string
		ready    string
		stale    int
	}
	cases := map[string]struct {
		nc        *holdfastv1alpha1.NodeCompanion
		ds        *appsv1.DaemonSet
		missingDS bool
		edit      func(nodes []corev1.Node, pods []corev1.Pod) ([]corev1.Node, []corev1.Pod)
		evictions map[string]time.Time
		want      want
	}{
		"all nodes covered": {
			want: want{replicas: 5, ready: ReasonAllNodesCovered},
		},
		"new node waits for its companion and holds the budget": {
			edit: func(n []corev1.Node, p []corev1.Pod) ([]corev1.Node, []corev1.Pod) {
				return append(n, companionNode("node-6")), p
			},
			want: want{replicas: 6, missing: []string{"node-6=Pending"}, ready: ReasonCompanionsMissing},
		},
		"cordoned node with its companion still running counts and does not block": {
			edit: func(n []corev1.Node, p []corev1.Pod) ([]corev1.Node, []corev1.Pod) {
				cordoned(&n[1])
				return n, p
			},
			want: want{replicas: 5, ready: ReasonAllNodesCovered},
		},
		"companion being evicted from a cordoned node: the node is drained and holds the budget": {
			edit: func(n []corev1.Node, p []corev1.Pod) ([]corev1.Node, []corev1.Pod) {
				cordoned(&n[1])
				p[1] = companionPod("c-node-2", "node-2", true, evicted(dawn.Add(-time.Minute)))
				return n, append(p, companionPod("replacement", "", false))
			},
			want: want{replicas: 5, missing: []string{"node-2=Drained"}, drained: []string{"node-2"}, ready: ReasonBudgetHeld},
		},
		"eviction seen on the watch, pod already gone: drained": {
			edit: func(n []corev1.Node, p []corev1.Pod) ([]corev1.Node, []corev1.Pod) {
				cordoned(&n[1])
				return n, append(p[:1:1], p[2:]...)
			},
			evictions: map[string]time.Time{"node-2": dawn.Add(-time.Minute)},
			want:      want{replicas: 5, missing: []string{"node-2=Drained"}, drained: []string{"node-2"}, ready: ReasonBudgetHeld},
		},
		"companion gone from a cordoned node without an eviction: excluded, the budget stays free": {
			edit: func(n []corev1.Node, p []corev1.Pod) ([]corev1.Node, []corev1.Pod) {
				cordoned(&n[1])
				return n, append(append(p[:1:1], p[2:]...), companionPod("pending-after-rollout", "", false))
			},
			want: want{replicas: 4, excluded: []string{"node-2=Cordoned"}, ready: ReasonAllNodesCovered},
		},
		"drained node uncordoned: back to normal, the new companion is pending": {
			nc: companion(func(nc *holdfastv1alpha1.NodeCompanion) {
				nc.Status.Drained = []holdfastv1alpha1.DrainedNode{{Node: "node-2", Since: metav1.NewTime(dawn.Add(-time.Hour))}}
			}),
			edit: func(n []corev1.Node, p []corev1.Pod) ([]corev1.Node, []corev1.Pod) {
				return n, append(p[:1:1], p[2:]...)
			},
			want: want{replicas: 5, missing: []string{"node-2=Pending"}, ready: ReasonCompanionsMissing},
		},
		"drained node remembered in status, still cordoned: keeps holding after an operator restart": {
			nc: companion(func(nc *holdfastv1alpha1.NodeCompanion) {
				nc.Status.Drained = []holdfastv1alpha1.DrainedNode{{Node: "node-2", Since: metav1.NewTime(dawn.Add(-time.Hour))}}
			}),
			edit: func(n []corev1.Node, p []corev1.Pod) ([]corev1.Node, []corev1.Pod) {
				cordoned(&n[1])
				return n, append(p[:1:1], p[2:]...)
			},
			want: want{replicas: 5, missing: []string{"node-2=Drained"}, drained: []string{"node-2"}, ready: ReasonBudgetHeld},
		},
		"companion back after the drain, node still cordoned: the drain is over": {
			nc: companion(func(nc *holdfastv1alpha1.NodeCompanion) {
				nc.Status.Drained = []holdfastv1alpha1.DrainedNode{{Node: "node-2", Since: metav1.NewTime(dawn.Add(-time.Hour))}}
			}),
			edit: func(n []corev1.Node, p []corev1.Pod) ([]corev1.Node, []corev1.Pod) {
				cordoned(&n[1])
				return n, p
			},
			want: want{replicas: 5, ready: ReasonAllNodesCovered},
		},
		"drained node deleted: replicas drop and the memory goes": {
			nc: companion(func(nc *holdfastv1alpha1.NodeCompanion) {
				nc.Status.Drained = []holdfastv1alpha1.DrainedNode{{Node: "node-2", Since: metav1.NewTime(dawn.Add(-time.Hour))}}
			}),
			edit: func(n []corev1.Node, p []corev1.Pod) ([]corev1.Node, []corev1.Pod) {
				return append(n[:1:1], n[2:]...), append(p[:1:1], p[2:]...)
			},
			want: want{replicas: 4, ready: ReasonAllNodesCovered},
		},
		"node deleted without a drain: its companion is stale": {
			edit: func(n []corev1.Node, p []corev1.Pod) ([]corev1.Node, []corev1.Pod) {
				return n[:4], p
			},
			want: want{replicas: 4, ready: ReasonAllNodesCovered, stale: 1},
		},
		"DaemonSet node selector leaves nodes out": {
			ds: daemonSet(func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"storage": "yes"} }),
			edit: func(n []corev1.Node, p []corev1.Pod) ([]corev1.Node, []corev1.Pod) {
				labelled("storage", "yes")(&n[0])
				labelled("storage", "yes")(&n[2])
				return n, p
			},
			want: want{replicas: 2, ready: ReasonAllNodesCovered},
		},
		"DaemonSet required node affinity": {
			ds: daemonSet(func(s *corev1.PodSpec) {
				s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"node-1", "node-2"},
					}}}},
				}}}
			}),
			want: want{replicas: 3, ready: ReasonAllNodesCovered},
		},
		"NoExecute taint not tolerated by the DaemonSet": {
			edit: func(n []corev1.Node, p []corev1.Pod) ([]corev1.Node, []corev1.Pod) {
				tainted("dedicated", corev1.TaintEffectNoExecute)(&n[4])
				return n, p
			},
			want: want{replicas: 4, ready: ReasonAllNodesCovered},
		},
		"taint tolerated by the DaemonSet": {
			ds: daemonSet(func(s *corev1.PodSpec) {
				s.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
			}),
			edit: func(n []corev1.Node, p []corev1.Pod) ([]corev1.Node, []corev1.Pod) {
				tainted("dedicated", corev1.TaintEffectNoSchedule)(&n[4])
				return n, p
			},
			want: want{replicas: 5, ready: ReasonAllNodesCovered},
		},
		"memory pressure does not remove a node, as for the DaemonSet": {
			edit: func(n []corev1.Node, p []corev1.Pod) ([]corev1.Node, []corev1.Pod) {
				tainted(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule)(&n[4])
				return n, p
			},
			want: want{replicas: 5, ready: ReasonAllNodesCovered},
		},
		"node selector target": {
			nc: companion(func(nc *holdfastv1alpha1.NodeCompanion) {
				nc.Spec.DaemonSet = nil
				nc.Spec.NodeSelector = map[string]string{"storage": "yes"}
			}),
			edit: func(n []corev1.Node, p []corev1.Pod) ([]corev1.Node, []corev1.Pod) {
				labelled("storage", "yes")(&n[0])
				labelled("storage", "yes")(&n[1])
				cordoned(&n[1])
				return n, p
			},
			want: want{replicas: 2, ready: ReasonAllNodesCovered},
		},
		"DaemonSet deleted: owned objects left alone": {
			missingDS: true,
			want:      want{ready: ReasonTargetNotFound},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nodes, pods := fiveNodes()
			if tc.edit != nil {
				nodes, pods = tc.edit(nodes, pods)
			}
			nc := tc.nc
			if nc == nil {
				nc = companion()
			}
			ds := tc.ds
			if ds == nil && !tc.missingDS {
				ds = daemonSet()
			}
			d := DecideCompanion(CompanionObserved{Companion: nc, DaemonSet: ds, TargetMissing: tc.missingDS, Nodes: nodes, Pods: pods, Evictions: tc.evictions, Now: dawn})

			var got want
			if d.Deployment != nil {
				got.replicas = *d.Deployment.Spec.Replicas
			} else if d.Budget != nil {
				t.Errorf("budget without a Deployment")
			}
			got.missing = gapNames(d.Status.Missing)
			got.excluded = gapNames(d.Status.Excluded)
			for _, dn := range d.Status.Drained {
				got.drained = append(got.drained, dn.Node)
			}
			got.ready = meta.FindStatusCondition(d.Status.Conditions, holdfastv1alpha1.ConditionReady).Reason
			got.stale = len(d.StalePods)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
			if got.replicas != d.Status.Desired {
				t.Errorf("status desired %d, Deployment replicas %d", d.Status.Desired, got.replicas)
			}
		})
	}
}

func TestDecideDeploymentShape(t *testing.T) {
	nodes, pods := fiveNodes()
	tainted("dedicated", corev1.TaintEffectNoSchedule)(&nodes[0])
	nc := companion(func(nc *holdfastv1alpha1.NodeCompanion) {
		nc.Spec.PriorityClassName = "system-node-critical"
		nc.Spec.Tolerations = []corev1.Toleration{{Key: "extra", Operator: corev1.TolerationOpExists}}
	})
	ds := daemonSet(func(s *corev1.PodSpec) {
		s.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
		// A DaemonSet that tolerates everything: copied as is, the companion would
		// tolerate cordons and return to a node being drained.
		s.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	})
	for i := range nodes {
		labelled("kubernetes.io/os", "linux")(&nodes[i])
	}
	cordoned(&nodes[3])
	d := DecideCompanion(CompanionObserved{Companion: nc, DaemonSet: ds, Nodes: nodes, Pods: pods, Now: dawn})
	dep := d.Deployment

	if diff := cmp.Diff(&appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(1))},
	}, &dep.Spec.Strategy); diff != "" {
		t.Errorf("strategy (-want +got):\n%s", diff)
	}
	spec := dep.Spec.Template.Spec
	if diff := cmp.Diff(map[string]string{"kubernetes.io/os": "linux"}, spec.NodeSelector); diff != "" {
		t.Errorf("node selector (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.Toleration{
		{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "extra", Operator: corev1.TolerationOpExists},
		{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}, spec.Tolerations); diff != "" {
		t.Errorf("tolerations (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{holdfastv1alpha1.CompanionLabel: "storage"}},
		TopologyKey:   corev1.LabelHostname,
	}}}, spec.Affinity.PodAntiAffinity); diff != "" {
		t.Errorf("anti-affinity (-want +got):\n%s", diff)
	}
	if spec.PriorityClassName != "system-node-critical" {
		t.Errorf("priority class %q", spec.PriorityClassName)
	}
	if diff := cmp.Diff(map[string]string{"app": "watcher", holdfastv1alpha1.CompanionLabel: "storage"}, dep.Spec.Template.Labels); diff != "" {
		t.Errorf("pod labels (-want +got):\n%s", diff)
	}
	if nc.Spec.Template.Labels[holdfastv1alpha1.CompanionLabel] != "" {
		t.Errorf("DecideCompanion changed the NodeCompanion's template")
	}
	again := DecideCompanion(CompanionObserved{Companion: nc, DaemonSet: ds, Nodes: nodes, Pods: pods, Now: dawn.Add(time.Hour)})
	if again.Deployment.Annotations[SpecHashAnnotation] != dep.Annotations[SpecHashAnnotation] {
		t.Errorf("the same inputs gave another spec hash: the Deployment would be updated for nothing")
	}
}

func TestDecideBudgets(t *testing.T) {
	cases := map[string]struct {
		nc         *holdfastv1alpha1.NodeCompanion
		guardedPod []int
		wantMain   policyv1.PodDisruptionBudgetSpec
		wantGuard  *policyv1.PodDisruptionBudgetSpec
		guarded    []string
	}{
		"no guard: one budget with maxUnavailable": {
			nc: companion(),
			wantMain: policyv1.PodDisruptionBudgetSpec{
				Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{holdfastv1alpha1.CompanionLabel: "storage"}},
				MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			},
		},
		"guard label ignored when the guard is off": {
			nc:         companion(),
			guardedPod: []int{2},
			wantMain: policyv1.PodDisruptionBudgetSpec{
				Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{holdfastv1alpha1.CompanionLabel: "storage"}},
				MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			},
		},
		"guard on, nothing held: the main budget allows one of five": {
			nc:        companion(withGuard),
			wantMain:  mainSpec(4),
			wantGuard: guardSpec(),
		},
		"one node held: the others keep one disruption": {
			nc:         companion(withGuard),
			guardedPod: []int{2},
			wantMain:   mainSpec(3),
			wantGuard:  guardSpec(),
			guarded:    []string{"node-3"},
		},
		"percentage rounds up": {
			nc: companion(withGuard, func(nc *holdfastv1alpha1.NodeCompanion) {
				nc.Spec.MaxUnavailable = ptr.To(intstr.FromString("30%"))
			}),
			guardedPod: []int{0},
			wantMain:   mainSpec(2),
			wantGuard:  guardSpec(),
			guarded:    []string{"node-1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nodes, pods := fiveNodes()
			for _, i := range tc.guardedPod {
				guarding(&pods[i])
			}
			d := DecideCompanion(CompanionObserved{Companion: tc.nc, DaemonSet: daemonSet(), Nodes: nodes, Pods: pods, Now: dawn})
			if diff := cmp.Diff(tc.wantMain, d.Budget.Spec); diff != "" {
				t.Errorf("main budget (-want +got):\n%s", diff)
			}
			var gotGuard *policyv1.PodDisruptionBudgetSpec
			if d.GuardBudget != nil {
				gotGuard = &d.GuardBudget.Spec
			}
			if diff := cmp.Diff(tc.wantGuard, gotGuard); diff != "" {
				t.Errorf("guard budget (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.guarded, d.Status.Guarded); diff != "" {
				t.Errorf("guarded nodes (-want +got):\n%s", diff)
			}
		})
	}
}

func mainSpec(minAvailable int32) policyv1.PodDisruptionBudgetSpec {
	return policyv1.PodDisruptionBudgetSpec{
		Selector: &metav1.LabelSelector{
			MatchLabels: map[string]string{holdfastv1alpha1.CompanionLabel: "storage"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: holdfastv1alpha1.GuardLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{holdfastv1alpha1.GuardHold},
			}},
		},
		MinAvailable: ptr.To(intstr.FromInt32(minAvailable)),
	}
}

func guardSpec() *policyv1.PodDisruptionBudgetSpec {
	return &policyv1.PodDisruptionBudgetSpec{
		Selector: &metav1.LabelSelector{
			MatchLabels: map[string]string{holdfastv1alpha1.CompanionLabel: "storage"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: holdfastv1alpha1.GuardLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{holdfastv1alpha1.GuardHold},
			}},
		},
		MaxUnavailable: ptr.To(intstr.FromInt32(0)),
	}
}

func TestDecideStatusIsStable(t *testing.T) {
	nodes, pods := fiveNodes()
	nodes = append(nodes, companionNode("node-6"))
	nc := companion()
	first := DecideCompanion(CompanionObserved{Companion: nc, DaemonSet: daemonSet(), Nodes: nodes, Pods: pods, Now: dawn})
	if first.RequeueAfter != degradedAfter {
		t.Errorf("requeue after %s, want %s", first.RequeueAfter, degradedAfter)
	}
	nc.Status = first.Status
	later := DecideCompanion(CompanionObserved{Companion: nc, DaemonSet: daemonSet(), Nodes: nodes, Pods: pods, Now: dawn.Add(time.Minute)})
	if diff := cmp.Diff(first.Status, later.Status); diff != "" {
		t.Errorf("status changed with nothing new (-first +later):\n%s", diff)
	}
	nc.Status = later.Status
	late := DecideCompanion(CompanionObserved{Companion: nc, DaemonSet: daemonSet(), Nodes: nodes, Pods: pods, Now: dawn.Add(degradedAfter)})
	c := meta.FindStatusCondition(late.Status.Conditions, holdfastv1alpha1.ConditionDegraded)
	if c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Time.Equal(dawn.Add(degradedAfter)) {
		t.Errorf("Degraded = %s since %s, want True since %s", c.Status, c.LastTransitionTime, dawn.Add(degradedAfter))
	}
}

// The pod and node informers are separate streams: the operator can see a drain's
// eviction before the cordon that came first. The eviction must not be dropped then.
func TestDecideEvictionSeenBeforeTheCordon(t *testing.T) {
	nodes, pods := fiveNodes()
	pods = append(pods[:1:1], pods[2:]...)
	evictedAt := dawn.Add(-time.Second)
	nc := companion()
	first := DecideCompanion(CompanionObserved{Companion: nc, DaemonSet: daemonSet(), Nodes: nodes, Pods: pods, Evictions: map[string]time.Time{"node-2": evictedAt}, Now: dawn})
	if diff := cmp.Diff(map[string]time.Time{"node-2": evictedAt}, first.OpenEvictions); diff != "" {
		t.Fatalf("open evictions (-want +got):\n%s", diff)
	}
	nc.Status = first.Status
	cordoned(&nodes[1])
	second := DecideCompanion(CompanionObserved{Companion: nc, DaemonSet: daemonSet(), Nodes: nodes, Pods: pods, Evictions: first.OpenEvictions, Now: dawn})
	if *second.Deployment.Spec.Replicas != 5 || len(second.Status.Drained) != 1 {
		t.Errorf("replicas %d, drained %v; want 5 and node-2 holding the budget", *second.Deployment.Spec.Replicas, second.Status.Drained)
	}
}

// The same, across a restart or a change of leader: the new process has no memory of the
// eviction, only the status the old one wrote, and that is enough.
func TestDecideEvictionSurvivesARestart(t *testing.T) {
	nodes, pods := fiveNodes()
	pods = append(pods[:1:1], pods[2:]...)
	evictedAt := dawn.Add(-time.Second)
	nc := companion()
	first := DecideCompanion(CompanionObserved{Companion: nc, DaemonSet: daemonSet(), Nodes: nodes, Pods: pods, Evictions: map[string]time.Time{"node-2": evictedAt}, Now: dawn})
	want := []holdfastv1alpha1.DrainedNode{{Node: "node-2", Since: metav1.NewTime(evictedAt)}}
	if diff := cmp.Diff(want, first.Status.Evicted); diff != "" {
		t.Fatalf("status.evicted (-want +got):\n%s", diff)
	}
	nc.Status = first.Status
	cordoned(&nodes[1])
	restarted := DecideCompanion(CompanionObserved{Companion: nc, DaemonSet: daemonSet(), Nodes: nodes, Pods: pods, Now: dawn.Add(time.Minute)})
	if *restarted.Deployment.Spec.Replicas != 5 || len(restarted.Status.Drained) != 1 || len(restarted.Status.Evicted) != 0 {
		t.Errorf("replicas %d, drained %v, evicted %v; want 5 and node-2 drained, holding the budget", *restarted.Deployment.Spec.Replicas, restarted.Status.Drained, restarted.Status.Evicted)
	}
	// A companion running there again ends it.
	nc.Status = restarted.Status
	nodes[1].Spec.Unschedulable, nodes[1].Spec.Taints = false, nil
	back := append(pods, companionPod("c-node-2-new", "node-2", true))
	over := DecideCompanion(CompanionObserved{Companion: nc, DaemonSet: daemonSet(), Nodes: nodes, Pods: back, Now: dawn.Add(2 * time.Minute)})
	if len(over.Status.Drained) != 0 || len(over.Status.Evicted) != 0 || len(over.OpenEvictions) != 0 {
		t.Errorf("drained %v, evicted %v, open %v after the companion came back; want none", over.Status.Drained, over.Status.Evicted, over.OpenEvictions)
	}
}
