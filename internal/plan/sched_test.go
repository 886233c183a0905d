package plan_test

import (
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
)

// TestSimulation drains n1, which holds one pod of the workload, with n2 and n3 the only
// other nodes; each case says where the replacement goes, or which scheduler filter
// leaves it nowhere.
func TestSimulation(t *testing.T) {
	tests := map[string]struct {
		build func(c *snapshottest.Cluster)
		// to is the node the replacement lands on; refused, when it fits nowhere, is the
		// filter the message must name.
		to      string
		refused string
	}{
		"first node that fits": {
			build: func(c *snapshottest.Cluster) { c.Deployment("shop", "web", app("web"), []string{"n1"}) },
			to:    "n2",
		},
		"cpu requests against allocatable minus placed pods": {
			build: func(c *snapshottest.Cluster) {
				allocatable(c, "1", "110", "n1", "n2", "n3")
				c.Deployment("shop", "fill", app("fill"), []string{"n2"}, requestCPU("700m"))
				c.Deployment("shop", "web", app("web"), []string{"n1"}, requestCPU("500m"))
			},
			to: "n3",
		},
		"pod count": {
			build: func(c *snapshottest.Cluster) {
				allocatable(c, "8", "1", "n1", "n2", "n3")
				c.Deployment("shop", "fill", app("fill"), []string{"n2", "n3"})
				c.Deployment("shop", "web", app("web"), []string{"n1"})
			},
			refused: "2 with too many pods",
		},
		"cordoned node": {
			build: func(c *snapshottest.Cluster) {
				node(c, "n2").Spec.Unschedulable = true
				c.Deployment("shop", "web", app("web"), []string{"n1"})
			},
			to: "n3",
		},
		"NoSchedule taint not tolerated": {
			build: func(c *snapshottest.Cluster) {
				node(c, "n2").Spec.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
				c.Deployment("shop", "web", app("web"), []string{"n1"})
			},
			to: "n3",
		},
		"NoExecute taint tolerated": {
			build: func(c *snapshottest.Cluster) {
				for _, n := range []string{"n2", "n3"} {
					node(c, n).Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoExecute}}
				}
				c.Deployment("shop", "web", app("web"), []string{"n1"}, func(d *appsv1.Deployment) {
					d.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web"}}
				})
			},
			to: "n2",
		},
		"PreferNoSchedule taint does not filter": {
			build: func(c *snapshottest.Cluster) {
				node(c, "n2").Spec.Taints = []corev1.Taint{{Key: "holdfast.dev/drain-queued", Effect: corev1.TaintEffectPreferNoSchedule}}
				c.Deployment("shop", "web", app("web"), []string{"n1"})
			},
			to: "n2",
		},
		"taints everywhere": {
			build: func(c *snapshottest.Cluster) {
				for _, n := range []string{"n2", "n3"} {
					node(c, n).Spec.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
				}
				c.Deployment("shop", "web", app("web"), []string{"n1"})
			},
			refused: "2 with a taint the pod does not tolerate",
		},
		"nodeSelector": {
			build: func(c *snapshottest.Cluster) {
				node(c, "n3").Labels["disk"] = "ssd"
				c.Deployment("shop", "web", app("web"), []string{"n1"}, func(d *appsv1.Deployment) {
					d.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"}
				})
			},
			to: "n3",
		},
		"required node affinity": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "web", app("web"), []string{"n1"}, func(d *appsv1.Deployment) {
					d.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
							MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"zone-b"}}},
						}}},
					}}
				})
			},
			to: "n3",
		},
		"required anti-affinity on the hostname": {
			build: func(c *snapshottest.Cluster) {
				node(c, "n3").Spec.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
				c.Deployment("shop", "web", app("web"), []string{"n1", "n2"}, antiAffinity(corev1.LabelHostname, "web"))
			},
			refused: "1 cordoned or being drained, 1 with a taint the pod does not tolerate, 1 refused by pod anti-affinity",
		},
		"required anti-affinity on the zone": {
			build: func(c *snapshottest.Cluster) {
				node(c, "n3").Labels[corev1.LabelTopologyZone] = "zone-b"
				c.Deployment("shop", "web", app("web"), []string{"n1", "n2"}, antiAffinity(corev1.LabelTopologyZone, "web"))
			},
			refused: "1 cordoned or being drained, 2 refused by pod anti-affinity",
		},
		"topology spread on the hostname counts the drained node": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "web", app("web"), []string{"n1", "n2", "n3"}, spread(corev1.LabelHostname, "web", false))
			},
			refused: "2 refused by a topology spread constraint",
		},
		"nodeTaintsPolicy Honor leaves the cordoned node out": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "web", app("web"), []string{"n1", "n2", "n3"}, spread(corev1.LabelHostname, "web", true))
			},
			to: "n2",
		},
		"topology spread on the zone": {
			build: func(c *snapshottest.Cluster) {
				c.Node("n4", "zone-b")
				c.Deployment("shop", "web", app("web"), []string{"n1", "n2", "n3"}, spread(corev1.LabelTopologyZone, "web", true))
			},
			// n1 is zone-a's only node; zone-a leaves the domains with it cordoned, and
			// zone-b (n2) and zone-c (n3) hold one each: any is within the skew.
			to: "n4",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := cluster("n1", "n2", "n3")
			tc.build(c)
			p := mustPlan(t, c.Snapshot, plan.Targets{Names: []string{"n1"}}, plan.Options{})
			if tc.refused != "" {
				if len(p.Blocked) != 1 || !strings.Contains(p.Blocked[0].Reasons[0].Message, tc.refused) {
					t.Fatalf("want n1 blocked with %q; got waves %v, blocked %+v", tc.refused, waves(p), p.Blocked)
				}
				return
			}
			if len(p.Waves) != 1 {
				t.Fatalf("waves %v, blocked %+v; want n1 drained", waves(p), p.Blocked)
			}
			var to []string
			for _, m := range p.Waves[0].Moves {
				if m.Pod == "web-rs-0" {
					to = append(to, m.To)
				}
			}
			if diff := cmp.Diff([]string{tc.to}, to); diff != "" {
				t.Errorf("web-rs-0 went to (-want +got):\n%s\nmoves %+v", diff, p.Waves[0].Moves)
			}
		})
	}
}

