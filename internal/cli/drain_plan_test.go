package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/predict"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
)

var drainNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// fakeCluster serves a snapshot's objects, holdfast's own through the dynamic client.
func fakeCluster(t *testing.T, s *snapshot.Snapshot) cluster {
	t.Helper()
	var own []runtime.Object
	for i := range s.NodeClaims {
		own = append(own, &s.NodeClaims[i])
	}
	for i := range s.NodePools {
		own = append(own, &s.NodePools[i])
	}
	for i := range s.DisruptionPolicies {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&s.DisruptionPolicies[i])
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{Object: u}
		obj.SetAPIVersion(holdfastv1alpha1.GroupVersion.String())
		obj.SetKind(snapshot.KindDisruptionPolicy)
		own = append(own, obj)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), snapshottest.DynamicListKinds(), own...)
	c := &snapshottest.Cluster{Snapshot: s}
	return cluster{kube: fake.NewClientset(objectsOf(c)...), dyn: dyn, settings: policy.DefaultSettings}
}

// randomCluster is a small cluster as the operator keeps it: two namespaces, each under
// a DisruptionPolicy over its tier=web workloads (shop's surges single replicas and has
// one at least; ops' strategy is drawn), Deployments of one to four Ready replicas on
// nodes drawn at random, some outside the policy with a budget of their own, a
// DaemonSet on every node, and the budgets the policies keep, made already.
func randomCluster(r *rand.Rand) *snapshot.Snapshot {
	c := snapshottest.New()
	nodes := make([]string, 3+r.IntN(4))
	for i := range nodes {
		nodes[i] = fmt.Sprintf("node-%d", i)
		c.Node(nodes[i], fmt.Sprintf("zone-%c", 'a'+i%2))
	}
	c.DaemonSet("kube-system", "agent", map[string]string{"app": "agent"}, nodes)
	strategies := []holdfastv1alpha1.SingleReplicaStrategy{holdfastv1alpha1.SingleReplicaSurge, holdfastv1alpha1.SingleReplicaProtect, holdfastv1alpha1.SingleReplicaSkip}
	for i, ns := range []string{"shop", "ops"} {
		strategy := holdfastv1alpha1.SingleReplicaSurge
		if i > 0 {
			strategy = strategies[r.IntN(len(strategies))]
		}
		c.Snapshot.DisruptionPolicies = append(c.Snapshot.DisruptionPolicies, holdfastv1alpha1.DisruptionPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "defaults", Generation: 1, CreationTimestamp: metav1.NewTime(drainNow.Add(-time.Hour))},
			Spec: holdfastv1alpha1.DisruptionPolicySpec{
				Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}},
				MaxUnavailable: ptr.To(intstr.FromInt32(1)), SingleReplica: strategy, EscapeAfter: &metav1.Duration{Duration: 10 * time.Minute},
			},
		})
		for w := range 2 + r.IntN(3) {
			name := fmt.Sprintf("app-%d", w)
			replicas := 1 + r.IntN(4)
			tier := "web"
			if w == 0 {
				replicas = 1
			} else if r.IntN(4) == 0 {
				tier = "batch"
			}
			placed := make([]string, replicas)
			for p := range placed {
				placed[p] = nodes[r.IntN(len(nodes))]
			}
			c.Deployment(ns, name, map[string]string{"app": name}, placed, func(d *appsv1.Deployment) {
				n := int32(replicas)
				d.Labels = map[string]string{"tier": tier}
				d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
			})
			if tier == "batch" && r.IntN(2) == 0 {
				c.PDB(ns, name, map[string]string{"app": name}, snapshottest.MaxUnavailable(intstr.FromInt32(1)))
			}
		}
	}
	karpenter(r, c.Snapshot)
	kept, _ := predict.Operator(c.Snapshot, drainNow, policy.Settings{})
	c.Snapshot.PodDisruptionBudgets = kept.PodDisruptionBudgets
	return c.Snapshot
}

