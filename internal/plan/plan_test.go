package plan_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/predict"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
)

// predicted is s as the operator will make it, which plans reason about.
func predicted(s *snapshot.Snapshot) snapshot.Predicted {
	p, _ := predict.Operator(s, now, policy.Settings{})
	return p
}

// cluster returns a live cluster with nodes in zone-a, zone-b, zone-c in turn.
func cluster(nodes ...string) *snapshottest.Cluster {
	c := snapshottest.New()
	for i, n := range nodes {
		c.Node(n, "zone-"+string(rune('a'+i%3)))
	}
	return c
}

// node returns the named node of the cluster for a test to change.
func node(c *snapshottest.Cluster, name string) *corev1.Node {
	for i := range c.Snapshot.Nodes {
		if c.Snapshot.Nodes[i].Name == name {
			return &c.Snapshot.Nodes[i]
		}
	}
	panic("no node " + name)
}

// allocatable gives the nodes room for cpu (in millicores) and pods.
func allocatable(c *snapshottest.Cluster, cpu string, pods string, names ...string) {
	for _, n := range names {
		node(c, n).Status.Allocatable = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"),
			corev1.ResourcePods: resource.MustParse(pods),
		}
	}
}

func requestCPU(cpu string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
}

func antiAffinity(key string, app string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, TopologyKey: key,
			}},
		}}
	}
}

func spread(key string, app string, honourTaints bool) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		t := corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		}
		if honourTaints {
			t.NodeTaintsPolicy = ptr.To(corev1.NodeInclusionPolicyHonor)
		}
		d.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{t}
	}
}

func app(name string) map[string]string { return map[string]string{"app": name} }