// TestSequentialWaves checks that a wave starts from where the previous one put the pods:
// drained nodes stay cordoned unless Uncordon brings them back.
func TestSequentialWaves(t *testing.T) {
	build := func() *snapshottest.Cluster {
		c := cluster("n1", "n2")
		allocatable(c, "8", "1", "n1", "n2")
		c.Deployment("shop", "web", app("web"), []string{"n1"})
		return c
	}
	p := mustPlan(t, build().Snapshot, plan.Targets{All: true}, plan.Options{MaxConcurrent: 1})
	if diff := cmp.Diff([][]string{{"n1"}}, waves(p)); diff != "" {
		t.Errorf("cordoned: waves (-want +got):\n%s", diff)
	}
	if len(p.Blocked) != 1 || p.Blocked[0].Node != "n2" || p.Blocked[0].Reasons[0].Type != plan.NoRoom ||
		!strings.HasPrefix(p.Blocked[0].Reasons[0].Message, "after wave 1, ") {
		t.Errorf("cordoned: blocked %+v; want n2 blocked for room after wave 1", p.Blocked)
	}
	p = mustPlan(t, build().Snapshot, plan.Targets{All: true}, plan.Options{MaxConcurrent: 1, Uncordon: true})
	var moves []plan.Move
	for _, w := range p.Waves {
		moves = append(moves, w.Moves...)
	}
	want := []plan.Move{{Namespace: "shop", Pod: "web-rs-0", From: "n1", To: "n2"}, {Namespace: "shop", Pod: "web-rs-0", From: "n2", To: "n1"}}
	if diff := cmp.Diff(want, moves); diff != "" || len(p.Blocked) > 0 {
		t.Errorf("uncordoned: moves (-want +got):\n%s\nblocked %+v", diff, p.Blocked)
	}
}