// karpenter makes some of s's nodes Karpenter's, of NodePool general, whose
// consolidation policy is drawn; each with a NodeClaim Consolidatable for an hour, or not
// yet, and a Lease renewed a moment ago.
func karpenter(r *rand.Rand, s *snapshot.Snapshot) {
	policies := []string{"WhenEmptyOrUnderutilized", "WhenEmpty"}
	s.NodePools = []unstructured.Unstructured{{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": map[string]any{"name": "general"},
		"spec": map[string]any{"disruption": map[string]any{"consolidationPolicy": policies[r.IntN(len(policies))], "consolidateAfter": "1m"}},
	}}}
	s.NodeClaims = []unstructured.Unstructured{}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		s.Leases = append(s.Leases, coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: n.Name},
			Spec: coordinationv1.LeaseSpec{RenewTime: ptr.To(metav1.NewMicroTime(drainNow.Add(-time.Second))), LeaseDurationSeconds: ptr.To(int32(40))}})
		if r.IntN(2) == 0 {
			continue
		}
		n.Labels["karpenter.sh/nodepool"] = "general"
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
		status := map[string]any{"nodeName": n.Name}
		if r.IntN(3) > 0 {
			status["conditions"] = []any{map[string]any{"type": "Consolidatable", "status": "True", "lastTransitionTime": drainNow.Add(-time.Hour).Format(time.RFC3339)}}
		}
		s.NodeClaims = append(s.NodeClaims, unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "status": status,
			"metadata": map[string]any{"name": "general-" + n.Name, "labels": map[string]any{"karpenter.sh/nodepool": "general"}},
		}})
	}
}

// handOffs are the hand-offs the operator makes, as "namespace/Deployment node".
func handOffs(outcomes []predict.Outcome) []string {
	var out []string
	for _, o := range outcomes {
		for _, sc := range policy.EffectsOf[policy.Surge](o.Decision.Effects) {
			if node, _, ok := strings.Cut(sc.HandOff, " "); ok && sc.Replicas > 0 {
				out = append(out, o.Policy.Namespace+"/"+sc.Deployment+" "+node)
			}
		}
	}
	return out
}

// order is a drain's nodes: the waves, then the nodes it cannot drain; and the ready pods
// each Deployment loses at once in the first wave ("namespace/name"), its budget's count.
// Only the first: the dry run lists the pods as the cluster stands, the plan's later waves
// count the replacements its earlier waves placed.
type order struct {
	Waves   [][]string
	Blocked []string
	Lost    map[string]int32
}

// planDrainOrder runs holdfast plan drain -o json; true when a wave surges a workload.
func planDrainOrder(t *testing.T, cl cluster, nodes []string, maxConcurrent int) (order, bool) {
	t.Helper()
	var out, errOut bytes.Buffer
	o := &PlanDrainOptions{Nodes: nodes, MaxConcurrent: maxConcurrent, planInput: planInput{
		IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}, Now: func() time.Time { return drainNow },
		output: newOutputFlags("table"), configFlags: genericclioptions.NewConfigFlags(false), cluster: cl,
	}}
	o.output.format = "json"
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	var coded *ExitCodeError
	if err := o.Run(context.Background()); err != nil && !errors.As(err, &coded) {
		t.Fatalf("plan drain: %v\n%s", err, errOut.String())
	}
	var r drainReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("plan drain -o json: %v\n%s", err, out.String())
	}
	got := order{Waves: r.Waves}
	for _, b := range r.Blocked {
		got.Blocked = append(got.Blocked, b.Node)
	}
	if len(r.Capacity) > 0 {
		got.Lost = map[string]int32{}
		for _, c := range r.Capacity[0] {
			// Every pod of the test's clusters is Ready, as many as desired.
			if c.Kind == snapshot.KindDeployment && c.Desired > c.Ready {
				got.Lost[c.Namespace+"/"+c.Name] = c.Desired - c.Ready
			}
		}
	}
	surged := slices.ContainsFunc(r.Capacity, func(wave []plan.Capacity) bool {
		return slices.ContainsFunc(wave, func(c plan.Capacity) bool { return c.Surged })
	})
	return got, surged
}

