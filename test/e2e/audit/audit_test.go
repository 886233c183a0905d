//go:build e2e

// Package audit_test deploys common misconfigurations on the testbed and checks that
// `holdfast audit` reports them from live state, and that the four numbers it computes
// for every budget are the ones the real disruption controller writes.
package audit_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/holdfast-dev/holdfast/internal/audit"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Nodes: 3, Zones: 3})
}

// found lists findings as "RULE Kind/name", sorted.
func found(r audit.Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Rule+" "+f.Kind+"/"+f.Name)
	}
	slices.Sort(out)
	return out
}

// budgetsMatchController waits until holdfast's budgets equal the status the disruption
// controller wrote for every PDB of the namespace, and returns the last report.
func budgetsMatchController(f *framework.Framework) audit.Report {
	f.T.Helper()
	var r audit.Report
	f.Eventually(time.Minute, "holdfast's budgets to equal the disruption controller's", func(ctx context.Context) (bool, error) {
		pdbs, err := f.Clientset.PolicyV1().PodDisruptionBudgets(f.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		want := map[string]availability.Status{}
		for _, p := range pdbs.Items {
			if p.Status.ObservedGeneration < p.Generation && !framework.SyncFailed(&p) {
				return false, nil
			}
			want[p.Name] = availability.Status{
				ExpectedPods: p.Status.ExpectedPods, DesiredHealthy: p.Status.DesiredHealthy,
				CurrentHealthy: p.Status.CurrentHealthy, DisruptionsAllowed: p.Status.DisruptionsAllowed,
			}
		}
		r, _ = f.Audit()
		got := map[string]availability.Status{}
		for _, b := range r.Budgets {
			got[b.Name] = b.Status
		}
		return cmp.Equal(want, got), nil
	})
	for _, b := range r.Budgets {
		f.T.Logf("budget %s: holdfast and the controller agree on %+v", b.Name, b.Status)
	}
	for _, finding := range r.Findings {
		f.T.Logf("finding %s %s/%s: %s", finding.Rule, finding.Kind, finding.Name, finding.Message)
	}
	return r
}

func probes(d *appsv1.Deployment) {
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}}
	for i := range d.Spec.Template.Spec.Containers {
		d.Spec.Template.Spec.Containers[i].ReadinessProbe = probe
		d.Spec.Template.Spec.Containers[i].LivenessProbe = probe
	}
}

func hostnameSpread(d *appsv1.Deployment) {
	d.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: d.Spec.Selector,
	}}
}

func minAvailablePDB(f *framework.Framework, name, app string, v intstr.IntOrString) *policyv1.PodDisruptionBudget {
	p := f.PDB(name, app, 0)
	p.Spec.MaxUnavailable, p.Spec.MinAvailable = nil, &v
	return p
}

// TestMisconfiguredScenarios deploys single replicas whose budgets block every drain of
// their node, a service that an upgrade draining every node at once would take down and a
// critical DaemonSet under a budget the controller cannot compute, next to a
// well-configured service, and expects exactly their findings.
func TestMisconfiguredScenarios(t *testing.T) {
	f := framework.New(t)

	// Single replicas whose budgets never allow a disruption, so every drain of their node
	// blocks forever; worker also asks Karpenter never to disrupt its node.
	mysvc := f.Deployment("mysvc", 1)
	probes(mysvc)
	f.Create(mysvc)
	f.Create(minAvailablePDB(f, "mysvc", "mysvc", intstr.FromInt32(1)))
	worker := f.Deployment("worker", 1)
	probes(worker)
	worker.Spec.Template.Annotations = map[string]string{availability.AnnotationKarpenterDoNotDisrupt: "true"}
	f.Create(worker)
	f.Create(minAvailablePDB(f, "worker", "worker", intstr.FromString("50%")))

	// Three replicas, no budget, no probes, nothing spreading them: an upgrade that drains
	// every node at once takes them all down.
	platform := f.Deployment("platform", 3)
	f.Create(platform)

	// A critical DaemonSet under a budget the controller cannot compute.
	labels := map[string]string{"app": "storage-agent"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "storage-agent", Namespace: f.Namespace,
			Annotations: map[string]string{availability.AnnotationCritical: "true"}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "registry.example/agent:1"}}},
			},
		},
	}
	f.Create(ds)
	f.Create(f.PDB("storage-agent", "storage-agent", 1))

	// Two budgets over the same pods: the Eviction API answers 500.
	shared := f.Deployment("shared", 2)
	probes(shared)
	hostnameSpread(shared)
	f.Create(shared)
	f.Create(f.PDB("shared-a", "shared", 1))
	f.Create(minAvailablePDB(f, "shared-b", "shared", intstr.FromInt32(1)))

	// Well configured: spread, probes, a budget of one.
	good := f.Deployment("good", 3)
	probes(good)
	hostnameSpread(good)
	f.Create(good)
	f.Create(f.PDB("good", "good", 1))

	for _, d := range []*appsv1.Deployment{mysvc, worker, platform, shared, good} {
		f.WaitReady(d)
	}
	f.Eventually(time.Minute, "the DaemonSet on every node", func(ctx context.Context) (bool, error) {
		pods, err := f.Pods(ctx, "app=storage-agent")
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range pods {
			if framework.PodReady(&pods[i]) {
				ready++
			}
		}
		return ready == len(f.Nodes), nil
	})

	r := budgetsMatchController(f)
	want := []string{
		"HF001 PodDisruptionBudget/mysvc",
		"HF001 PodDisruptionBudget/worker",
		"HF002 Deployment/platform",
		"HF004 PodDisruptionBudget/shared-a",
		"HF005 PodDisruptionBudget/storage-agent",
		"HF006 Deployment/platform",
		"HF011 DaemonSet/storage-agent",
		"HF011 Deployment/platform",
		"HF012 DaemonSet/storage-agent",
		"HF012 Deployment/platform",
		"HF013 Deployment/mysvc",
		"HF015 DaemonSet/storage-agent",
		"HF017 PodDisruptionBudget/storage-agent",
	}
	// Where the scheduler put platform's replicas is its choice: concentration findings
	// for it are possible and right, and TestRuntimeConcentration covers them.
	got := slices.DeleteFunc(found(r), func(s string) bool {
		return s == "HF008 Deployment/platform" || s == "HF009 Deployment/platform"
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings from live state (-want +got):\n%s", diff)
	}
	if r.Source != "live" {
		t.Errorf("source %q, want live", r.Source)
	}
}

