//go:build e2e

package karpenter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// The zones of the zone-outage test's NodePool, among those Karpenter's kwok provider
// offers; the first goes dark.
var (
	zones    = []string{"test-zone-a", "test-zone-b", "test-zone-c"}
	darkZone = zones[0]
)

const (
	// unreachableToleration is how long bulk's pods stay on a node that stopped
	// reporting before Kubernetes evicts them (300 s by default), so that the test does
	// not wait five minutes for what Kubernetes would do after them.
	unreachableToleration = 10
	// surged bounds the time to full strength of what fits on the survivors: well above
	// the ~35 s holdfast's surge takes, well below the ~6 minutes Kubernetes' default
	// toleration takes, so that a pass proves holdfast did it.
	surged = 3 * time.Minute
	// outage bounds the zone-outage test's waits from the crash: the node lifecycle
	// controller's grace period, the toleration, Karpenter's batch and new node, the
	// pods' start, on a busy machine.
	outage = 6 * time.Minute
)

// A zone goes dark and the survivors cannot hold every lost pod. Karpenter made two
// nodes in each of three zones; both nodes of one zone crash. holdfast surges what fits
// on the four survivors (a single replica, a small service) and says that bulk's two
// large pods fit on no surviving node; it leaves those to Kubernetes, which evicts them
// once their toleration of the unreachable node runs out, and to Karpenter, which adds
// nodes for their Pending replacements in the surviving zones. Every workload gets back
// to full strength.
//
// Karpenter learns that a zone is dark only from the cloud, which refuses to launch
// there; the kwok provider launches wherever it is allowed. The test stands for the
// refusal by taking the dark zone out of the NodePool when it goes dark (with a budget
// of no node, so that Karpenter does not replace the dark nodes for drift).
//
// The zone's nodes are often seen lost a Lease renewal apart; the response must not
// split into two (docs/node-failure.md, "a zone seen dark one node at a time").
func TestZoneOutageLeavesWhatFitsNowhereToKarpenter(t *testing.T) {
	f := framework.New(t)
	hc := f.Holdfast(&holdfastv1alpha1.DisruptionPolicyList{})
	f.StartOperator()
	np := f.NodePool("Never", func(spec map[string]any) {
		spec["disruption"].(map[string]any)["budgets"] = []any{map[string]any{"nodes": "0"}}
		setZones(spec, zones)
	})

	// Two nodes in each zone, made by Karpenter for two fillers a zone: the survivors keep
	// 1.4 CPUs free, room for the small pods and not for bulk's; the dark zone's keep 3.4.
	fillers := map[string]*appsv1.Deployment{}
	for _, z := range zones {
		cpu := "2500m"
		if z == darkZone {
			cpu = "500m"
		}
		sel := f.NodePoolSelector()
		sel[corev1.LabelTopologyZone] = z
		filler := f.Sized("filler-"+strings.TrimPrefix(z, "test-"), 2, cpu, sel)
		framework.HostnameAntiAffinity(filler)
		f.Create(filler)
		fillers[z] = filler
	}
	for _, d := range fillers {
		f.WaitReadyWithin(provision, d)
	}
	before := nodeZones(t, f)
	var dark []string
	for n, z := range before {
		if z == darkZone {
			dark = append(dark, n)
		}
	}
	slices.Sort(dark)
	if len(before) != 2*len(zones) || len(dark) != 2 {
		t.Fatalf("Karpenter made nodes %v, want two in each of %v", before, zones)
	}

	policy := &holdfastv1alpha1.DisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "services", Namespace: f.Namespace},
		Spec: holdfastv1alpha1.DisruptionPolicySpec{
			// The fillers only shape the nodes: the dark zone's are pinned there.
			Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"single", "web", "bulk"},
			}}},
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			SingleReplica:  holdfastv1alpha1.SingleReplicaSurge,
		},
	}
	if err := hc.Create(f.Ctx, policy); err != nil {
		t.Fatalf("creating DisruptionPolicy %s: %v", policy.Name, err)
	}
	// bulk's 2-CPU pods fit only in the dark zone; the others prefer it.
	bulk := f.Sized("bulk", 2, "2", f.NodePoolSelector())
	bulk.Spec.Template.Spec.Tolerations = []corev1.Toleration{{
		Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
		TolerationSeconds: ptr.To[int64](unreachableToleration),
	}}
	f.Create(bulk)
	single := f.Sized("single", 1, "300m", f.NodePoolSelector())
	framework.PreferNodes(&single.Spec.Template.Spec, corev1.LabelTopologyZone, darkZone)
	f.Create(single)
	web := f.Sized("web", 3, "300m", f.NodePoolSelector())
	framework.PreferNodes(&web.Spec.Template.Spec, corev1.LabelTopologyZone, darkZone)
	f.Create(web)
	services := []*appsv1.Deployment{single, web, bulk}
	for _, d := range services {
		f.WaitReady(d)
		if n := onNodes(t, f, d, dark); n == 0 {
			t.Fatalf("%s has no pod in zone %s: the scheduler placed them elsewhere", d.Name, darkZone)
		}
	}
	if n := onNodes(t, f, bulk, dark); n != 2 {
		t.Fatalf("bulk has %d pods in zone %s, want both", n, darkZone)
	}
	f.WaitBudget("holdfast-deploy-single", 0)

	start := time.Now()
	for _, n := range dark {
		f.CrashNode(n)
	}
	// The cloud refuses to launch in a dark zone.
	patchZones(t, f, np, zones[1:])
	var fits, pending, added, full time.Duration
	var homeless, addedNode string
	var bulkExtra int32 // the most extra pods bulk's surge set ever asked for
	fitsSurged := map[string]int32{}
	last := map[string]string{}
	f.Eventually(outage, "every workload at full strength on live nodes", func(ctx context.Context) (bool, error) {
		since := time.Since(start)
		msgs, err := messages(ctx, hc, policy)
		if err != nil {
			return false, err
		}
		for _, d := range services {
			if msgs[d.Name] != last[d.Name] {
				// The timeline of the statuses explains a failure.
				t.Logf("%.1f s: %s's status: %s", since.Seconds(), d.Name, msgs[d.Name])
				last[d.Name] = msgs[d.Name]
			}
		}
		extra, _, err := f.Extra(ctx, bulk)
		if err != nil {
			return false, err
		}
		bulkExtra = max(bulkExtra, extra)
		if homeless == "" && strings.Contains(msgs["bulk"], "2 would fit on no surviving node") {
			homeless = msgs["bulk"]
		}
		whole := map[string]bool{}
		for _, d := range services {
			n, waiting, err := readyOn(ctx, f, d, dark)
			if err != nil {
				return false, err
			}
			whole[d.Name] = n >= int(*d.Spec.Replicas)
			if d == bulk && waiting && pending == 0 {
				pending = since
			}
		}
		if fits == 0 && whole["single"] && whole["web"] {
			// At full strength by holdfast's surge, or by Kubernetes' replacements.
			for _, d := range []*appsv1.Deployment{single, web} {
				if fitsSurged[d.Name], _, err = f.Extra(ctx, d); err != nil {
					return false, err
				}
			}
			fits = since
		}
		if added == 0 {
			after, err := readyNodes(ctx, f)
			if err != nil {
				return false, err
			}
			for n := range after {
				if _, ok := before[n]; !ok {
					added, addedNode = since, n
				}
			}
		}
		if full == 0 && whole["single"] && whole["web"] && whole["bulk"] {
			full = since
		}
		if full == 0 || homeless == "" {
			return false, fmt.Errorf("full strength %v (%v), what fits %s, bulk Pending %s, new node %s, status seen saying its 2 pods fit nowhere %t",
				whole, full, fits, pending, added, homeless != "")
		}
		return true, nil
	})
	if fits > surged {
		t.Errorf("single and web at full strength on the survivors after %s, over %s: Kubernetes replaced them, not holdfast's surge", fits, surged)
	}
	for name, extra := range fitsSurged {
		if extra == 0 {
			t.Errorf("%s at full strength on the survivors after %s without holdfast's surge: Kubernetes, not holdfast, replaced it", name, fits)
		}
	}
	if bulkExtra != 0 {
		t.Errorf("bulk surged by up to %d pods, which fit on no surviving node and could only wait Pending", bulkExtra)
	}
	if pending == 0 || pending > full {
		t.Errorf("bulk's replacements were never seen Pending before full strength: Karpenter's node was not made for them")
	}
	if added == 0 || added > full {
		t.Errorf("no new node Ready before full strength (first new node %q)", addedNode)
	}
	after := nodeZones(t, f)
	for n, z := range after {
		if _, ok := before[n]; !ok && z == darkZone {
			t.Errorf("Karpenter added node %s in the dark zone %s", n, z)
		}
	}
	t.Logf("new nodes: %v", newNodes(before, after))
	t.Logf("FIGURE karpenter zone-outage what-fits-ready-seconds=%.1f autoscaler-node-ready-seconds=%.1f full-strength-seconds=%.1f (2 of 6 nodes, 1 zone of 3; bulk's 2 pods fit nowhere, toleration %d s; Pending from %.1f s)",
		fits.Seconds(), added.Seconds(), full.Seconds(), unreachableToleration, pending.Seconds())
}