// drainOptions are holdfast drain's for nodes, with the test's clock, leaving the
// DaemonSet pods as plan drain does.
func drainOptions(cl cluster, out *bytes.Buffer, nodes []string, maxConcurrent int) *DrainOptions {
	return &DrainOptions{
		Nodes: nodes, MaxConcurrent: maxConcurrent, DryRun: DryRunNone, IgnoreDaemonSets: true,
		IOStreams: genericiooptions.IOStreams{Out: out, ErrOut: out},
		Clock:     clocktesting.NewFakeClock(drainNow),
		cluster:   cl,
	}
}

// dryRunOrder runs holdfast drain --dry-run and reads its waves and its nodes that
// cannot be drained.
func dryRunOrder(t *testing.T, cl cluster, nodes []string, maxConcurrent int) order {
	t.Helper()
	var out bytes.Buffer
	o := drainOptions(cl, &out, nodes, maxConcurrent)
	o.DryRun = DryRunClient
	var coded *ExitCodeError
	if err := o.Run(context.Background()); err != nil && !errors.As(err, &coded) {
		t.Fatalf("drain --dry-run: %v\n%s", err, out.String())
	}
	var got order
	for _, line := range strings.Split(out.String(), "\n") {
		if _, wave, ok := strings.Cut(line, "Wave "); ok && !strings.HasPrefix(line, " ") {
			_, names, _ := strings.Cut(wave, ": ")
			got.Waves = append(got.Waves, strings.Split(names, ", "))
			if got.Lost == nil {
				got.Lost = map[string]int32{}
			}
		}
		// A Deployment's pod the first wave evicts: "node   namespace/name-rs-N   evict   why".
		if fields := strings.Fields(line); len(got.Waves) == 1 && len(fields) > 2 && fields[2] == "evict" && strings.Contains(fields[1], "-rs-") {
			workload, _, _ := strings.Cut(fields[1], "-rs-")
			got.Lost[workload]++
		}
		if node, ok := strings.CutPrefix(line, "Cannot drain "); ok {
			got.Blocked = append(got.Blocked, strings.TrimSuffix(node, ":"))
		}
	}
	return got
}

// TestDrainFollowsPlanDrain is the differential test of issue 33: on random clusters
// under DisruptionPolicies, holdfast drain --dry-run prints the waves and the blocked
// nodes holdfast plan drain does, and evicts at once in each wave the pods the plan's
// capacity counts (one count of each budget, unbudgeted workloads included), and the drain takes the nodes in that order, wave for
// wave with --wave-by-wave, the blocked ones last. A single replica a policy surges is
// drained in its wave, not held to the end as if its budget blocked it.
func TestDrainFollowsPlanDrain(t *testing.T) {
	surges, handedOff := 0, 0
	for seed := range uint64(60) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 33))
			s := randomCluster(r)
			var nodes []string
			for _, n := range s.Nodes {
				if r.IntN(4) > 0 {
					nodes = append(nodes, n.Name)
				}
			}
			if len(nodes) == 0 {
				nodes = []string{s.Nodes[0].Name}
			}
			r.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
			maxConcurrent := 1 + r.IntN(3)
			cl := fakeCluster(t, s)
			// The live read (Karpenter's kinds and the Leases through the clients) predicts
			// the hand-offs the snapshot does.
			_, outcomes, err := cl.load(context.Background(), metav1.NamespaceAll, drainNow, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			_, predicted := predict.Operator(s, drainNow, cl.settings)
			if diff := cmp.Diff(handOffs(predicted), handOffs(outcomes)); diff != "" {
				t.Errorf("hand-offs read live against the snapshot's (-snapshot +live):\n%s", diff)
			}
			handedOff += len(handOffs(outcomes))

			planned, surged := planDrainOrder(t, cl, nodes, maxConcurrent)
			if surged {
				surges++
			}
			if diff := cmp.Diff(planned, dryRunOrder(t, cl, nodes, maxConcurrent), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("drain --dry-run of %v, --max-concurrent %d, against plan drain (-plan +dry run):\n%s", nodes, maxConcurrent, diff)
			}

			var out bytes.Buffer
			o := drainOptions(cl, &out, nodes, maxConcurrent)
			_, p, err := o.planDrain(context.Background(), nodes)
			if err != nil {
				t.Fatal(err)
			}
			want := planned.Waves
			if len(planned.Blocked) > 0 {
				want = append(slices.Clone(want), planned.Blocked)
			}
			o.WaveByWave = true
			if diff := cmp.Diff(want, o.waves(p), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("drain --wave-by-wave of %v, --max-concurrent %d, against plan drain (-plan +drain):\n%s", nodes, maxConcurrent, diff)
			}
			o.WaveByWave = false
			if diff := cmp.Diff([][]string{slices.Concat(want...)}, o.waves(p), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("drain of %v, --max-concurrent %d, against plan drain (-plan +drain):\n%s", nodes, maxConcurrent, diff)
			}
		})
	}
	// The clusters must exercise what the test is for.
	if surges == 0 {
		t.Error("no plan surged a single replica: the clusters do not exercise Surge")
	}
	if handedOff == 0 {
		t.Error("no prediction handed a node over to Karpenter: the clusters do not exercise the hand-off")
	}
}