// TestCapacity is a node-by-node upgrade over three replicas, two of them on node-2. The
// upgrade keeps 2/3, then 1/3 while node-2 drains; a budget of minAvailable 2 keeps 2/3
// throughout, node-2's pods going one after the other.
func TestCapacity(t *testing.T) {
	for name, tc := range map[string]struct {
		budget bool
		want   []int32
	}{
		"no budget":      {want: []int32{2, 1, 2}},
		"minAvailable 2": {budget: true, want: []int32{2, 2, 2}},
	} {
		t.Run(name, func(t *testing.T) {
			c := cluster("node-1", "node-2", "node-3")
			c.Deployment("default", "platform", app("platform"), []string{"node-1", "node-2", "node-2"})
			if tc.budget {
				c.PDB("default", "platform-pdb", app("platform"), snapshottest.MinAvailable(intstr.FromInt32(2)))
			}
			p := mustPlan(t, c.Snapshot, plan.Targets{Names: []string{"node-1", "node-2", "node-3"}}, plan.Options{MaxConcurrent: 1, Uncordon: true})
			if diff := cmp.Diff([][]string{{"node-1"}, {"node-2"}, {"node-3"}}, waves(p)); diff != "" {
				t.Fatalf("waves (-want +got):\n%s", diff)
			}
			var ready []int32
			for _, w := range p.Waves {
				for _, c := range w.Capacity {
					if c.Name != "platform" || c.Desired != 3 {
						t.Errorf("capacity %+v", c)
					}
					ready = append(ready, c.Ready)
				}
			}
			if diff := cmp.Diff(tc.want, ready); diff != "" {
				t.Errorf("ready replicas per wave (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFailures(t *testing.T) {
	c := cluster("node-1", "node-2", "node-3", "node-4")
	c.Deployment("default", "platform", app("platform"), []string{"node-1", "node-2", "node-2"})
	c.Deployment("prod", "mysvc", app("mysvc"), []string{"node-3"})
	c.Deployment("prod", "spread", app("spread"), []string{"node-1", "node-2", "node-3", "node-4"})
	c.DaemonSet("ops", "agent", app("agent"), []string{"node-1", "node-2", "node-3", "node-4"})
	// No policy here: Kubernetes alone, 50 s + 300 s + the 10 s start-up the pods'
	// missing Ready times leave assumed, with or without holdfast.
	alone := func(l plan.Loss) plan.Loss {
		l.AloneSeconds, l.WithHoldfastSeconds, l.Response = ptr.To[int64](360), ptr.To[int64](360), "no DisruptionPolicy"
		return l
	}
	got := mustFail(t, c.Snapshot, plan.FailureOptions{})
	want := []plan.Failure{
		{Topology: plan.TopologyNode, Domain: "node-2", Losses: []plan.Loss{alone(plan.Loss{Kind: "Deployment", Namespace: "default", Name: "platform", Desired: 3, Running: 3, Lost: 2})}},
		{Topology: plan.TopologyNode, Domain: "node-3", Losses: []plan.Loss{alone(plan.Loss{Kind: "Deployment", Namespace: "prod", Name: "mysvc", Desired: 1, Running: 1, Lost: 1, All: true})}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("node failures (-want +got):\n%s", diff)
	}
	// node-1 and node-4 share zone-a.
	got = mustFail(t, c.Snapshot, plan.FailureOptions{Zones: true})
	want = []plan.Failure{
		{Topology: plan.TopologyZone, Domain: "zone-b", Losses: []plan.Loss{alone(plan.Loss{Kind: "Deployment", Namespace: "default", Name: "platform", Desired: 3, Running: 3, Lost: 2})}},
		{Topology: plan.TopologyZone, Domain: "zone-c", Losses: []plan.Loss{alone(plan.Loss{Kind: "Deployment", Namespace: "prod", Name: "mysvc", Desired: 1, Running: 1, Lost: 1, All: true})}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("zone failures (-want +got):\n%s", diff)
	}
	// A node named: every workload it hurts, the spread one too.
	got = mustFail(t, c.Snapshot, plan.FailureOptions{Domains: []string{"node-4"}})
	want = []plan.Failure{{Topology: plan.TopologyNode, Domain: "node-4", Losses: []plan.Loss{
		alone(plan.Loss{Kind: "Deployment", Namespace: "prod", Name: "spread", Desired: 4, Running: 4, Lost: 1}),
	}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("node-4 (-want +got):\n%s", diff)
	}
	if _, err := plan.Failures(predicted(c.Snapshot), now, plan.FailureOptions{Domains: []string{"node-9"}}); err == nil {
		t.Error("a node not in the input: no error")
	}
}

// TestNeverMutates plans on a snapshot with every kind of object the simulation moves
// and checks the snapshot is as it was.
func TestNeverMutates(t *testing.T) {
	c := &snapshottest.Cluster{Snapshot: snapshottest.Generate(snapshottest.ScaleFor(3_000))}
	allocatable(c, "4", "110", "node-0", "node-1")
	c.Pod("ops", "debug", app("debug"), "node-2")
	c.Deployment("shop", "web", app("web"), []string{"node-3", "node-4", ""}, antiAffinity(corev1.LabelHostname, "web"), spread(corev1.LabelTopologyZone, "web", false))
	before := deepCopy(c.Snapshot)
	mustPlan(t, c.Snapshot, plan.Targets{All: true}, plan.Options{MaxConcurrent: 7, DrainFilter: availability.DrainFilter{Force: true}})
	mustPlan(t, c.Snapshot, plan.Targets{All: true}, plan.Options{Uncordon: true})
	mustFail(t, c.Snapshot, plan.FailureOptions{Zones: true})
	if !reflect.DeepEqual(before, c.Snapshot) {
		t.Error("planning changed the snapshot")
	}
}

func deepCopy(s *snapshot.Snapshot) *snapshot.Snapshot {
	out := *s
	out.Nodes = copyAll(s.Nodes, (*corev1.Node).DeepCopy)
	out.Pods = copyAll(s.Pods, (*corev1.Pod).DeepCopy)
	out.Deployments = copyAll(s.Deployments, (*appsv1.Deployment).DeepCopy)
	out.ReplicaSets = copyAll(s.ReplicaSets, (*appsv1.ReplicaSet).DeepCopy)
	out.StatefulSets = copyAll(s.StatefulSets, (*appsv1.StatefulSet).DeepCopy)
	out.DaemonSets = copyAll(s.DaemonSets, (*appsv1.DaemonSet).DeepCopy)
	out.PodDisruptionBudgets = copyAll(s.PodDisruptionBudgets, (*policyv1.PodDisruptionBudget).DeepCopy)
	out.Origins = maps.Clone(s.Origins)
	out.LegacySelectorPDBs = maps.Clone(s.LegacySelectorPDBs)
	return &out
}

func copyAll[T any](in []T, deepCopy func(*T) *T) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i := range in {
		out[i] = *deepCopy(&in[i])
	}
	return out
}

// TestManifests plans on manifests, whose replicas exist only as templates: the
// simulation spreads them over the nodes and puts a DaemonSet's pod on every node, which
// here leaves no room for the replica evicted from n1.
func TestManifests(t *testing.T) {
	var docs []string
	for _, n := range []string{"n1", "n2", "n3"} {
		docs = append(docs, `apiVersion: v1
kind: Node
metadata: {name: `+n+`, labels: {kubernetes.io/hostname: `+n+`}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "2"}}`)
	}
	docs = append(docs, `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: ops}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: agent}]}`, `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: web}]}`)
	s, problems := snapshot.LoadManifestBytes("cluster.yaml", []byte(strings.Join(docs, "\n---\n")), snapshot.ManifestOptions{})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	p := mustPlan(t, s, plan.Targets{Names: []string{"n1"}}, plan.Options{DrainFilter: availability.DrainFilter{IgnoreDaemonSets: true}})
	want := []plan.Blocker{{Node: "n1", Reasons: []plan.Reason{{Type: plan.NoRoom, Kind: "Deployment", Namespace: "shop", Name: "web",
		Message: "its replacement fits on no other node: 0/3 nodes are available: 1 cordoned or being drained, 2 with too many pods"}}}}
	if diff := cmp.Diff(want, p.Blocked); diff != "" {
		t.Errorf("blocked (-want +got):\n%s", diff)
	}
	failures := mustFail(t, s, plan.FailureOptions{})
	if len(failures) != 0 {
		t.Errorf("failures %+v; want none, with one replica per node", failures)
	}
}

// TestExtendedResources is the finding of issue 19: a GPU pod "fitted" on nodes without
// GPUs. The pod asks for nvidia.com/gpu as a limit only, as manifests usually do; only n1
// has a GPU, so the drain of n1 has nowhere to put it, and a second GPU node takes it.
func TestExtendedResources(t *testing.T) {
	nodes := func(gpus map[string]string) string {
		var docs []string
		for _, n := range []string{"n1", "n2", "n3"} {
			gpu := ""
			if g, ok := gpus[n]; ok {
				gpu = `, nvidia.com/gpu: "` + g + `"`
			}
			docs = append(docs, `apiVersion: v1
kind: Node
metadata: {name: `+n+`, labels: {kubernetes.io/hostname: `+n+`}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"`+gpu+`}}`)
		}
		return strings.Join(docs, "\n---\n")
	}
	const train = `apiVersion: apps/v1
kind: Deployment
metadata: {name: train, namespace: ml}
spec:
  replicas: 1
  selector: {matchLabels: {app: train}}
  template:
    metadata: {labels: {app: train}}
    spec:
      containers:
      - name: train
        image: train
        resources:
          limits: {nvidia.com/gpu: 1}`
	tests := map[string]struct {
		gpus    map[string]string
		to      string
		blocked string
	}{
		"no other node has a GPU": {gpus: map[string]string{"n1": "1"},
			blocked: "its replacement fits on no other node: 0/3 nodes are available: 1 cordoned or being drained, 2 with too little of an extended resource (such as nvidia.com/gpu) or hugepages"},
		"another node has a GPU": {gpus: map[string]string{"n1": "1", "n3": "1"}, to: "n3"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, problems := snapshot.LoadManifestBytes("cluster.yaml", []byte(nodes(tc.gpus)+"\n---\n"+train), snapshot.ManifestOptions{})
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			p := mustPlan(t, s, plan.Targets{Names: []string{"n1"}}, plan.Options{})
			if tc.blocked != "" {
				if len(p.Blocked) != 1 || p.Blocked[0].Reasons[0].Message != tc.blocked {
					t.Fatalf("want n1 blocked with %q; got waves %v, blocked %+v", tc.blocked, waves(p), p.Blocked)
				}
				return
			}
			if len(p.Waves) != 1 || len(p.Waves[0].Moves) != 1 || p.Waves[0].Moves[0].To != tc.to {
				t.Fatalf("want the pod moved to %s; got waves %+v, blocked %+v", tc.to, p.Waves, p.Blocked)
			}
		})
	}
}

// TestRebalanceExtendedResources: rebalancing uses the same fit check. Two GPU replicas
// piled on n1, the only node with GPUs, stay there: no other node can take one.
func TestRebalanceExtendedResources(t *testing.T) {
	for name, tc := range map[string]struct {
		gpusOnN3 bool
		want     plan.RebalanceOutcome
	}{
		"no other node has a GPU": {want: plan.RebalanceNoBetterPlace},
		"n3 has GPUs too":         {gpusOnN3: true, want: plan.RebalanceEvict},
	} {
		t.Run(name, func(t *testing.T) {
			c := cluster("n1", "n2", "n3")
			allocatable(c, "8", "110", "n1", "n2", "n3")
			gpuNodes := []string{"n1"}
			if tc.gpusOnN3 {
				gpuNodes = append(gpuNodes, "n3")
			}
			for _, n := range gpuNodes {
				node(c, n).Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("2")
			}
			c.Deployment("shop", "web", app("web"), []string{"n1", "n1"}, func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
			})
			r := plan.Rebalance(c.Snapshot, now, plan.RebalanceTarget{Workload: availability.WorkloadRef{Kind: snapshot.KindDeployment, Namespace: "shop", Name: "web"}})
			if r.Outcome != tc.want || (r.Move != nil && r.Move.To != "n3") {
				t.Errorf("%s %q, move %+v; want %s (to n3)", r.Outcome, r.Message, r.Move, tc.want)
			}
		})
	}
}

func mustFail(t *testing.T, s *snapshot.Snapshot, o plan.FailureOptions) []plan.Failure {
	t.Helper()
	f, err := plan.Failures(predicted(s), now, o)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