// TestRuntimeConcentration reproduces a node crash's pile-up deterministically: three
// replicas spread by the scheduler; two nodes are lost (cordoned, their pods deleted) and
// the replicas pile onto the third; the nodes come back and nothing moves the pods. Only
// the live audit can see it.
func TestRuntimeConcentration(t *testing.T) {
	f := framework.New(t)
	hello := f.Deployment("hello-world", 3)
	probes(hello)
	f.Create(hello)
	f.Create(minAvailablePDB(f, "hello-world", "hello-world", intstr.FromInt32(2)))
	f.WaitReady(hello)

	last := f.Nodes[len(f.Nodes)-1]
	lost := f.Nodes[:len(f.Nodes)-1]
	for _, n := range lost {
		f.Cordon(n)
	}
	pods, err := f.Pods(f.Ctx, framework.SelectorOf(hello))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Spec.NodeName != last {
			if err := f.Clientset.CoreV1().Pods(f.Namespace).Delete(f.Ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil {
				t.Fatalf("deleting pod %s: %v", p.Name, err)
			}
		}
	}
	f.Eventually(time.Minute, "every replica Ready on "+last, func(ctx context.Context) (bool, error) {
		pods, err := f.Pods(ctx, framework.SelectorOf(hello))
		if err != nil {
			return false, err
		}
		ready := 0
		for i, p := range pods {
			if p.DeletionTimestamp == nil && p.Spec.NodeName == last && framework.PodReady(&pods[i]) {
				ready++
			}
		}
		return ready == 3 && len(pods) == 3, nil
	})
	// The lost nodes come back; nothing rebalances.
	for _, n := range lost {
		patch := []byte(`{"spec":{"unschedulable":false}}`)
		if _, err := f.Clientset.CoreV1().Nodes().Patch(f.Ctx, n, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("uncordoning %s: %v", n, err)
		}
	}

	r := budgetsMatchController(f)
	want := []string{
		"HF006 Deployment/hello-world",
		"HF008 Deployment/hello-world",
		"HF009 Deployment/hello-world",
	}
	if diff := cmp.Diff(want, found(r)); diff != "" {
		t.Errorf("findings from live state (-want +got):\n%s", diff)
	}
	for _, finding := range r.Findings {
		if finding.Rule == "HF008" && !strings.Contains(finding.Message, fmt.Sprintf("3 of the 3 running pods of Deployment hello-world are on node %s", last)) {
			t.Errorf("HF008 message %q does not name the node holding every replica", finding.Message)
		}
	}
}

// TestBudgetBlockedNow: a budget that could allow a disruption but cannot now, because
// a replica is Pending (required anti-affinity, and its zone has a single node).
func TestBudgetBlockedNow(t *testing.T) {
	f := framework.New(t)
	d := f.Deployment("pinned", 2)
	probes(d)
	framework.HostnameAntiAffinity(d)
	var zone string
	node, err := f.Clientset.CoreV1().Nodes().Get(f.Ctx, f.Nodes[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	zone = node.Labels[corev1.LabelTopologyZone]
	d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: zone}
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}}
	f.Create(d)
	f.Create(minAvailablePDB(f, "pinned", "pinned", intstr.FromInt32(1)))
	f.Eventually(time.Minute, "one pod Ready and one Pending", func(ctx context.Context) (bool, error) {
		pods, err := f.Pods(ctx, framework.SelectorOf(d))
		if err != nil {
			return false, err
		}
		ready, pending := 0, 0
		for i, p := range pods {
			switch {
			case framework.PodReady(&pods[i]):
				ready++
			case p.Spec.NodeName == "":
				pending++
			}
		}
		return ready == 1 && pending == 1, nil
	})
	r := budgetsMatchController(f)
	want := []string{"HF016 PodDisruptionBudget/pinned"}
	if diff := cmp.Diff(want, found(r)); diff != "" {
		t.Errorf("findings from live state (-want +got):\n%s", diff)
	}
}
