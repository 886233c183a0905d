//go:build e2e

package disruptionpolicy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

const deploy = holdfastv1alpha1.KindDeployment

// An upgrade loop drains every node at once, so every workload needs a budget: budgets
// appear for every selected workload without anyone writing one, follow scaling, and go
// with the workload.
func TestDefaultBudgetsFollowScaling(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	p := e.policy("web", nil)
	d := e.deployment("web", "web", 3)
	other := e.Deployment("batch", 3) // not selected
	e.Create(other)

	e.waitManagedBudget(deploy, "web", "maxUnavailable 1, owned by the Deployment", func(pdb *policyv1.PodDisruptionBudget) bool {
		return pdb.Spec.MaxUnavailable != nil && pdb.Spec.MaxUnavailable.IntValue() == 1 &&
			len(pdb.OwnerReferences) == 1 && pdb.OwnerReferences[0].UID == e.getDeployment(d).UID &&
			pdb.Labels[holdfastv1alpha1.PolicyLabel] == "web"
	})
	e.WaitBudget(disruptionBudget("web"), 1)
	e.waitState(p, deploy, "web", holdfastv1alpha1.WorkloadBudgeted)
	if pdb, err := e.budget(e.Ctx, deploy, "batch"); err != nil || pdb != nil {
		t.Fatalf("unselected Deployment got a budget (%v) or error %v", pdb, err)
	}

	// Scaling: the disruption controller follows maxUnavailable through the scale, so the
	// budget is right whether or not the operator is running.
	e.Scale(d, 5)
	e.waitManagedBudget(deploy, "web", "5 expected pods", func(pdb *policyv1.PodDisruptionBudget) bool {
		return pdb.Status.ExpectedPods == 5 && pdb.Status.DisruptionsAllowed == 1
	})

	// Down to one replica under Skip: the budget goes (it would block every drain) and
	// status says why; back up, it returns.
	e.Scale(d, 1)
	e.waitManagedBudget(deploy, "web", "gone", nil)
	st := e.waitState(p, deploy, "web", holdfastv1alpha1.WorkloadSkipped)
	if !strings.Contains(st.Message, "single replica") {
		t.Errorf("status message %q does not say why", st.Message)
	}
	e.waitEvent(p, "SingleReplicaUnbudgeted")

	// The latency from a replica change to holdfast's budget change, both directions.
	var created, removed []time.Duration
	for range 20 {
		created = append(created, e.timeToBudget(d, 2, added))
		removed = append(removed, e.timeToBudget(d, 1, deleted))
	}
	t.Logf("replica change 1->2 to budget created by holdfast: %s", distribution(created))
	t.Logf("replica change 2->1 to budget deleted by holdfast: %s", distribution(removed))

	// Above one replica the budget's spec does not change with the size: the disruption
	// controller follows the scale itself. Time until the budget's status expects the new
	// size, with holdfast out of the path.
	e.Scale(d, 3)
	e.WaitBudget(disruptionBudget("web"), 1)
	var followed []time.Duration
	for i := range 20 {
		followed = append(followed, e.timeToBudget(d, int32(4-i%2), expecting(int32(4-i%2))))
	}
	t.Logf("replica change 3<->4 to budget status expecting the new size: %s", distribution(followed))

	// The budget goes with its workload (garbage collection through the owner reference).
	e.Scale(d, 3)
	e.waitManagedBudget(deploy, "web", "back", func(*policyv1.PodDisruptionBudget) bool { return true })
	if err := e.c.Delete(e.Ctx, d); err != nil {
		t.Fatal(err)
	}
	e.waitManagedBudget(deploy, "web", "garbage-collected", nil)
}

func disruptionBudget(name string) string { return "holdfast-deploy-" + name }