func mustPlan(t *testing.T, s *snapshot.Snapshot, targets plan.Targets, opts plan.Options) *plan.Plan {
	t.Helper()
	p, err := plan.DrainWaves(predicted(s), now, targets, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func waves(p *plan.Plan) [][]string {
	out := [][]string{}
	for _, w := range p.Waves {
		out = append(out, w.Nodes)
	}
	return out
}

func TestBlockers(t *testing.T) {
	tests := map[string]struct {
		build func(c *snapshottest.Cluster)
		opts  plan.Options
		want  []plan.Reason
	}{
		"single-replica budget": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("prod", "mysvc", app("mysvc"), []string{"n1"})
				c.PDB("prod", "mysvc-prod", app("mysvc"), snapshottest.MinAvailable(intstr.FromInt32(1)))
			},
			want: []plan.Reason{{Type: plan.SingleReplicaBudget, Kind: "PodDisruptionBudget", Namespace: "prod", Name: "mysvc-prod", Permanent: true}},
		},
		"single-replica budget that a DisruptionPolicy manages: held until the policy makes room": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("prod", "mysvc", app("mysvc"), []string{"n1"})
				c.PDB("prod", "holdfast-deploy-mysvc", app("mysvc"), snapshottest.MinAvailable(intstr.FromInt32(1)), snapshottest.ManagedBy("defaults"))
			},
			want: []plan.Reason{{Type: plan.PolicyHeld, Kind: "PodDisruptionBudget", Namespace: "prod", Name: "holdfast-deploy-mysvc"}},
		},
		"50% on a single replica rounds up": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("prod", "worker", app("worker"), []string{"n1"})
				c.PDB("prod", "worker", app("worker"), snapshottest.MinAvailable(intstr.FromString("50%")))
			},
			want: []plan.Reason{{Type: plan.SingleReplicaBudget, Kind: "PodDisruptionBudget", Namespace: "prod", Name: "worker", Permanent: true}},
		},
		"budget that never allows with every pod healthy": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "db", app("db"), []string{"n1", "n2", "n3"})
				c.PDB("shop", "db", app("db"), snapshottest.MaxUnavailable(intstr.FromInt32(0)))
			},
			want: []plan.Reason{{Type: plan.BudgetNeverAllows, Kind: "PodDisruptionBudget", Namespace: "shop", Name: "db", Permanent: true}},
		},
		"budget with nothing to give now, counting a pod already unready elsewhere": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "web", app("web"), []string{"n1", "n2", "n3"})
				c.PDB("shop", "web", app("web"), snapshottest.MaxUnavailable(intstr.FromInt32(1)))
				c.SetReady("shop", "web-rs-1", false)
			},
			want: []plan.Reason{{Type: plan.BudgetExhausted, Kind: "PodDisruptionBudget", Namespace: "shop", Name: "web"}},
		},
		"unready pod under IfHealthyBudget": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "web", app("web"), []string{"n1", "n2", "n3"})
				c.PDB("shop", "web", app("web"), snapshottest.MaxUnavailable(intstr.FromInt32(1)))
				c.SetReady("shop", "web-rs-0", false)
				c.SetReady("shop", "web-rs-1", false)
			},
			want: []plan.Reason{{Type: plan.UnhealthyPod, Kind: "Pod", Namespace: "shop", Name: "web-rs-0"}},
		},
		"two budgets over one pod": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "web", app("web"), []string{"n1", "n2", "n3"})
				c.PDB("shop", "web", app("web"), snapshottest.MaxUnavailable(intstr.FromInt32(1)))
				c.PDB("shop", "all", nil, snapshottest.MaxUnavailable(intstr.FromInt32(1)), func(p *policyv1.PodDisruptionBudget) {
					p.Spec.Selector = &metav1.LabelSelector{}
				})
			},
			want: []plan.Reason{{Type: plan.OverlappingBudgets, Kind: "Pod", Namespace: "shop", Name: "web-rs-0", Permanent: true}},
		},
		"bare pod": {
			build: func(c *snapshottest.Cluster) { c.Pod("ops", "debug", app("debug"), "n1") },
			want:  []plan.Reason{{Type: plan.NoController, Kind: "Pod", Namespace: "ops", Name: "debug", Permanent: true}},
		},
		"emptyDir data": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "cache", app("cache"), []string{"n1", "n2"}, func(d *appsv1.Deployment) {
					d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
				})
			},
			want: []plan.Reason{{Type: plan.EmptyDirData, Kind: "Pod", Namespace: "shop", Name: "cache-rs-0", Permanent: true}},
		},
		"flags let bare pods and emptyDir go": {
			build: func(c *snapshottest.Cluster) {
				c.Pod("ops", "debug", app("debug"), "n1")
				c.Deployment("shop", "cache", app("cache"), []string{"n1", "n2"}, func(d *appsv1.Deployment) {
					d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
				})
			},
			opts: plan.Options{DrainFilter: availability.DrainFilter{Force: true, DeleteEmptyDirData: true}},
		},
		"no room for an evicted pod": {
			build: func(c *snapshottest.Cluster) {
				allocatable(c, "1", "110", "n1", "n2", "n3")
				c.Deployment("shop", "big", app("big"), []string{"n1", "n2", "n3"}, requestCPU("600m"))
			},
			want: []plan.Reason{{Type: plan.NoRoom, Kind: "Pod", Namespace: "shop", Name: "big-rs-0"}},
		},
		"companion that would stay Pending": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ops", "backup", app("backup"), []string{"n1", "n2", "n3"}, antiAffinity(corev1.LabelHostname, "backup"))
				c.PDB("ops", "backup", app("backup"), snapshottest.MaxUnavailable(intstr.FromInt32(1)))
			},
			want: []plan.Reason{{Type: plan.CompanionPending, Kind: "Pod", Namespace: "ops", Name: "backup-rs-0"}},
		},
		"pod of a NodeCompanion's Deployment": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("ops", "backup-n1", app("backup"), []string{"n1"}, func(d *appsv1.Deployment) {
					d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "holdfast.dev/v1alpha1", Kind: "NodeCompanion", Name: "backup", Controller: ptr.To(true)}}
					d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: "n1"}
				})
			},
			want: []plan.Reason{{Type: plan.CompanionPending, Kind: "Pod", Namespace: "ops", Name: "backup-n1-rs-0"}},
		},
		"DaemonSet pods stay and block nothing with --ignore-daemonsets": {
			build: func(c *snapshottest.Cluster) {
				c.DaemonSet("ops", "agent", app("agent"), []string{"n1", "n2", "n3"})
				c.PDB("ops", "agent", app("agent"), snapshottest.MinAvailable(intstr.FromInt32(3)))
			},
			opts: plan.Options{DrainFilter: availability.DrainFilter{IgnoreDaemonSets: true}},
		},
		"DaemonSet pod without --ignore-daemonsets": {
			build: func(c *snapshottest.Cluster) {
				c.DaemonSet("ops", "agent", app("agent"), []string{"n1", "n2", "n3"})
			},
			want: []plan.Reason{{Type: plan.DaemonSetPod, Kind: "Pod", Namespace: "ops", Name: "agent-0", Permanent: true}},
		},
		"orphaned DaemonSet pod without --force": {
			build: func(c *snapshottest.Cluster) {
				c.DaemonSet("ops", "agent", app("agent"), []string{"n1", "n2", "n3"})
				c.Snapshot.DaemonSets = nil
			},
			opts: plan.Options{DrainFilter: availability.DrainFilter{IgnoreDaemonSets: true}},
			want: []plan.Reason{{Type: plan.NoController, Kind: "Pod", Namespace: "ops", Name: "agent-0", Permanent: true}},
		},
		"orphaned DaemonSet pod with --force": {
			build: func(c *snapshottest.Cluster) {
				c.DaemonSet("ops", "agent", app("agent"), []string{"n1", "n2", "n3"})
				c.Snapshot.DaemonSets = nil
			},
			opts: plan.Options{DrainFilter: availability.DrainFilter{Force: true}},
		},
		"pods --pod-selector leaves out block nothing": {
			build: func(c *snapshottest.Cluster) {
				c.Pod("ops", "debug", app("debug"), "n1")
				c.DaemonSet("ops", "agent", app("agent"), []string{"n1", "n2", "n3"})
			},
			opts: plan.Options{DrainFilter: availability.DrainFilter{PodSelector: labels.SelectorFromSet(app("web"))}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := cluster("n1", "n2", "n3")
			tc.build(c)
			p := mustPlan(t, c.Snapshot, plan.Targets{Names: []string{"n1"}}, tc.opts)
			var got []plan.Reason
			for _, b := range p.Blocked {
				if b.Node != "n1" {
					t.Errorf("blocked node %s, want only n1", b.Node)
				}
				got = append(got, b.Reasons...)
			}
			for _, r := range got {
				if r.Message == "" {
					t.Errorf("%s reason has no message", r.Type)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(plan.Reason{}, "Message")); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
			if wantWaves := len(tc.want) == 0; wantWaves != (len(p.Waves) == 1) {
				t.Errorf("waves %v; want n1 drained: %v", waves(p), wantWaves)
			}
		})
	}
}

