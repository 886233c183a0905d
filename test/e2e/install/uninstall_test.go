//go:build e2e

package install_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/cli"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// holdfastMark is the prefix of every label, annotation and taint key holdfast writes,
// but Karpenter's do-not-disrupt, which Protect writes beside its own.
const holdfastMark = "holdfast.dev/"

// After policies have budgeted, surged, zone-labelled and protected, holdfast uninstall
// leaves no holdfast object, label, annotation or taint in the cluster. The operator runs
// in-process, standing in for the installed Deployment, whose pods kwok only simulates: it
// is stopped where uninstall's first step stops the Deployment, before the removals.
func TestUninstall(t *testing.T) {
	f := framework.New(t)
	if out, err := install(f); err != nil {
		t.Fatalf("holdfast install: %v\n%s", err, out)
	}
	c := f.HoldfastClient()
	stop := f.StartOperator()

	zoned := f.Sized("quorum", 3, "100m", nil)
	zonedPolicy := f.TierPolicy("quorum", holdfastv1alpha1.SingleReplicaSurge)
	zonedPolicy.Spec.ZoneAware = &holdfastv1alpha1.ZoneAwareSpec{MaxUnavailable: intstr.FromInt32(1)}
	for _, p := range []*holdfastv1alpha1.DisruptionPolicy{
		f.TierPolicy("single", holdfastv1alpha1.SingleReplicaSurge),
		f.TierPolicy("guarded", holdfastv1alpha1.SingleReplicaProtect),
		zonedPolicy,
	} {
		if err := c.Create(f.Ctx, p); err != nil {
			t.Fatalf("creating policy %s: %v", p.Name, err)
		}
	}
	surge := f.Sized("single", 1, "100m", nil)
	f.Create(surge)
	f.WaitReady(surge)
	pods, err := f.Pods(f.Ctx, framework.SelectorOf(surge))
	if err != nil || len(pods) != 1 {
		t.Fatalf("the single replica's pods: %v, %v", pods, err)
	}
	node := pods[0].Spec.NodeName
	// The protected replica runs on another node than the one drained, where Protect
	// keeps its mark.
	nodes, err := f.Clientset.CoreV1().Nodes().List(f.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := slices.IndexFunc(nodes.Items, func(n corev1.Node) bool { return n.Name != node })
	protect := f.Sized("guarded", 1, "100m", map[string]string{corev1.LabelHostname: nodes.Items[other].Labels[corev1.LabelHostname]})
	for _, d := range []*appsv1.Deployment{protect, zoned} {
		f.Create(d)
		f.WaitReady(d)
	}
	f.Cordon(node)
	f.Eventually(time.Minute, "the single replica surged beside its cordoned pod", func(ctx context.Context) (bool, error) {
		rs, err := f.SurgeSet(ctx, surge)
		return rs != nil && rs.Status.ReadyReplicas == 1, err
	})
	var guarded string
	f.Eventually(time.Minute, "Protect's do-not-disrupt on the guarded pod, quorum pods zone-labelled", func(ctx context.Context) (bool, error) {
		pods, err := f.Pods(ctx, framework.SelectorOf(protect))
		if err != nil || len(pods) != 1 || pods[0].Annotations[holdfastv1alpha1.DoNotDisruptByAnnotation] == "" {
			return false, err
		}
		guarded = pods[0].Name
		quorum, err := f.Pods(ctx, framework.SelectorOf(zoned))
		return err == nil && slices.ContainsFunc(quorum, func(p corev1.Pod) bool { return p.Labels[holdfastv1alpha1.ZoneLabel] != "" }), err
	})
	budgets, err := f.Clientset.PolicyV1().PodDisruptionBudgets(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: holdfastv1alpha1.PolicyLabel})
	if err != nil || len(budgets.Items) == 0 {
		t.Fatalf("the policies' budgets: %d, %v", len(budgets.Items), err)
	}
	stop()
	// What the operator leaves on a node that came back from a fencing, had it stopped
	// before removing it: the out-of-service taint its annotation vouches for, and the
	// lost node's taint.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"2026-01-01T00:00:00Z"}},"spec":{"taints":[{"key":%q,"effect":"NoExecute"},{"key":%q,"effect":"NoSchedule"}]}}`,
		holdfastv1alpha1.FencedAnnotation, holdfastv1alpha1.OutOfServiceTaintKey, holdfastv1alpha1.LostTaintKey)
	if _, err := f.Clientset.CoreV1().Nodes().Patch(f.Ctx, node, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	out, err := runCommand(f, cli.NewUninstallCommand, "--dry-run")
	if err != nil {
		t.Fatalf("holdfast uninstall --dry-run: %v\n%s", err, out)
	}
	t.Logf("holdfast uninstall --dry-run:\n%s", out)
	for _, want := range []string{
		"deployment holdfast-system/holdfast-operator deleted (dry run)",
		"replicaset " + f.Namespace + "/holdfast-surge-single deleted (dry run)",
		"pod " + f.Namespace + "/" + guarded + " cleared (dry run): " + holdfastv1alpha1.DoNotDisruptAnnotation + ", " + holdfastv1alpha1.DoNotDisruptByAnnotation,
		"node " + node + " cleared (dry run): " + holdfastv1alpha1.LostTaintKey + ", " + holdfastv1alpha1.OutOfServiceTaintKey + ", " + holdfastv1alpha1.FencedAnnotation,
		"customresourcedefinition disruptionpolicies.holdfast.dev deleted (dry run)",
	} {
		if !strings.Contains(out, want+"\n") && !strings.Contains(out, want+":") {
			t.Errorf("uninstall --dry-run does not say %q", want)
		}
	}
	if rs, err := f.SurgeSet(f.Ctx, surge); rs == nil || err != nil {
		t.Fatalf("after uninstall --dry-run the surge set is %v, %v; want it still there", rs, err)
	}

	out, err = runCommand(f, cli.NewUninstallCommand)
	t.Logf("holdfast uninstall:\n%s", out)
	if err != nil {
		t.Fatalf("holdfast uninstall: %v", err)
	}
	// Deletions the garbage collector and the namespace controller finish.
	var last string
	f.Eventually(2*time.Minute, "no holdfast object, label, annotation or taint left", func(ctx context.Context) (bool, error) {
		left, err := holdfastLeftovers(ctx, f)
		if now := strings.Join(left, "; "); now != last && now != "" {
			t.Logf("left: %s", now)
			last = now
		}
		return err == nil && len(left) == 0, err
	})
	if _, err := f.Clientset.AppsV1().Deployments(f.Namespace).Get(f.Ctx, surge.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the workloads are the user's and stay: %v", err)
	}
}