// distribution renders latencies as min, p50, p90, p99 and max (the sample is small, so
// p99 is the second largest at best).
func distribution(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return fmt.Sprintf("n=%d min=%s p50=%s p90=%s p99=%s max=%s", len(s),
		s[0].Round(time.Millisecond), at(0.5).Round(time.Millisecond), at(0.9).Round(time.Millisecond),
		at(0.99).Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
}

// Two budgets over one pod make every eviction fail with 500: a user's own budget is
// left alone, the conflict reported, and holdfast's budget comes once it is gone.
func TestUserBudgetLeftAloneAndConflictReported(t *testing.T) {
	e := setup(t)
	user := e.PDB("api-by-hand", "api", 2)
	user.Spec.MaxUnavailable = nil
	user.Spec.MinAvailable = ptr.To(intstr.FromString("50%"))
	e.Create(user)
	e.deployment("api", "api", 3)
	e.StartOperator()
	p := e.policy("api", nil)

	st := e.waitState(p, deploy, "api", holdfastv1alpha1.WorkloadConflict)
	if !strings.Contains(st.Message, "api-by-hand") {
		t.Errorf("conflict message %q does not name the user's budget", st.Message)
	}
	e.waitEvent(p, "BudgetConflict")
	cur := &holdfastv1alpha1.DisruptionPolicy{}
	if err := e.c.Get(e.Ctx, client.ObjectKeyFromObject(p), cur); err != nil {
		t.Fatal(err)
	}
	if c := findCondition(cur.Status.Conditions, holdfastv1alpha1.ConditionConflicted); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Conflicted condition = %+v, want True", c)
	}
	out := e.kubectl("get", "disruptionpolicies")
	t.Logf("kubectl get disruptionpolicies:\n%s", out)
	if !strings.Contains(out, "CONFLICTING") {
		t.Errorf("kubectl get shows no printer columns:\n%s", out)
	}
	if pdb, err := e.budget(e.Ctx, deploy, "api"); err != nil || pdb != nil {
		t.Fatalf("holdfast created a second budget over the same pods: %v %v", pdb, err)
	}
	got, err := e.Clientset.PolicyV1().PodDisruptionBudgets(e.Namespace).Get(e.Ctx, "api-by-hand", metav1.GetOptions{})
	if err != nil || got.Spec.MinAvailable.String() != "50%" || len(got.Labels) != 0 || len(got.OwnerReferences) != 0 {
		t.Errorf("the user's budget was touched: %+v, %v", got, err)
	}

	if err := e.Clientset.PolicyV1().PodDisruptionBudgets(e.Namespace).Delete(e.Ctx, "api-by-hand", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitManagedBudget(deploy, "api", "created once the user's budget is gone", func(*policyv1.PodDisruptionBudget) bool { return true })
	e.waitState(p, deploy, "api", holdfastv1alpha1.WorkloadBudgeted)
	t.Logf("kubectl get disruptionpolicies,pdb -o wide:\n%s", e.kubectl("get", "disruptionpolicies,pdb", "-o", "wide"))
}

// The disruption controller cannot compute a percentage or maxUnavailable over a
// DaemonSet's pods, so a DaemonSet's budget is the integer minAvailable it accepts,
// recomputed as the node count changes.
func TestDaemonSetBudgetFollowsNodeCount(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	p := e.policy("agents", nil)
	labels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: e.Namespace, Labels: map[string]string{"tier": "agents"}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "registry.example/agent:1"}}},
			},
		},
	}
	e.Create(ds)
	nodes := int32(len(e.Nodes))
	minAvailable := func(n int32) func(*policyv1.PodDisruptionBudget) bool {
		return func(pdb *policyv1.PodDisruptionBudget) bool {
			return pdb.Spec.MaxUnavailable == nil && pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.Int && pdb.Spec.MinAvailable.IntVal == n
		}
	}
	e.waitManagedBudget(holdfastv1alpha1.KindDaemonSet, "agent", fmt.Sprintf("minAvailable %d", nodes-1), minAvailable(nodes-1))
	e.WaitBudget("holdfast-ds-agent", 1)

	e.AddNode("dp-extra", "zone-a", nil)
	e.waitManagedBudget(holdfastv1alpha1.KindDaemonSet, "agent", fmt.Sprintf("minAvailable %d", nodes), minAvailable(nodes))
	e.WaitBudget("holdfast-ds-agent", 1)

	e.DeleteNode("dp-extra")
	// The DaemonSet controller does not watch node deletions: desiredNumberScheduled
	// drops only once the pod GC has deleted the orphaned pod (a 40 s quarantine, looked
	// at every 20 s), which alone can take the whole of settle.
	e.waitManagedBudgetWithin(2*settle, holdfastv1alpha1.KindDaemonSet, "agent", fmt.Sprintf("minAvailable %d again", nodes-1), minAvailable(nodes-1))
	e.waitState(p, holdfastv1alpha1.KindDaemonSet, "agent", holdfastv1alpha1.WorkloadBudgeted)
}

