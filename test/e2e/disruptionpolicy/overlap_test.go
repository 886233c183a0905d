//go:build e2e

package disruptionpolicy

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// Issue 17 item 7: overlap is found on pods. A user's budget on one StatefulSet pod, a
// user's budget on pod-template-hash, and two selected Deployments whose selectors
// overlap each report Conflict, and no second budget is made over any pod.
func TestOverlapFoundOnPods(t *testing.T) {
	e := setup(t)
	const tier = "overlap"
	db := e.StatefulSet("db", 2)
	db.Labels["tier"] = tier
	db.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	e.Create(db)
	e.WaitReady(db)
	hashed := e.deployment("hashed", tier, 2)
	e.deployment("web", tier, 2)
	// canary's pods carry web's labels (app=web, and tier, which the helper adds to the
	// selector too) and more: web's budget would cover them.
	e.deployment("canary", tier, 2, func(d *appsv1.Deployment) {
		lbls := map[string]string{"app": "web", "tier": tier, "track": "canary"}
		d.Labels = map[string]string{"app": "canary", "tier": tier}
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: lbls}
		d.Spec.Template.Labels = lbls
	})

	pods, err := e.Pods(e.Ctx, framework.SelectorOf(hashed))
	if err != nil || len(pods) == 0 {
		t.Fatalf("pods of hashed: %v %v", pods, err)
	}
	byPod := e.PDB("db-0-by-hand", "db", 0)
	byPod.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"statefulset.kubernetes.io/pod-name": "db-0"}}
	e.Create(byPod)
	byHash := e.PDB("hashed-by-hand", "hashed", 1)
	byHash.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"pod-template-hash": pods[0].Labels["pod-template-hash"]}}
	e.Create(byHash)

	e.StartOperator()
	p := e.policy(tier, nil)
	for _, c := range []struct{ kind, name, other string }{
		{holdfastv1alpha1.KindStatefulSet, "db", "db-0-by-hand"},
		{deploy, "hashed", "hashed-by-hand"},
		{deploy, "web", policy.BudgetName(deploy, "canary")},
		{deploy, "canary", policy.BudgetName(deploy, "web")},
	} {
		st := e.waitState(p, c.kind, c.name, holdfastv1alpha1.WorkloadConflict)
		if !strings.Contains(st.Message, c.other) {
			t.Errorf("%s %s: conflict message %q does not name %s", c.kind, c.name, st.Message, c.other)
		}
	}
	list, err := e.Clientset.PolicyV1().PodDisruptionBudgets(e.Namespace).List(e.Ctx, metav1.ListOptions{LabelSelector: holdfastv1alpha1.PolicyLabel})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range list.Items {
		t.Errorf("holdfast made budget %s over pods another budget covers", b.Name)
	}
}

// Issue 17 item 4: a policy deleted while the operator is stopped leaves a surge and
// budgets. The surge set goes with the policy at once, by garbage collection, with no
// operator running; the operator, once started, deletes the budgets. The autoscaler
// and the Deployment are as their owners wrote them throughout.
func TestPolicyDeletedWhileOperatorDownIsSwept(t *testing.T) {
	e := setup(t)
	stop := e.StartOperator()
	p := e.policy("single", func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge })
	d := e.deployment("single", "single", 1)
	e.deployment("several", "single", 3)
	bounds := e.autoscaler("single")
	e.waitManagedBudget(deploy, "single", "present", func(*policyv1.PodDisruptionBudget) bool { return true })
	e.waitManagedBudget(deploy, "several", "present", func(*policyv1.PodDisruptionBudget) bool { return true })
	pod := e.onlyPod(d)
	e.Cordon(pod.Spec.NodeName)
	e.Eventually(settle, "the surge to start", func(context.Context) (bool, error) {
		return e.extra(d) == 1, nil
	})

	stop()
	if err := e.c.Delete(e.Ctx, p); err != nil {
		t.Fatal(err)
	}
	e.Eventually(settle, "the policy and its surge set gone", func(ctx context.Context) (bool, error) {
		err := e.c.Get(ctx, client.ObjectKeyFromObject(p), &holdfastv1alpha1.DisruptionPolicy{})
		return apierrors.IsNotFound(err) && e.surgeSet(d) == nil, client.IgnoreNotFound(err)
	})
	e.Uncordon(pod.Spec.NodeName)

	e.StartOperator()
	e.Eventually(settle, "the budgets gone", func(ctx context.Context) (bool, error) {
		single, err := e.budget(ctx, deploy, "single")
		if err != nil {
			return false, err
		}
		several, err := e.budget(ctx, deploy, "several")
		return single == nil && several == nil, err
	})
	if lo, hi := bounds(); lo != 1 || hi != 1 {
		t.Errorf("the autoscaler is at %d-%d, want 1-1 as its owner wrote it", lo, hi)
	}
	e.untouched(d)
}