// holdfastLeftovers lists what of holdfast is in the cluster: its namespaces, CRDs and
// cluster RBAC, the objects of install's ApplySet, and every object, label, annotation or
// taint with holdfast's prefix on the kinds holdfast writes.
func holdfastLeftovers(ctx context.Context, f *framework.Framework) ([]string, error) {
	var left []string
	keys := func(what string, m map[string]string) {
		for k := range m {
			if strings.HasPrefix(k, holdfastMark) || strings.HasPrefix(k, "applyset.kubernetes.io/") {
				left = append(left, what+" "+k)
			}
		}
	}
	meta := func(kind string, m metav1.ObjectMeta) {
		what := kind + " " + m.Namespace + "/" + m.Name
		keys(what+" label", m.Labels)
		keys(what+" annotation", m.Annotations)
		if strings.HasPrefix(m.Name, "holdfast-") {
			left = append(left, what)
		}
	}
	// Other tests' namespaces hold their own charts and policies.
	others := map[string]bool{}
	namespaces, err := f.Clientset.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: "holdfast.dev/e2e"})
	if err != nil {
		return nil, err
	}
	for _, ns := range namespaces.Items {
		others[ns.Name] = ns.Name != f.Namespace
	}
	for _, ns := range []string{"holdfast-system", "holdfast-drain"} {
		if _, err := f.Clientset.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			left = append(left, "namespace "+ns)
		}
	}
	nodes, err := f.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, n := range nodes.Items {
		meta("node", n.ObjectMeta)
		for _, t := range n.Spec.Taints {
			if strings.HasPrefix(t.Key, holdfastMark) || t.Key == holdfastv1alpha1.OutOfServiceTaintKey {
				left = append(left, "node "+n.Name+" taint "+t.Key)
			}
		}
	}
	pods, err := f.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		if !others[p.Namespace] {
			meta("pod", p.ObjectMeta)
			if _, ok := p.Annotations[holdfastv1alpha1.DoNotDisruptAnnotation]; ok {
				left = append(left, "pod "+p.Namespace+"/"+p.Name+" annotation "+holdfastv1alpha1.DoNotDisruptAnnotation)
			}
		}
	}
	sets, err := f.Clientset.AppsV1().ReplicaSets(f.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, rs := range sets.Items {
		meta("replicaset", rs.ObjectMeta)
	}
	deployments, err := f.Clientset.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, d := range deployments.Items {
		if !others[d.Namespace] {
			meta("deployment", d.ObjectMeta)
		}
	}
	pdbs, err := f.Clientset.PolicyV1().PodDisruptionBudgets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, pdb := range pdbs.Items {
		if !others[pdb.Namespace] {
			meta("poddisruptionbudget", pdb.ObjectMeta)
		}
	}
	roles, err := f.Clientset.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{LabelSelector: "applyset.kubernetes.io/part-of"})
	if err != nil {
		return nil, err
	}
	for _, r := range roles.Items {
		left = append(left, "clusterrole "+r.Name)
	}
	for _, crd := range f.CRDs() {
		err := f.Client.Get(ctx, types.NamespacedName{Name: crd.GetName()}, crd.DeepCopy())
		if !apierrors.IsNotFound(err) {
			left = append(left, "customresourcedefinition "+crd.GetName())
		}
	}
	slices.Sort(left)
	return left, nil
}