func TestBlockerMessages(t *testing.T) {
	c := cluster("n1", "n2", "n3")
	allocatable(c, "1", "110", "n1", "n2", "n3")
	c.Deployment("prod", "mysvc", app("mysvc"), []string{"n1"}, requestCPU("600m"))
	c.PDB("prod", "mysvc-prod", app("mysvc"), snapshottest.MinAvailable(intstr.FromInt32(1)))
	c.Deployment("shop", "big", app("big"), []string{"n2", "n3"}, requestCPU("600m"))
	node(c, "n3").Spec.Unschedulable = true
	p := mustPlan(t, c.Snapshot, plan.Targets{Names: []string{"n1", "n2"}}, plan.Options{})
	got := map[string]string{}
	for _, b := range p.Blocked {
		for _, r := range b.Reasons {
			got[b.Node] = r.Message
		}
	}
	want := map[string]string{
		"n1": "PodDisruptionBudget prod/mysvc-prod (minAvailable 1) wants 1 healthy of 1 expected pods, so it never allows an eviction: on a single replica every drain of its node waits forever; run 2 replicas or use maxUnavailable 1",
		"n2": "its replacement fits on no other node: 0/3 nodes are available: 2 cordoned or being drained, 1 with too little cpu",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

func TestWaves(t *testing.T) {
	tests := map[string]struct {
		build      func(c *snapshottest.Cluster)
		opts       plan.Options
		want       [][]string
		lowerBound int
	}{
		"no budget, no pods: one wave": {
			build:      func(*snapshottest.Cluster) {},
			want:       [][]string{{"n1", "n2", "n3", "n4"}},
			lowerBound: 1,
		},
		"max-concurrent caps a wave": {
			build:      func(*snapshottest.Cluster) {},
			opts:       plan.Options{MaxConcurrent: 3},
			want:       [][]string{{"n1", "n2", "n3"}, {"n4"}},
			lowerBound: 2,
		},
		"a budget allowing two takes two nodes a wave": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "web", app("web"), []string{"n1", "n2", "n3", "n4"})
				c.PDB("shop", "web", app("web"), snapshottest.MaxUnavailable(intstr.FromInt32(2)))
			},
			want:       [][]string{{"n1", "n2"}, {"n3", "n4"}},
			lowerBound: 2,
		},
		"pods already unready leave less to give": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "web", app("web"), []string{"n1", "n2", "n3", "n4", "n5"})
				c.PDB("shop", "web", app("web"), snapshottest.MaxUnavailable(intstr.FromInt32(2)))
				c.SetReady("shop", "web-rs-4", false)
			},
			want:       [][]string{{"n1"}, {"n2"}, {"n3"}, {"n4"}},
			lowerBound: 4,
		},
		"one budget over two workloads (a tier) makes their nodes conflict": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "cart", map[string]string{"app": "cart", "tier": "front"}, []string{"n1", "n2"})
				c.Deployment("shop", "search", map[string]string{"app": "search", "tier": "front"}, []string{"n3", "n4"})
				c.PDB("shop", "front", map[string]string{"tier": "front"}, snapshottest.MaxUnavailable(intstr.FromInt32(1)))
			},
			want:       [][]string{{"n1"}, {"n2"}, {"n3"}, {"n4"}},
			lowerBound: 4,
		},
		"budgets that do not overlap share waves": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "cart", app("cart"), []string{"n1", "n2"})
				c.Deployment("shop", "search", app("search"), []string{"n3", "n4"})
				c.PDB("shop", "cart", app("cart"), snapshottest.MaxUnavailable(intstr.FromInt32(1)))
				c.PDB("shop", "search", app("search"), snapshottest.MaxUnavailable(intstr.FromInt32(1)))
			},
			want:       [][]string{{"n1", "n3"}, {"n2", "n4"}},
			lowerBound: 2,
		},
		"a node with more pods of a budget than it allows goes alone for that budget": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "web", app("web"), []string{"n1", "n2", "n2", "n3"})
				c.Deployment("shop", "api", app("api"), []string{"n2", "n4"})
				c.PDB("shop", "web", app("web"), snapshottest.MaxUnavailable(intstr.FromInt32(1)))
				c.PDB("shop", "api", app("api"), snapshottest.MaxUnavailable(intstr.FromInt32(1)))
			},
			want:       [][]string{{"n1", "n4"}, {"n2"}, {"n3"}},
			lowerBound: 3,
		},
		"a workload without a budget keeps one ready replica": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("default", "platform", app("platform"), []string{"n1", "n2", "n2"})
			},
			want:       [][]string{{"n1", "n3", "n4"}, {"n2"}},
			lowerBound: 2,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := cluster("n1", "n2", "n3", "n4", "n5")
			tc.build(c)
			opts := tc.opts
			opts.Uncordon = true
			p := mustPlan(t, c.Snapshot, plan.Targets{Names: []string{"n1", "n2", "n3", "n4"}}, opts)
			if diff := cmp.Diff(tc.want, waves(p)); diff != "" {
				t.Errorf("waves (-want +got):\n%s", diff)
			}
			if p.LowerBound.Waves != tc.lowerBound {
				t.Errorf("lower bound %d, want %d (%+v)", p.LowerBound.Waves, tc.lowerBound, p.LowerBound)
			}
			if len(p.Blocked) > 0 {
				t.Errorf("blocked: %+v", p.Blocked)
			}
		})
	}
}

