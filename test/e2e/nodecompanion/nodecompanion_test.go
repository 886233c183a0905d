//go:build e2e

// Package nodecompanion's end-to-end tests protect a critical DaemonSet on the testbed: a
// companion next to every pod of a storage DaemonSet, drained one node at a time even
// though drains pass --ignore-daemonsets, with a per-node guard, through cordons, node
// churn, DaemonSet changes, rollouts and operator restarts.
package nodecompanion

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

func TestCompanionOnEveryNodeAndDrainsOneAtATime(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	e.daemonSet("storage", nil)
	nc := e.companionFor("storage", nil)
	e.waitCovered(nc, e.Nodes, 5)
	e.waitAllowed(nc, 1)
	t.Logf("kubectl get nodecompanions:\n%s", e.kubectlGet("nodecompanions"))
	t.Logf("kubectl get deployment,pdb:\n%s", e.kubectlGet("deployment,pdb"))

	// Two drains at the same time, as two `kubectl drain --ignore-daemonsets` would:
	// both nodes cordoned, both companions evicted at once. One eviction goes through.
	e.Cordon(e.Nodes[0])
	e.Cordon(e.Nodes[1])
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.evictCompanion(e.Ctx, nc, e.Nodes[i])
		}()
	}
	wg.Wait()
	first, second := e.Nodes[0], e.Nodes[1]
	switch {
	case errs[0] == nil && apierrors.IsTooManyRequests(errs[1]):
	case errs[1] == nil && apierrors.IsTooManyRequests(errs[0]):
		first, second = second, first
	default:
		t.Fatalf("concurrent evictions: %v and %v; want one through and one refused with 429", errs[0], errs[1])
	}
	t.Logf("concurrent drains: %s went first, %s was refused", first, second)
	e.waitAllowed(nc, 0)
	e.refused(nc, second)

	e.Eventually(settle, "status naming the node that holds the budget", func(ctx context.Context) (bool, error) {
		cur := &holdfastv1alpha1.NodeCompanion{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(nc), cur); err != nil {
			return false, err
		}
		if len(cur.Status.Drained) != 1 || cur.Status.Drained[0].Node != first {
			return false, fmt.Errorf("drained %v", cur.Status.Drained)
		}
		evs, err := e.events(ctx, nc, "BudgetHeld")
		if err != nil || len(evs) == 0 {
			return false, fmt.Errorf("no BudgetHeld event: %v", err)
		}
		t.Logf("event BudgetHeld: %s", evs[0])
		return true, nil
	})
	t.Logf("kubectl get nodecompanions while %s is drained:\n%s", first, e.kubectlGet("nodecompanions"))

	// The first node comes back: its companion returns, and the second drain proceeds.
	e.Uncordon(first)
	e.drain(nc, second)
	e.Uncordon(second)
	e.waitCovered(nc, e.Nodes, 5)
}

func TestDrainedNodeDeletedReleasesTheBudget(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	e.daemonSet("storage", nil)
	nc := e.companionFor("storage", nil)
	e.AddNode("nc-gone", "zone-a", nil)
	all := append(slices.Clone(e.Nodes), "nc-gone")
	e.waitCovered(nc, all, 6)

	e.drain(nc, "nc-gone")
	e.Cordon(e.Nodes[2])
	e.waitAllowed(nc, 0)
	e.refused(nc, e.Nodes[2])

	e.DeleteNode("nc-gone")
	e.drain(nc, e.Nodes[2])
	e.Uncordon(e.Nodes[2])
	e.waitCovered(nc, e.Nodes, 5)
}