// Without holdfast installed (its CRDs not served) the drain reads the cluster as plan
// does and drains by the budgets alone.
func TestDrainWithoutHoldfastInstalled(t *testing.T) {
	c := snapshottest.New()
	for _, n := range []string{"node-1", "node-2", "node-3"} {
		c.Node(n, "zone-a")
	}
	c.Deployment("shop", "web", map[string]string{"app": "web"}, []string{"node-1", "node-2"})
	c.PDB("shop", "web", map[string]string{"app": "web"}, snapshottest.MaxUnavailable(intstr.FromInt32(1)))
	cl := fakeCluster(t, c.Snapshot)
	cl.dyn.(*dynamicfake.FakeDynamicClient).PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(a.GetResource().GroupResource(), "")
	})
	planned, _ := planDrainOrder(t, cl, []string{"node-1", "node-2"}, 1)
	if diff := cmp.Diff(order{Waves: [][]string{{"node-1"}, {"node-2"}}, Lost: map[string]int32{"shop/web": 1}}, planned); diff != "" {
		t.Errorf("plan drain (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(planned, dryRunOrder(t, cl, []string{"node-1", "node-2"}, 1)); diff != "" {
		t.Errorf("drain --dry-run against plan drain (-plan +dry run):\n%s", diff)
	}
}

// The dry run says a single replica under Surge is surged, as plan drain does, where it
// used to call its node blocked by the budget.
func TestDrainDryRunSurge(t *testing.T) {
	c := snapshottest.New()
	for _, n := range []string{"node-1", "node-2"} {
		c.Node(n, "zone-a")
	}
	c.Deployment("shop", "checkout", map[string]string{"app": "checkout"}, []string{"node-1"}, func(d *appsv1.Deployment) {
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	})
	c.Snapshot.DisruptionPolicies = []holdfastv1alpha1.DisruptionPolicy{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "defaults", Generation: 1},
		Spec:       holdfastv1alpha1.DisruptionPolicySpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), SingleReplica: holdfastv1alpha1.SingleReplicaSurge},
	}}
	kept, _ := predict.Operator(c.Snapshot, drainNow, policy.Settings{})
	c.Snapshot.PodDisruptionBudgets = kept.PodDisruptionBudgets
	var out bytes.Buffer
	o := drainOptions(fakeCluster(t, c.Snapshot), &out, []string{"node-1"}, 1)
	o.DryRun = DryRunClient
	if err := o.Run(context.Background()); err != nil {
		t.Fatalf("dry run = %v, want every node drained\n%s", err, out.String())
	}
	for _, want := range []string{
		"Wave 1: node-1",
		"shop/checkout-rs-0|surge|DisruptionPolicy defaults starts an extra pod beside Deployment checkout first: the budget lets the eviction through once that pod is Ready",
		"Deployment shop/checkout keeps 1 of 1 ready (1 on these nodes), surged",
		"every node would drain",
	} {
		if !says(out.String(), want) {
			t.Errorf("the dry run does not say %q:\n%s", want, out.String())
		}
	}
}