// setZones limits a NodePool spec's nodes to zones.
func setZones(spec map[string]any, zones []string) {
	tmpl := spec["template"].(map[string]any)["spec"].(map[string]any)
	reqs := slices.DeleteFunc(tmpl["requirements"].([]any), func(r any) bool {
		return r.(map[string]any)["key"] == corev1.LabelTopologyZone
	})
	values := make([]any, len(zones))
	for i, z := range zones {
		values[i] = z
	}
	tmpl["requirements"] = append(reqs, map[string]any{"key": corev1.LabelTopologyZone, "operator": "In", "values": values})
}

// patchZones limits the NodePool's new nodes to zones.
func patchZones(t *testing.T, f *framework.Framework, np *unstructured.Unstructured, zones []string) {
	t.Helper()
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(framework.NodePoolKind)
	if err := f.Client.Get(f.Ctx, client.ObjectKeyFromObject(np), cur); err != nil {
		t.Fatalf("reading NodePool %s: %v", np.GetName(), err)
	}
	spec := cur.Object["spec"].(map[string]any)
	setZones(spec, zones)
	if err := f.Client.Update(f.Ctx, cur); err != nil {
		t.Fatalf("limiting NodePool %s to zones %v: %v", np.GetName(), zones, err)
	}
}

// onNodes counts the Deployment's pods on nodes.
func onNodes(t *testing.T, f *framework.Framework, d *appsv1.Deployment, nodes []string) int {
	t.Helper()
	pods, err := f.Pods(f.Ctx, framework.SelectorOf(d))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods {
		if slices.Contains(nodes, p.Spec.NodeName) {
			n++
		}
	}
	return n
}

