//go:build e2e

// Package karpenter runs the real Karpenter (its kwok provider) on the testbed while it
// disrupts the node of a single replica: consolidation of an underutilised node after a
// scale-down, and drift with the NodePool's terminationGracePeriod. Each scenario runs
// without holdfast and with it, over a single replica (Surge), a 3-replica service under
// a policy and a 3-replica service with neither, sampled every 200 ms, and prints both
// runs side by side.
package karpenter

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

const (
	// podReadyDelay is every pod's start-up: the window a single replica is down for
	// when it is evicted before its replacement is Ready.
	podReadyDelay = 5 * time.Second
	// provision bounds waits for pods whose node Karpenter must make first.
	provision = 3 * time.Minute
	// disrupt bounds how long Karpenter may take to consolidate or replace a node: its
	// consolidateAfter, and in a cluster as quiet as this one up to 5 minutes before it
	// looks at consolidation again after holdfast's budget lets the eviction through,
	// its 10 s disruption pass, its 15 s validation, the drain.
	disrupt = 9 * time.Minute
	// samplePeriod is the ready-pods sampler's period, as in the other e2e packages.
	samplePeriod = 200 * time.Millisecond
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Nodes: 0, PodReadyDelay: podReadyDelay, Karpenter: true})
}

// After a scale-down, Karpenter consolidates the underutilised node that holds a single
// replica and two services. Without holdfast the single replica and the unbudgeted
// service go to zero Ready; with it, the single replica's budget is handed over (a surge
// ahead of consolidation), the node still goes, and nothing drops to zero but the service
// that has neither policy nor budget.
func TestConsolidation(t *testing.T) {
	without := scenario(t, "without holdfast", false, consolidation)
	with := scenario(t, "with holdfast", true, consolidation)
	report(t, "consolidation after a scale-down", without, with)
	held(t, without, with)
	if !strings.Contains(with.handOff, "ahead of Karpenter's scale-down of node "+with.node) {
		t.Errorf("status never said what holdfast waited for; saw %q", with.handOff)
	}
}

// Drift: the NodePool's template changes and Karpenter replaces the node, with a
// terminationGracePeriod that lets it drain through blocking budgets. Karpenter's taint
// starts holdfast's surge, so the single replica never goes to zero Ready.
func TestDrift(t *testing.T) {
	without := scenario(t, "without holdfast", false, drift)
	with := scenario(t, "with holdfast", true, drift)
	report(t, "drift (template change, terminationGracePeriod 3m)", without, with)
	held(t, without, with)
}

// held checks that the run without holdfast shows the single replica's outage (or the
// scenario proves nothing) and that with holdfast nothing drops below its budget.
func held(t *testing.T, without, with outcome) {
	t.Helper()
	if without.single.lowest != 0 {
		t.Errorf("without holdfast the single replica never went to 0 Ready (lowest %d): the scenario proves nothing", without.single.lowest)
	}
	if with.single.lowest < 1 {
		t.Errorf("with holdfast the single replica went to 0 Ready for %s", with.single.zeroFor)
	}
	if with.served.lowest < 2 {
		t.Errorf("with holdfast the service under a policy went down to %d Ready, below its budget's 2", with.served.lowest)
	}
	if len(with.violations) > 0 {
		t.Errorf("budgets below their floor: %s", strings.Join(with.violations, "; "))
	}
}

// outcome is what one run measured.
type outcome struct {
	node                 string        // the node taken away
	took                 time.Duration // from the change to the node gone
	samples              int
	single, served, bare readiness
	violations           []string
	// handOff is the single replica's status message while holdfast surged ahead.
	handOff string
}

// readiness is one workload's fewest Ready pods and its longest time at zero.
type readiness struct {
	lowest  int
	zeroFor time.Duration
}

func readinessOf(w *framework.ReadyWatch) (int, readiness) {
	samples, _, lowest := w.Stop()
	return samples, readiness{lowest: lowest, zeroFor: w.LongestZero()}
}

// run is one test's cluster and workloads.
type run struct {
	*framework.Framework
	hc                   client.Client // knows holdfast's types; nil without holdfast
	single, served, bare *appsv1.Deployment
}

// disruption sets up its scenario's NodePool and workloads, returns the node the
// workloads share, and the change that makes Karpenter take that node away.
type disruption func(r *run) (node string, change func())