func TestGuardRefusesOneNodeOnly(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	e.daemonSet("storage", nil)
	nc := e.companionFor("storage", func(nc *holdfastv1alpha1.NodeCompanion) {
		nc.Spec.Guard = &holdfastv1alpha1.Guard{Enabled: true}
	})
	e.waitCovered(nc, e.Nodes, 5)

	guarded, other := e.Nodes[2], e.Nodes[3]
	// The companion on the guarded node holds it, as a storage agent holding the last
	// copy of some data would: it labels its own pod.
	setGuard := func(on bool) {
		byNode, _, err := e.companions(e.Ctx, nc)
		if err != nil {
			t.Fatal(err)
		}
		value := `"` + holdfastv1alpha1.GuardHold + `"`
		if !on {
			value = "null"
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, holdfastv1alpha1.GuardLabel, value)
		if err := e.c.Patch(e.Ctx, byNode[guarded], client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
	}
	setGuard(true)
	e.Eventually(settle, "guard reported", func(ctx context.Context) (bool, error) {
		cur := &holdfastv1alpha1.NodeCompanion{}
		err := e.c.Get(ctx, client.ObjectKeyFromObject(nc), cur)
		return err == nil && slices.Equal(cur.Status.Guarded, []string{guarded}), err
	})
	e.waitAllowed(nc, 1)
	e.Cordon(guarded)
	e.refused(nc, guarded)

	// Every other node stays drainable, one at a time.
	e.drain(nc, other)
	e.Uncordon(other)
	e.waitCovered(nc, e.Nodes, 5)

	setGuard(false)
	e.drain(nc, guarded)
	e.Uncordon(guarded)
	e.waitCovered(nc, e.Nodes, 5)
}

func TestCordonedNodes(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	e.daemonSet("storage", nil)
	nc := e.companionFor("storage", nil)
	e.waitCovered(nc, e.Nodes, 5)

	// Cordoned, not drained: its companion still runs, and other drains go on.
	cordonedOnly := e.Nodes[0]
	e.Cordon(cordonedOnly)
	e.waitAllowed(nc, 1)
	e.drain(nc, e.Nodes[1])
	e.Uncordon(e.Nodes[1])
	e.waitCovered(nc, e.Nodes, 5)

	// The companion on the cordoned node dies (a crash, a deletion): no replacement can
	// land there, and the node must not hold the budget for it.
	byNode, _, err := e.companions(e.Ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(e.Ctx, byNode[cordonedOnly]); err != nil {
		t.Fatal(err)
	}
	rest := e.Nodes[1:]
	e.waitCovered(nc, rest, 4)
	e.waitAllowed(nc, 1)
	cur := e.get(nc)
	if len(cur.Status.Excluded) != 1 || cur.Status.Excluded[0].Node != cordonedOnly {
		t.Errorf("excluded %v, want %s", cur.Status.Excluded, cordonedOnly)
	}
	e.drain(nc, e.Nodes[2])
	e.Uncordon(e.Nodes[2])

	// A template change while a node is cordoned with its companion: the rollout cannot
	// put the new companion back there, and must neither hang nor hold the budget.
	e.Uncordon(cordonedOnly)
	e.waitCovered(nc, e.Nodes, 5)
	e.Cordon(e.Nodes[4])
	bump(t, e, nc, "v2")
	e.waitCovered(nc, e.Nodes[:4], 4)
	e.waitRolledOut(nc, "v2")
	e.waitAllowed(nc, 1)
}

// bump changes the companion's template, which rolls the Deployment out.
func bump(t *testing.T, e *env, nc *holdfastv1alpha1.NodeCompanion, version string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"version":%q}}}}}`, version)
	if err := e.c.Patch(e.Ctx, nc, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

func (e *env) waitRolledOut(nc *holdfastv1alpha1.NodeCompanion, version string) {
	e.T.Helper()
	e.Eventually(settle, "rollout of "+version, func(ctx context.Context) (bool, error) {
		byNode, unbound, err := e.companions(ctx, nc)
		if err != nil {
			return false, err
		}
		if len(unbound) > 0 {
			return false, fmt.Errorf("%d companions unscheduled", len(unbound))
		}
		for n, p := range byNode {
			if p.Annotations["version"] != version || !ready(p) {
				return false, fmt.Errorf("companion on %s not at %s", n, version)
			}
		}
		return true, nil
	})
}

func TestTemplateRolloutOneNodeAtATime(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	e.daemonSet("storage", nil)
	nc := e.companionFor("storage", nil)
	e.waitCovered(nc, e.Nodes, 5)

	ctx, cancel := context.WithCancel(e.Ctx)
	worst := make(chan int, 1)
	go func() {
		// Sample every 100 ms: how many nodes lack a Ready companion at once.
		most := 0
		defer func() { worst <- most }()
		for ctx.Err() == nil {
			if byNode, _, err := e.companions(ctx, nc); err == nil {
				lacking := 0
				for _, n := range e.Nodes {
					if p := byNode[n]; p == nil || !ready(p) {
						lacking++
					}
				}
				most = max(most, lacking)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	bump(t, e, nc, "v2")
	e.waitRolledOut(nc, "v2")
	cancel()
	if most := <-worst; most > 1 {
		t.Errorf("%d nodes lacked a Ready companion at once during the rollout; want at most 1", most)
	}
}

func TestNodeChurn(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	e.daemonSet("storage", nil)
	nc := e.companionFor("storage", nil)
	e.waitCovered(nc, e.Nodes, 5)

	start := time.Now()
	e.AddNode("nc-new", "zone-b", nil)
	e.Eventually(settle, "companion Running on the new node", func(ctx context.Context) (bool, error) {
		byNode, _, err := e.companions(ctx, nc)
		if err != nil {
			return false, err
		}
		p := byNode["nc-new"]
		return p != nil && ready(p), nil
	})
	t.Logf("latency: new node to Running companion: %s", time.Since(start).Round(time.Millisecond))
	e.waitCovered(nc, append(slices.Clone(e.Nodes), "nc-new"), 6)

	// Deleted without a drain: replicas drop, no stale pod stays bound to it.
	e.DeleteNode("nc-new")
	e.waitCovered(nc, e.Nodes, 5)
	e.Eventually(settle, "no companion left on the deleted node", func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := e.c.List(ctx, pods, client.InNamespace(nc.Namespace), client.MatchingFields{"spec.nodeName": "nc-new"},
			client.MatchingLabels{holdfastv1alpha1.CompanionLabel: nc.Name}); err != nil {
			return false, err
		}
		if len(pods.Items) > 0 {
			return false, fmt.Errorf("%d pods still bound to nc-new", len(pods.Items))
		}
		return true, nil
	})
	e.waitAllowed(nc, 1)
}

func TestFollowsTheDaemonSet(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	ds := e.daemonSet("storage", nil)
	nc := e.companionFor("storage", nil)
	e.waitCovered(nc, e.Nodes, 5)

	// A NoExecute taint the DaemonSet does not tolerate: the node leaves.
	tainted := e.Nodes[4]
	setTaints(t, e, tainted, []corev1.Taint{{Key: "maintenance", Value: "true", Effect: corev1.TaintEffectNoExecute}})
	e.waitCovered(nc, e.Nodes[:4], 4)
	// The DaemonSet learns to tolerate it: the node is back, and so is the companion.
	start := time.Now()
	patchDS(t, e, ds, `{"spec":{"template":{"spec":{"tolerations":[{"key":"maintenance","operator":"Exists"}]}}}}`)
	e.Eventually(settle, "toleration on the Deployment", func(ctx context.Context) (bool, error) {
		dep := &appsv1.Deployment{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(nc), dep); err != nil {
			return false, err
		}
		return slices.ContainsFunc(dep.Spec.Template.Spec.Tolerations, func(t corev1.Toleration) bool { return t.Key == "maintenance" }), nil
	})
	t.Logf("latency: DaemonSet toleration change to Deployment: %s", time.Since(start).Round(time.Millisecond))
	e.waitCovered(nc, e.Nodes, 5)
	setTaints(t, e, tainted, nil)

	// A node selector on the DaemonSet: only the labelled nodes keep a companion.
	labelNode(t, e, e.Nodes[0], "storage", "yes")
	labelNode(t, e, e.Nodes[1], "storage", "yes")
	start = time.Now()
	patchDS(t, e, ds, `{"spec":{"template":{"spec":{"nodeSelector":{"storage":"yes"}}}}}`)
	e.Eventually(settle, "node selector on the Deployment", func(ctx context.Context) (bool, error) {
		dep := &appsv1.Deployment{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(nc), dep); err != nil {
			return false, err
		}
		return dep.Spec.Template.Spec.NodeSelector["storage"] == "yes", nil
	})
	t.Logf("latency: DaemonSet node selector change to Deployment: %s", time.Since(start).Round(time.Millisecond))
	e.waitCovered(nc, e.Nodes[:2], 2)
	// A label added to a third node brings it in.
	labelNode(t, e, e.Nodes[2], "storage", "yes")
	e.waitCovered(nc, e.Nodes[:3], 3)

	// The DaemonSet is deleted: the companions are left as they are and status says why.
	if err := e.c.Delete(e.Ctx, ds); err != nil {
		t.Fatal(err)
	}
	e.Eventually(settle, "TargetNotFound", func(ctx context.Context) (bool, error) {
		cur := &holdfastv1alpha1.NodeCompanion{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(nc), cur); err != nil {
			return false, err
		}
		for _, c := range cur.Status.Conditions {
			if c.Type == holdfastv1alpha1.ConditionReady && c.Reason == "TargetNotFound" {
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %v", cur.Status.Conditions)
	})
	dep := &appsv1.Deployment{}
	if err := e.c.Get(e.Ctx, client.ObjectKeyFromObject(nc), dep); err != nil || *dep.Spec.Replicas != 3 {
		t.Errorf("Deployment after the DaemonSet's deletion: replicas %v, err %v; want 3 left as they were", dep.Spec.Replicas, err)
	}
	t.Logf("kubectl get nodecompanions without the DaemonSet:\n%s", e.kubectlGet("nodecompanions"))
}

func setTaints(t *testing.T, e *env, node string, taints []corev1.Taint) {
	t.Helper()
	n, err := e.Clientset.CoreV1().Nodes().Get(e.Ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var keep []corev1.Taint
	for _, taint := range n.Spec.Taints {
		if taint.Key == corev1.TaintNodeUnschedulable {
			keep = append(keep, taint)
		}
	}
	n.Spec.Taints = append(keep, taints...)
	if _, err := e.Clientset.CoreV1().Nodes().Update(e.Ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(taints) > 0 {
		t.Cleanup(func() {
			n, err := e.Clientset.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
			if err != nil {
				return
			}
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key != corev1.TaintNodeUnschedulable })
			_, _ = e.Clientset.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
		})
	}
}

func labelNode(t *testing.T, e *env, node, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
	if _, err := e.Clientset.CoreV1().Nodes().Patch(e.Ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, key)
		_, _ = e.Clientset.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	})
}

func patchDS(t *testing.T, e *env, ds *appsv1.DaemonSet, patch string) {
	t.Helper()
	if err := e.c.Patch(e.Ctx, ds, client.RawPatch(types.StrategicMergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

func TestOperatorRestartMidDrain(t *testing.T) {
	e := setup(t)
	stop := e.StartOperator()
	e.daemonSet("storage", nil)
	nc := e.companionFor("storage", nil)
	e.waitCovered(nc, e.Nodes, 5)

	e.drain(nc, e.Nodes[0])
	e.Eventually(settle, "drain recorded", func(ctx context.Context) (bool, error) {
		cur := &holdfastv1alpha1.NodeCompanion{}
		err := e.c.Get(ctx, client.ObjectKeyFromObject(nc), cur)
		return err == nil && len(cur.Status.Drained) == 1, err
	})
	stop()

	// While the operator is down, another node is cordoned and the budget still holds.
	e.Cordon(e.Nodes[1])
	e.refused(nc, e.Nodes[1])

	e.StartOperator()
	e.waitAllowed(nc, 0)
	e.refused(nc, e.Nodes[1])
	e.Uncordon(e.Nodes[0])
	e.drain(nc, e.Nodes[1])
	e.Uncordon(e.Nodes[1])
	e.waitCovered(nc, e.Nodes, 5)

	deps := &appsv1.DeploymentList{}
	pdbs := &policyv1.PodDisruptionBudgetList{}
	if err := e.c.List(e.Ctx, deps, client.InNamespace(e.Namespace)); err != nil {
		t.Fatal(err)
	}
	if err := e.c.List(e.Ctx, pdbs, client.InNamespace(e.Namespace)); err != nil {
		t.Fatal(err)
	}
	if len(deps.Items) != 1 || len(pdbs.Items) != 1 {
		t.Errorf("after a restart: %d Deployments and %d budgets, want 1 and 1", len(deps.Items), len(pdbs.Items))
	}
}

func TestValidation(t *testing.T) {
	e := setup(t)
	cases := map[string]struct {
		mod  func(*holdfastv1alpha1.NodeCompanion)
		want string
	}{
		"two targets": {
			mod:  func(nc *holdfastv1alpha1.NodeCompanion) { nc.Spec.NodeSelector = map[string]string{"a": "b"} },
			want: "set exactly one target",
		},
		"zero maxUnavailable": {
			mod: func(nc *holdfastv1alpha1.NodeCompanion) {
				zero := intstr.FromInt32(0)
				nc.Spec.MaxUnavailable = &zero
			},
			want: "0 would block every drain",
		},
		// The CRD keeps the template without the pod template's schema, but still
		// declares what its rules read and the containers a pod needs.
		"nodeName": {
			mod:  func(nc *holdfastv1alpha1.NodeCompanion) { nc.Spec.Template.Spec.NodeName = "node-0" },
			want: "spec.template.spec.nodeName must be empty",
		},
		"pod anti-affinity": {
			mod: func(nc *holdfastv1alpha1.NodeCompanion) {
				nc.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}
			},
			want: "spec.template.spec.affinity.podAntiAffinity must be empty",
		},
		"no containers": {
			mod:  func(nc *holdfastv1alpha1.NodeCompanion) { nc.Spec.Template.Spec.Containers = nil },
			want: "spec.template.spec.containers",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nc := &holdfastv1alpha1.NodeCompanion{
				ObjectMeta: metav1.ObjectMeta{Name: "invalid", Namespace: e.Namespace},
				Spec: holdfastv1alpha1.NodeCompanionSpec{
					DaemonSet: &holdfastv1alpha1.DaemonSetReference{Name: "storage"},
					Template:  corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}},
				},
			}
			tc.mod(nc)
			err := e.c.Create(e.Ctx, nc)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("create: %v; want Invalid with %q", err, tc.want)
			}
		})
	}
}

// userFieldOwner writes as someone other than the operator, which runs in the test's
// process and would otherwise share its field manager.
var userFieldOwner = client.FieldOwner("kubectl-annotate")

// Issue 30 item 11: holdfast's writes of the companion Deployment and budget keep the
// keys others own: a user's annotation on each, the deployment controller's revision.
func TestWritesKeepOthersKeys(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	e.daemonSet("storage", nil)
	nc := e.companionFor("storage", nil)
	e.waitCovered(nc, e.Nodes, 5)

	key := types.NamespacedName{Namespace: nc.Namespace, Name: nc.Name}
	note := []byte(`{"metadata":{"annotations":{"example.com/note":"keep"}}}`)
	for _, obj := range []client.Object{&appsv1.Deployment{}, &policyv1.PodDisruptionBudget{}} {
		obj.SetNamespace(key.Namespace)
		obj.SetName(key.Name)
		if err := e.c.Patch(e.Ctx, obj, client.RawPatch(types.MergePatchType, note), userFieldOwner); err != nil {
			t.Fatal(err)
		}
	}
	// A new template and a new maxUnavailable: holdfast rewrites both objects.
	if err := e.c.Patch(e.Ctx, nc, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"maxUnavailable":2}}`))); err != nil {
		t.Fatal(err)
	}
	bump(t, e, nc, "v2")
	e.waitRolledOut(nc, "v2")
	e.Eventually(settle, "the budget at maxUnavailable 2", func(ctx context.Context) (bool, error) {
		b := &policyv1.PodDisruptionBudget{}
		err := e.c.Get(ctx, key, b)
		return err == nil && b.Spec.MaxUnavailable != nil && b.Spec.MaxUnavailable.IntValue() == 2, err
	})
	d := &appsv1.Deployment{}
	if err := e.c.Get(e.Ctx, key, d); err != nil {
		t.Fatal(err)
	}
	if d.Annotations["example.com/note"] != "keep" {
		t.Errorf("the user's annotation on the companion Deployment was dropped: %v", d.Annotations)
	}
	if d.Annotations["deployment.kubernetes.io/revision"] == "" {
		t.Errorf("the deployment controller's revision on the companion Deployment was dropped: %v", d.Annotations)
	}
	b := &policyv1.PodDisruptionBudget{}
	if err := e.c.Get(e.Ctx, key, b); err != nil {
		t.Fatal(err)
	}
	if b.Annotations["example.com/note"] != "keep" {
		t.Errorf("the user's annotation on the companion budget was dropped: %v", b.Annotations)
	}
}