// TestBoundCountsOnlyDrainedNodes: nodes found blocked while the waves are packed need no
// wave, so their budgets do not raise the bound above the plan (at 1,000 nodes, 666
// nodes blocked on their companions gave a bound of 333 waves to a plan of 112).
func TestBoundCountsOnlyDrainedNodes(t *testing.T) {
	c := cluster("n1", "n2", "n3", "n4", "n5")
	c.Deployment("ops", "backup", app("backup"), []string{"n1", "n2", "n5"}, antiAffinity(corev1.LabelHostname, "backup"))
	c.PDB("ops", "backup", app("backup"), snapshottest.MaxUnavailable(intstr.FromInt32(1)))
	c.Deployment("shop", "web", app("web"), []string{"n3", "n4"})
	c.PDB("shop", "web", app("web"), snapshottest.MaxUnavailable(intstr.FromInt32(2)))
	p := mustPlan(t, c.Snapshot, plan.Targets{Names: []string{"n1", "n2", "n3", "n4"}}, plan.Options{})
	if diff := cmp.Diff([][]string{{"n3", "n4"}}, waves(p)); diff != "" {
		t.Errorf("waves (-want +got):\n%s", diff)
	}
	var blocked []string
	for _, b := range p.Blocked {
		blocked = append(blocked, b.Node)
	}
	if diff := cmp.Diff([]string{"n1", "n2"}, blocked); diff != "" {
		t.Errorf("blocked nodes (-want +got):\n%s", diff)
	}
	if want := (plan.LowerBound{Waves: 1}); !cmp.Equal(want, p.LowerBound) {
		t.Errorf("lower bound %+v, want %+v", p.LowerBound, want)
	}
}