// A budget over a single replica never allows an eviction, so every drain of its node
// blocks. Under Surge the single replica is drained with no time at zero Ready pods, and
// ends at its original size.
func TestSurgeDrainsSingleReplicaWithoutDowntime(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	p := e.policy("single", func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge })
	d := e.deployment("single", "single", 1)
	e.waitManagedBudget(deploy, "single", "minAvailable 1", func(pdb *policyv1.PodDisruptionBudget) bool {
		return pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.IntValue() == 1
	})
	e.WaitBudget(disruptionBudget("single"), 0)
	pod := e.onlyPod(d)

	watch := e.WatchReady(framework.SelectorOf(d), 200*time.Millisecond)
	e.Cordon(pod.Spec.NodeName)
	waited := e.evictUntil(pod, settle)
	e.waitState(p, deploy, "single", holdfastv1alpha1.WorkloadBudgeted)
	e.Eventually(settle, "the surge set gone, 1 replica Ready, not on the drained node", func(ctx context.Context) (bool, error) {
		if e.surgeSet(d) != nil {
			return false, nil
		}
		pods, err := e.Pods(ctx, framework.SelectorOf(d))
		if err != nil {
			return false, err
		}
		return len(pods) == 1 && framework.PodReady(&pods[0]) && pods[0].Spec.NodeName != pod.Spec.NodeName, nil
	})
	samples, zero, lowest := watch.Stop()
	t.Logf("eviction accepted after %s; %d samples every 200ms, %d at zero Ready, lowest %d", waited.Round(time.Millisecond), samples, zero, lowest)
	if zero != 0 {
		t.Errorf("%d samples (of %d) saw zero Ready pods", zero, samples)
	}
	e.waitEvent(p, "SurgeStarted")
	e.waitEvent(p, "SurgeFinished")
	e.untouched(d)
}

// An operator stopped in the middle of a surge finds its surge set on restart and
// removes it.
func TestOperatorKilledMidSurgeRecovers(t *testing.T) {
	e := setup(t)
	stop := e.StartOperator()
	e.policy("single", func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge })
	d := e.deployment("single", "single", 1)
	e.waitManagedBudget(deploy, "single", "present", func(*policyv1.PodDisruptionBudget) bool { return true })
	pod := e.onlyPod(d)

	e.Cordon(pod.Spec.NodeName)
	e.Eventually(settle, "the surge set of 1 extra pod", func(context.Context) (bool, error) {
		return e.extra(d) == 1, nil
	})
	stop()
	// With the operator down, the drain goes on: the budget lets the eviction through
	// once the extra pod is Ready.
	e.evictUntil(pod, settle)
	e.WaitReady(d)
	if got := e.extra(d); got != 1 {
		t.Fatalf("the surge set asks for %d pods with the operator down, want 1 (nothing should remove it yet)", got)
	}

	e.StartOperator()
	e.Eventually(settle, "the surge set gone", func(context.Context) (bool, error) {
		return e.surgeSet(d) == nil, nil
	})
	e.WaitReady(d)
	e.untouched(d)
}