// The template the CRD leaves open is checked by the operator: a field that no pod
// template has, and a template the API server refuses for the companions' Deployment,
// are each named on the NodeCompanion (Ready False, reason InvalidSpec, and a Warning
// Event), and nothing is made from them.
func TestTemplateCheckedByTheOperator(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	e.daemonSet("storage", nil)
	cases := map[string]struct {
		container map[string]any
		want      string
	}{
		"misspelt": {
			container: map[string]any{"name": "guard", "image": "registry.example/guard:1", "resource": map[string]any{"requests": map[string]any{"cpu": "10m"}}},
			want:      `unknown field "spec.containers[0].resource"`,
		},
		"refused": {
			container: map[string]any{"name": "Not_A_Name", "image": "registry.example/guard:1"},
			want:      "the companions' Deployment was refused",
		},
	}
	for name, tc := range cases {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": holdfastv1alpha1.GroupVersion.String(), "kind": "NodeCompanion",
			"metadata": map[string]any{"name": name, "namespace": e.Namespace},
			"spec": map[string]any{
				"daemonSet": map[string]any{"name": "storage"},
				"template":  map[string]any{"spec": map[string]any{"containers": []any{tc.container}}},
			},
		}}
		if err := e.c.Create(e.Ctx, obj); err != nil {
			t.Fatalf("%s: the API server refused what the CRD leaves to the operator: %v", name, err)
		}
	}
	for name, tc := range cases {
		nc := &holdfastv1alpha1.NodeCompanion{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.Namespace}}
		e.Eventually(settle, name+" reported invalid", func(ctx context.Context) (bool, error) {
			cur := &holdfastv1alpha1.NodeCompanion{}
			if err := e.c.Get(ctx, client.ObjectKeyFromObject(nc), cur); err != nil {
				return false, err
			}
			c := meta.FindStatusCondition(cur.Status.Conditions, holdfastv1alpha1.ConditionReady)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != holdfastv1alpha1.ReasonInvalidSpec || !strings.Contains(c.Message, tc.want) {
				return false, fmt.Errorf("condition Ready: %+v", c)
			}
			notes, err := e.events(ctx, nc, holdfastv1alpha1.ReasonInvalidSpec)
			if err != nil {
				return false, err
			}
			if len(notes) == 0 || !strings.Contains(notes[0], tc.want) {
				return false, fmt.Errorf("InvalidSpec Events: %q", notes)
			}
			return true, nil
		})
		deps := &appsv1.DeploymentList{}
		if err := e.c.List(e.Ctx, deps, client.InNamespace(e.Namespace), client.MatchingLabels{holdfastv1alpha1.CompanionLabel: name}); err != nil {
			t.Fatal(err)
		}
		if len(deps.Items) != 0 {
			t.Errorf("%s: %d Deployments made from an invalid template", name, len(deps.Items))
		}
	}
}