// scenario runs one disruption in a namespace and NodePool of its own, with holdfast's
// operator and policies or without, and measures it.
func scenario(t *testing.T, name string, holdfast bool, d disruption) outcome {
	var out outcome
	ok := t.Run(name, func(t *testing.T) {
		r := &run{Framework: framework.New(t)}
		if holdfast {
			r.hc = r.HoldfastClient()
			r.InstallCRDs(r.hc, &holdfastv1alpha1.DisruptionPolicyList{})
			t.Cleanup(func() {
				if err := r.hc.DeleteAllOf(context.Background(), &holdfastv1alpha1.DisruptionPolicy{}, client.InNamespace(r.Namespace)); err != nil {
					t.Logf("deleting DisruptionPolicies: %v", err)
				}
			})
			r.StartOperator()
			r.policy("single", holdfastv1alpha1.SingleReplicaSurge)
			r.policy("served", holdfastv1alpha1.SingleReplicaSkip)
		}
		node, change := d(r)
		out.node = node
		if holdfast {
			r.waitBudgets()
		}
		single := r.WatchReady(framework.SelectorOf(r.single), samplePeriod)
		served := r.WatchReady(framework.SelectorOf(r.served), samplePeriod)
		bare := r.WatchReady(framework.SelectorOf(r.bare), samplePeriod)
		budgets := r.WatchBudgets(samplePeriod)
		start := time.Now()
		change()
		r.Eventually(disrupt, "Karpenter to take node "+node+" away", func(ctx context.Context) (bool, error) {
			if holdfast && out.handOff == "" {
				out.handOff = r.surgeMessage(ctx)
			}
			_, err := r.Clientset.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
		out.took = time.Since(start)
		for _, dep := range []*appsv1.Deployment{r.single, r.served, r.bare} {
			r.WaitReadyWithin(provision, dep)
		}
		out.samples, out.single = readinessOf(single)
		_, out.served = readinessOf(served)
		_, out.bare = readinessOf(bare)
		_, out.violations = budgets.Stop()
		if holdfast {
			// The surge ends once the pod is Ready on another node.
			r.Eventually(provision, "the single replica's surge set gone", func(ctx context.Context) (bool, error) {
				set, err := r.SurgeSet(ctx, r.single)
				return set == nil, err
			})
			cur := &appsv1.Deployment{}
			if err := r.Client.Get(r.Ctx, client.ObjectKeyFromObject(r.single), cur); err != nil || cur.Generation != r.single.Generation {
				t.Errorf("Deployment single at generation %d (%v), want %d: holdfast wrote its spec", cur.Generation, err, r.single.Generation)
			}
		}
	})
	if !ok {
		t.FailNow()
	}
	return out
}

// consolidation: one node A holds a filler, the single replica and both services;
// another, B, holds a pod Karpenter must not disrupt and room for all of A's pods once
// the filler is gone. Scaling the filler to zero leaves A underutilised, and Karpenter
// deletes it, moving its pods to B.
func consolidation(r *run) (string, func()) {
	r.NodePool("10s", nil)
	// 3.5 of A's 3.92 CPUs; without the filler 1.5, under half, which holdfast requires
	// before it hands a node over.
	filler := r.deployment("filler", 1, "2", nil)
	r.single = r.deployment("single", 1, "300m", nil)
	r.served = r.deployment("served", 3, "200m", nil)
	r.bare = r.deployment("bare", 3, "200m", nil)
	r.waitReady(filler, r.single, r.served, r.bare)
	a := r.nodesOf(filler, r.single, r.served, r.bare)
	if len(a) != 1 {
		r.T.Fatalf("Karpenter spread the workloads over nodes %v, not one node", a)
	}
	// A has no room left for it: Karpenter makes B.
	base := r.deployment("base", 1, "500m", func(d *appsv1.Deployment) {
		d.Spec.Template.Annotations = map[string]string{holdfastv1alpha1.DoNotDisruptAnnotation: "true"}
	})
	r.waitReady(base)
	return a[0], func() { r.Scale(filler, 0) }
}

// drift: one node holds the single replica and both services; a change of the
// NodePool's template makes Karpenter replace it.
func drift(r *run) (string, func()) {
	np := r.NodePool("Never", func(spec map[string]any) {
		tmpl := spec["template"].(map[string]any)["spec"].(map[string]any)
		tmpl["terminationGracePeriod"] = "3m"
	})
	r.single = r.deployment("single", 1, "300m", nil)
	r.served = r.deployment("served", 3, "300m", nil)
	r.bare = r.deployment("bare", 3, "300m", nil)
	r.waitReady(r.single, r.served, r.bare)
	nodes := r.nodesOf(r.single, r.served, r.bare)
	if len(nodes) != 1 {
		r.T.Fatalf("Karpenter spread the workloads over nodes %v, not one node", nodes)
	}
	return nodes[0], func() {
		patch := []byte(`{"spec":{"template":{"metadata":{"labels":{"holdfast.dev/e2e-revision":"2"}}}}}`)
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(framework.NodePoolKind)
		u.SetName(np.GetName())
		if err := r.Client.Patch(r.Ctx, u, client.RawPatch(types.MergePatchType, patch)); err != nil {
			r.T.Fatalf("changing the template of NodePool %s: %v", np.GetName(), err)
		}
	}
}

// policy creates a DisruptionPolicy over the workload named tier (maxUnavailable 1).
func (r *run) policy(tier string, single holdfastv1alpha1.SingleReplicaStrategy) {
	r.T.Helper()
	if err := r.hc.Create(r.Ctx, r.TierPolicy(tier, single)); err != nil {
		r.T.Fatalf("creating DisruptionPolicy %s: %v", tier, err)
	}
}

// deployment creates a Deployment of the test's NodePool whose pods request cpu.
func (r *run) deployment(name string, replicas int32, cpu string, mod func(*appsv1.Deployment)) *appsv1.Deployment {
	r.T.Helper()
	d := r.Sized(name, replicas, cpu, r.NodePoolSelector())
	if mod != nil {
		mod(d)
	}
	r.Create(d)
	return d
}

func (r *run) waitReady(deps ...*appsv1.Deployment) {
	r.T.Helper()
	for _, d := range deps {
		r.WaitReadyWithin(provision, d)
	}
}

// nodesOf returns the nodes the Deployments' pods run on.
func (r *run) nodesOf(deps ...*appsv1.Deployment) []string {
	r.T.Helper()
	seen := map[string]bool{}
	var out []string
	for _, d := range deps {
		pods, err := r.Pods(r.Ctx, framework.SelectorOf(d))
		if err != nil {
			r.T.Fatal(err)
		}
		for _, p := range pods {
			if !seen[p.Spec.NodeName] {
				seen[p.Spec.NodeName] = true
				out = append(out, p.Spec.NodeName)
			}
		}
	}
	return out
}

// waitBudgets waits until holdfast's budgets are counted: the single replica's allows
// nothing (minAvailable 1), the service's one disruption.
func (r *run) waitBudgets() {
	r.T.Helper()
	r.WaitBudget("holdfast-deploy-single", 0)
	r.WaitBudget("holdfast-deploy-served", 1)
}

// surgeMessage is the single replica's status message while it is Surging, or "".
func (r *run) surgeMessage(ctx context.Context) string {
	p := &holdfastv1alpha1.DisruptionPolicy{}
	if err := r.hc.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: "single"}, p); err != nil {
		return ""
	}
	for _, w := range p.Status.Workloads {
		if w.Name == "single" && w.State == holdfastv1alpha1.WorkloadSurging {
			return w.Message
		}
	}
	return ""
}

// report prints both runs side by side.
func report(t *testing.T, what string, without, with outcome) {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\twithout holdfast\twith holdfast\n", what)
	fmt.Fprintf(tw, "node taken away after\t%s\t%s\n", without.took.Round(100*time.Millisecond), with.took.Round(100*time.Millisecond))
	row := func(name string, a, b readiness) {
		fmt.Fprintf(tw, "%s: fewest Ready, longest at 0\t%d, %s\t%d, %s\n", name, a.lowest, a.zeroFor.Round(100*time.Millisecond), b.lowest, b.zeroFor.Round(100*time.Millisecond))
	}
	row("single replica (Surge)", without.single, with.single)
	row("3 replicas, policy", without.served, with.served)
	row("3 replicas, neither", without.bare, with.bare)
	fmt.Fprintf(tw, "samples every %s\t%d\t%d\n", samplePeriod, without.samples, with.samples)
	fmt.Fprintf(tw, "budget samples below floor\t%d\t%d\n", len(without.violations), len(with.violations))
	tw.Flush()
	t.Log("\n" + b.String())
	if with.handOff != "" {
		t.Logf("holdfast's status while surging: %s", with.handOff)
	}
}