func TestTargets(t *testing.T) {
	c := cluster("n1", "n2", "n3")
	node(c, "n2").Labels["pool"] = "blue"
	node(c, "n3").Labels["pool"] = "blue"
	tests := map[string]struct {
		targets plan.Targets
		want    []string
		err     string
	}{
		"names":               {targets: plan.Targets{Names: []string{"n3", "n1", "n3"}}, want: []string{"n1", "n3"}},
		"selector":            {targets: plan.Targets{Selector: labels.SelectorFromSet(labels.Set{"pool": "blue"})}, want: []string{"n2", "n3"}},
		"selector and a name": {targets: plan.Targets{Names: []string{"n1"}, Selector: labels.SelectorFromSet(labels.Set{"pool": "blue"})}, want: []string{"n1", "n2", "n3"}},
		"all":                 {targets: plan.Targets{All: true}, want: []string{"n1", "n2", "n3"}},
		"unknown node":        {targets: plan.Targets{Names: []string{"n9"}}, err: `node "n9" is not in the snapshot`},
		"nothing selected":    {targets: plan.Targets{Selector: labels.SelectorFromSet(labels.Set{"pool": "red"})}, err: "no node to drain"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, err := plan.DrainWaves(predicted(c.Snapshot), now, tc.targets, plan.Options{})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range p.Waves {
				got = append(got, w.Nodes...)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("planned nodes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGeneratedWithinBound plans a rolling drain of every node of a generated cluster,
// replicas spread round the nodes under budgets allowing one to three disruptions, and
// expects the waves within 10% of the lower bound, with nothing blocked.
func TestGeneratedWithinBound(t *testing.T) {
	c := &snapshottest.Cluster{Snapshot: snapshottest.Generate(snapshottest.ScaleFor(15_000))}
	for _, n := range c.Snapshot.Nodes {
		allocatable(c, "16", "110", n.Name)
	}
	p := mustPlan(t, c.Snapshot, plan.Targets{All: true}, plan.Options{Uncordon: true})
	if lb := p.LowerBound.Waves; lb < 2 || len(p.Waves)*10 > lb*11 || len(p.Blocked) > 0 {
		t.Errorf("%d waves for a lower bound of %d, %d nodes blocked", len(p.Waves), lb, len(p.Blocked))
	}
	t.Logf("%d waves for a lower bound of %d", len(p.Waves), p.LowerBound.Waves)
	nodes := 0
	for _, w := range p.Waves {
		nodes += len(w.Nodes)
	}
	if nodes != len(c.Snapshot.Nodes) {
		t.Errorf("%d nodes in waves, want all %d", nodes, len(c.Snapshot.Nodes))
	}
}