// readyOn counts the Deployment's pods Ready on nodes other than dead, and reports
// whether one waits unscheduled.
func readyOn(ctx context.Context, f *framework.Framework, d *appsv1.Deployment, dead []string) (int, bool, error) {
	pods, err := f.Pods(ctx, framework.SelectorOf(d))
	if err != nil {
		return 0, false, err
	}
	n, waiting := 0, false
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Spec.NodeName == "" {
			waiting = true
		} else if !slices.Contains(dead, p.Spec.NodeName) && framework.PodReady(p) {
			n++
		}
	}
	return n, waiting, nil
}

// messages are the status messages of the policy's workloads, by name.
func messages(ctx context.Context, hc client.Client, p *holdfastv1alpha1.DisruptionPolicy) (map[string]string, error) {
	cur := &holdfastv1alpha1.DisruptionPolicy{}
	if err := hc.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, cur); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, w := range cur.Status.Workloads {
		out[w.Name] = w.Message
	}
	return out, nil
}

// nodeZones reads the zone of every node of the test's NodePool.
func nodeZones(t *testing.T, f *framework.Framework) map[string]string {
	t.Helper()
	list := &corev1.NodeList{}
	if err := f.Client.List(f.Ctx, list, client.MatchingLabels(f.NodePoolSelector())); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range list.Items {
		out[n.Name] = n.Labels[corev1.LabelTopologyZone]
	}
	return out
}

// readyNodes lists the Ready nodes of the test's NodePool.
func readyNodes(ctx context.Context, f *framework.Framework) (map[string]bool, error) {
	list := &corev1.NodeList{}
	if err := f.Client.List(ctx, list, client.MatchingLabels(f.NodePoolSelector())); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for i := range list.Items {
		if framework.NodeReady(&list.Items[i]) {
			out[list.Items[i].Name] = true
		}
	}
	return out, nil
}

// newNodes names the nodes of after that before lacks, with their zones.
func newNodes(before, after map[string]string) []string {
	var out []string
	for n, z := range after {
		if _, ok := before[n]; !ok {
			out = append(out, n+" ("+z+")")
		}
	}
	slices.Sort(out)
	return out
}