// Issue 30 item 9: a Deployment deleted in the middle of a surge and made again (a
// selector change, a reinstall) is not surging: the surge set of the old one, which
// names it by UID, is removed and the new one is not surged. The operator is down
// meanwhile, so that it cannot act from a cache that still holds the old Deployment.
func TestSurgeSetOfRecreatedDeploymentRemoved(t *testing.T) {
	e := setup(t)
	stop := e.StartOperator()
	e.policy("single", func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge })
	d := e.deployment("single", "single", 1)
	e.waitManagedBudget(deploy, "single", "present", func(*policyv1.PodDisruptionBudget) bool { return true })
	pod := e.onlyPod(d)
	e.Cordon(pod.Spec.NodeName)
	e.Eventually(settle, "the surge to start", func(context.Context) (bool, error) {
		return e.extra(d) == 1, nil
	})
	old := e.surgeSet(d)

	stop()
	if err := e.c.Delete(e.Ctx, d, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	e.Eventually(settle, "the Deployment gone", func(ctx context.Context) (bool, error) {
		err := e.c.Get(ctx, client.ObjectKeyFromObject(d), &appsv1.Deployment{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	e.Uncordon(pod.Spec.NodeName)
	d = e.deployment("single", "single", 1)
	e.StartOperator()
	e.Eventually(settle, "the old Deployment's surge set removed", func(context.Context) (bool, error) {
		cur := e.surgeSet(d)
		return cur == nil || cur.UID != old.UID, nil
	})
	e.WaitReady(d)
	if got := e.extra(d); got > 0 {
		t.Errorf("the new Deployment, on an uncordoned node, has a surge set of %d", got)
	}
}

// userFieldOwner writes as someone other than the operator, which runs in the test's
// process and would otherwise share its field manager.
var userFieldOwner = client.FieldOwner("kubectl-annotate")

// Issue 30 item 11: a change of the policy rewrites its budgets without the keys others
// put on them.
func TestBudgetChangeKeepsOthersKeys(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	p := e.policy("web", nil)
	e.deployment("web", "web", 3)
	e.waitManagedBudget(deploy, "web", "maxUnavailable 1", func(b *policyv1.PodDisruptionBudget) bool {
		return b.Spec.MaxUnavailable != nil && b.Spec.MaxUnavailable.IntValue() == 1
	})
	theirs := []byte(`{"metadata":{"labels":{"team":"web"},"annotations":{"example.com/note":"keep"}}}`)
	b := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: disruptionBudget("web")}}
	if err := e.c.Patch(e.Ctx, b, client.RawPatch(types.MergePatchType, theirs), userFieldOwner); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Patch(e.Ctx, p, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"maxUnavailable":2}}`))); err != nil {
		t.Fatal(err)
	}
	e.waitManagedBudget(deploy, "web", "maxUnavailable 2", func(b *policyv1.PodDisruptionBudget) bool {
		return b.Spec.MaxUnavailable != nil && b.Spec.MaxUnavailable.IntValue() == 2
	})
	got, err := e.budget(e.Ctx, deploy, "web")
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["team"] != "web" || got.Annotations["example.com/note"] != "keep" {
		t.Errorf("the user's label and annotation were dropped: labels %v, annotations %v", got.Labels, got.Annotations)
	}
}