// Protect blocks the drain of a single replica's node, then lets it through after
// escapeAfter and says so.
func TestProtectBlocksThenEscapes(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	const escapeAfter = 8 * time.Second
	p := e.policy("db", func(s *holdfastv1alpha1.DisruptionPolicySpec) {
		s.SingleReplica = holdfastv1alpha1.SingleReplicaProtect
		s.EscapeAfter = &metav1.Duration{Duration: escapeAfter}
	})
	d := e.deployment("db", "db", 1)
	e.waitManagedBudget(deploy, "db", "minAvailable 1", func(pdb *policyv1.PodDisruptionBudget) bool {
		return pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.IntValue() == 1
	})
	e.WaitBudget(disruptionBudget("db"), 0)
	e.Eventually(settle, "do-not-disrupt on the pod", func(ctx context.Context) (bool, error) {
		return e.onlyPod(d).Annotations[holdfastv1alpha1.DoNotDisruptAnnotation] == "true", nil
	})
	if _, ok := e.getDeployment(d).Spec.Template.Annotations[holdfastv1alpha1.DoNotDisruptAnnotation]; ok {
		t.Error("the annotation was put on the template, which rolls the pod")
	}
	pod := e.onlyPod(d)
	// The budget at zero holds no drain back until its pod's node is drained: the alert
	// HoldfastBudgetBlocksCordonedNode reads this series, not the budget.
	blocked := map[string]string{"namespace": p.Namespace, "policy": p.Name, "budget": disruptionBudget("db"), "kind": deploy, "workload": "db", "node": pod.Spec.NodeName}
	if _, ok := e.metric("holdfast_disruptionpolicy_drain_blocked_pods", blocked); ok {
		t.Error("a drain blocked before any node is cordoned")
	}

	e.Cordon(pod.Spec.NodeName)
	start := time.Now()
	if err := e.Evict(e.Ctx, pod); err == nil {
		t.Fatal("the eviction of a protected single replica was accepted at once")
	}
	// The series lasts escapeAfter from when the operator sees the drain, however late
	// that is on a busy machine.
	e.Eventually(settle, "the cordoned node's drain blocked in the metrics", func(ctx context.Context) (bool, error) {
		v, ok := e.metric("holdfast_disruptionpolicy_drain_blocked_pods", blocked)
		return ok && v == 1, nil
	})
	e.waitManagedBudget(deploy, "db", "blocked-since recorded", func(pdb *policyv1.PodDisruptionBudget) bool {
		return pdb.Annotations[holdfastv1alpha1.BlockedSinceAnnotation] != ""
	})
	pdb, err := e.budget(e.Ctx, deploy, "db")
	if err != nil {
		t.Fatal(err)
	}
	since, err := time.Parse(time.RFC3339Nano, pdb.Annotations[holdfastv1alpha1.BlockedSinceAnnotation])
	if err != nil {
		t.Fatal(err)
	}
	waited := e.evictUntil(pod, escapeAfter+settle)
	t.Logf("drain seen %s after the cordon; eviction accepted %s after the cordon (escapeAfter %s)", since.Sub(start).Round(time.Millisecond), time.Since(start).Round(time.Millisecond), escapeAfter)
	if waited < escapeAfter-2*time.Second {
		t.Errorf("eviction accepted after %s, before escapeAfter %s", waited, escapeAfter)
	}
	note := e.waitEvent(p, "DrainEscaped")
	if !strings.Contains(note, pod.Spec.NodeName) {
		t.Errorf("DrainEscaped %q does not name the node", note)
	}
	// The replacement, on a node nobody drains, is protected again.
	e.waitManagedBudget(deploy, "db", "minAvailable 1 again, not blocked", func(pdb *policyv1.PodDisruptionBudget) bool {
		return pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.IntValue() == 1 && pdb.Annotations[holdfastv1alpha1.BlockedSinceAnnotation] == ""
	})
	e.waitState(p, deploy, "db", holdfastv1alpha1.WorkloadProtected)
}

// Issue 30 item 7: Protect's do-not-disrupt goes whenever its workload is no longer
// Protected (scaled to two, the policy switched to Skip, the policy deleted), or
// Karpenter would never consolidate or drift its node again; a user's own stays.
func TestProtectAnnotationGoesWithProtect(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	protect := func(s *holdfastv1alpha1.DisruptionPolicySpec) {
		s.SingleReplica = holdfastv1alpha1.SingleReplicaProtect
	}
	p := e.policy("db", protect)
	d := e.deployment("db", "db", 1)
	mine := e.deployment("mine", "db", 1, func(d *appsv1.Deployment) {
		d.Spec.Template.Annotations = map[string]string{holdfastv1alpha1.DoNotDisruptAnnotation: "true"}
	})
	annotated := func(want bool, what string) {
		t.Helper()
		e.Eventually(settle, what, func(ctx context.Context) (bool, error) {
			pods, err := e.livePods(ctx, d)
			ok := len(pods) > 0
			for _, pod := range pods {
				ok = ok && (pod.Annotations[holdfastv1alpha1.DoNotDisruptAnnotation] == "true") == want
			}
			return ok, err
		})
	}
	annotated(true, "do-not-disrupt on the single pod")
	if by := e.onlyPod(d).Annotations[holdfastv1alpha1.DoNotDisruptByAnnotation]; by != p.Name {
		t.Errorf("do-not-disrupt marked %q, want the policy's name %q", by, p.Name)
	}

	e.Scale(d, 2)
	annotated(false, "do-not-disrupt off both pods of the workload scaled to two")
	e.Scale(d, 1)
	annotated(true, "do-not-disrupt back on the single pod")

	if err := e.c.Patch(e.Ctx, p, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"singleReplica":"Skip"}}`))); err != nil {
		t.Fatal(err)
	}
	annotated(false, "do-not-disrupt off once the policy skips single replicas")
	if err := e.c.Patch(e.Ctx, p, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"singleReplica":"Protect"}}`))); err != nil {
		t.Fatal(err)
	}
	annotated(true, "do-not-disrupt back under Protect")

	if err := e.c.Delete(e.Ctx, p); err != nil {
		t.Fatal(err)
	}
	annotated(false, "do-not-disrupt off once the policy is deleted")
	if e.onlyPod(mine).Annotations[holdfastv1alpha1.DoNotDisruptAnnotation] != "true" {
		t.Error("the do-not-disrupt of the user's own template was removed")
	}
}

// The control for the Surge test: the same drain of a single replica without a surge
// (singleReplica: Skip) leaves no Ready pod while the replacement starts, and the
// 200 ms watcher sees it. Without this, zero samples at zero Ready would prove nothing.
func TestWatcherSeesDowntimeWithoutSurge(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	p := e.policy("single", nil)
	d := e.deployment("single", "single", 1)
	e.waitState(p, deploy, "single", holdfastv1alpha1.WorkloadSkipped)
	pod := e.onlyPod(d)

	watch := e.WatchReady(framework.SelectorOf(d), 200*time.Millisecond)
	e.Cordon(pod.Spec.NodeName)
	e.evictUntil(pod, settle)
	e.Eventually(settle, "the replacement Ready", func(ctx context.Context) (bool, error) {
		pods, err := e.Pods(ctx, framework.SelectorOf(d))
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Name != pod.Name && framework.PodReady(&p) }), nil
	})
	samples, zero, _ := watch.Stop()
	t.Logf("%d samples every 200ms, %d at zero Ready", samples, zero)
	if zero == 0 {
		t.Errorf("the watcher saw no time at zero Ready in a drain without surge (%d samples)", samples)
	}
}

func findCondition(cs []metav1.Condition, typ string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}

// Maintenance windows: outside every window the budget allows nothing, so a drain is
// refused; when the window opens, by the clock alone, the same drain goes.
func TestWindowClosedBlocksOpenAllows(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	// The workload first: its pods take seconds to start, which must not eat into the
	// time the window is seen closed.
	d := e.deployment("maint", "maint", 3)
	// A window that opens at the start of the next whole minute (the one after, when
	// that leaves too little time, on a busy machine, to see it closed first) and stays
	// open for two.
	opens := time.Now().UTC().Truncate(time.Minute).Add(time.Minute)
	if time.Until(opens) < 20*time.Second {
		opens = opens.Add(time.Minute)
	}
	p := e.policy("maint", func(s *holdfastv1alpha1.DisruptionPolicySpec) {
		s.MaintenanceWindows = []holdfastv1alpha1.MaintenanceWindow{{
			Schedule: fmt.Sprintf("%d %d * * *", opens.Minute(), opens.Hour()),
			Duration: metav1.Duration{Duration: 2 * time.Minute},
		}}
	})
	e.waitManagedBudget(deploy, "maint", "maxUnavailable 0 while closed", func(pdb *policyv1.PodDisruptionBudget) bool {
		return pdb.Spec.MaxUnavailable != nil && pdb.Spec.MaxUnavailable.IntValue() == 0
	})
	e.WaitBudget(disruptionBudget("maint"), 0)
	cur := &holdfastv1alpha1.DisruptionPolicy{}
	policyLabels := map[string]string{"namespace": p.Namespace, "policy": p.Name}
	budgetLabels := map[string]string{"namespace": p.Namespace, "policy": p.Name, "budget": disruptionBudget("maint"), "kind": deploy, "workload": "maint"}
	e.Eventually(settle, "status and metrics to say the workload is blocked and the window closed", func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return false, err
		}
		blocked, _ := e.gauge(p, "blocked")
		open, openSet := e.metric("holdfast_disruptionpolicy_window_open", policyLabels)
		allowed, allowedSet := e.metric("holdfast_disruptionpolicy_budget_disruptions_allowed", budgetLabels)
		return cur.Status.Blocked == 1 && len(cur.Status.Workloads) == 1 && cur.Status.Workloads[0].Blocked &&
			blocked == 1 && openSet && open == 0 && allowedSet && allowed == 0, nil
	})
	// Read from the status the wait saw: the operator writes a policy's status after its
	// budgets, so the closed budget alone does not mean the status is there yet.
	if c := findCondition(cur.Status.Conditions, holdfastv1alpha1.ConditionWindowOpen); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("WindowOpen = %+v, want False", c)
	}
	if w := cur.Status.Window; w == nil || w.Open || w.NextOpening == nil || !w.NextOpening.Time.Equal(opens) {
		t.Errorf("status.window = %+v, want closed until %s", w, opens)
	}
	pods, err := e.Pods(e.Ctx, framework.SelectorOf(d))
	if err != nil || len(pods) == 0 {
		t.Fatalf("pods: %v %v", pods, err)
	}
	victim := &pods[0]
	t.Logf("the window seen closed %s before it opens", time.Until(opens).Round(time.Millisecond))
	if err := e.Evict(e.Ctx, victim); err == nil {
		t.Fatal("eviction accepted outside every maintenance window")
	}

	// No edit: the window opens on time and the drain proceeds.
	waited := e.evictUntil(victim, time.Until(opens)+settle)
	t.Logf("eviction accepted %s after the window opened", time.Since(opens).Round(time.Millisecond))
	if time.Now().Before(opens) {
		t.Errorf("eviction accepted before the window opened (after %s)", waited)
	}
	e.Eventually(settle, "the window open and nothing blocked in status and metrics", func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return false, err
		}
		blocked, _ := e.gauge(p, "blocked")
		open, _ := e.metric("holdfast_disruptionpolicy_window_open", policyLabels)
		return cur.Status.Blocked == 0 && blocked == 0 && open == 1, nil
	})
}

// A surge whose policy is deleted mid-way ends at once: its surge set goes with the
// policy.
func TestPolicyDeletedMidSurgeEndsIt(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	p := e.policy("single", func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge })
	d := e.deployment("single", "single", 1)
	e.waitManagedBudget(deploy, "single", "present", func(*policyv1.PodDisruptionBudget) bool { return true })
	e.Cordon(e.onlyPod(d).Spec.NodeName)
	e.Eventually(settle, "the surge to start", func(context.Context) (bool, error) {
		return e.extra(d) == 1, nil
	})
	if err := e.c.Delete(e.Ctx, p); err != nil {
		t.Fatal(err)
	}
	e.Eventually(settle, "the surge set and the budget gone", func(ctx context.Context) (bool, error) {
		pdb, err := e.budget(ctx, deploy, "single")
		return e.surgeSet(d) == nil && pdb == nil, err
	})
	e.untouched(d)
}

// A surge under an autoscaler of bounds 1-1 (as an HPA at 1/1 or a KEDA ScaledObject
// would set): the extra pod stands beside the Deployment, so neither the autoscaler
// nor the Deployment is written, and the autoscaler has nothing to scale back.
func TestSurgeLeavesAutoscalerAlone(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	p := e.policy("single", func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge })
	d := e.deployment("single", "single", 1)
	bounds := e.autoscaler("single")
	e.waitManagedBudget(deploy, "single", "present", func(*policyv1.PodDisruptionBudget) bool { return true })
	pod := e.onlyPod(d)

	watch := e.WatchReady(framework.SelectorOf(d), 200*time.Millisecond)
	e.Cordon(pod.Spec.NodeName)
	e.Eventually(settle, "the surge set of 1 extra pod", func(context.Context) (bool, error) {
		return e.extra(d) == 1, nil
	})
	if lo, hi := bounds(); lo != 1 || hi != 1 {
		t.Errorf("the autoscaler is at %d-%d during the surge, want 1-1 as its owner wrote it", lo, hi)
	}
	e.evictUntil(pod, settle)
	e.Eventually(settle, "the surge set gone, 1 replica Ready elsewhere", func(ctx context.Context) (bool, error) {
		pods, err := e.Pods(ctx, framework.SelectorOf(d))
		return e.surgeSet(d) == nil && len(pods) == 1 && framework.PodReady(&pods[0]) && pods[0].Spec.NodeName != pod.Spec.NodeName, err
	})
	samples, zero, _ := watch.Stop()
	t.Logf("%d samples every 200ms, %d at zero Ready", samples, zero)
	if zero != 0 {
		t.Errorf("%d samples (of %d) saw zero Ready pods", zero, samples)
	}
	if lo, hi := bounds(); lo != 1 || hi != 1 {
		t.Errorf("the autoscaler is at %d-%d after the surge, want 1-1", lo, hi)
	}
	e.untouched(d)
	e.waitState(p, deploy, "single", holdfastv1alpha1.WorkloadBudgeted)
}
