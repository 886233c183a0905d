//go:build e2e

package disruptionpolicy

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// Issue point 5, pacing: a drain of two nodes evicts one pod, then waits until its
// replacement has been Ready for minReadySeconds before the second eviction, although
// the budget (maxUnavailable 1) would let it go as soon as the replacement is Ready.
// minReadySeconds comes from the policy, or from the Deployment when the policy has none.
func TestPacingWaitsForTheReplacement(t *testing.T) {
	const minReady = 8 * time.Second
	t.Run("policy's minReadySeconds", func(t *testing.T) {
		testPacing(t, minReady, func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.MinReadySeconds = ptr.To(int32(minReady.Seconds())) }, nil)
	})
	t.Run("Deployment's own minReadySeconds", func(t *testing.T) {
		testPacing(t, minReady, nil, func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = int32(minReady.Seconds()) })
	})
}

func testPacing(t *testing.T, minReady time.Duration, policyMod func(*holdfastv1alpha1.DisruptionPolicySpec), deploymentMod func(*appsv1.Deployment)) {
	e := setup(t)
	e.StartOperator()
	pd := e.startPacedDrain(policyMod, deploymentMod)
	pdb, err := e.budget(e.Ctx, deploy, "paced")
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(pd.readyAt) < minReady && (pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 0) {
		t.Errorf("budget %v while the replacement is Ready for %s, want maxUnavailable 0", pdb.Spec, time.Since(pd.readyAt))
	}

	e.evictUntil(pd.second, minReady+settle)
	after := time.Since(pd.readyAt)
	// readyAt is in whole seconds, truncated: it is never later than the true time, and
	// the gate opens at the end of its second plus minReadySeconds.
	t.Logf("second eviction accepted %s after the replacement's Ready time (minReadySeconds %s): %s after the gate opened",
		after.Round(time.Millisecond), minReady, (after - minReady - time.Second).Round(time.Millisecond))
	if after < minReady {
		t.Errorf("second eviction accepted %s after the replacement became Ready, before minReadySeconds %s", after, minReady)
	}
	e.waitEvent(pd.policy, "DisruptionPaced")
}

// An operator restarted while a replacement is being paced keeps the gate closed until
// minReadySeconds, although the workload's Ready count is whole again: the pacing mark
// on the budget tells it to read the pods.
func TestPacingSurvivesOperatorRestart(t *testing.T) {
	e := setup(t)
	stop := e.StartOperator()
	const minReady = 12 * time.Second
	pd := e.startPacedDrain(func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.MinReadySeconds = ptr.To(int32(minReady.Seconds())) }, nil)
	e.waitManagedBudget(deploy, "paced", "maxUnavailable 0 and the pacing mark", func(pdb *policyv1.PodDisruptionBudget) bool {
		return pdb.Spec.MaxUnavailable != nil && pdb.Spec.MaxUnavailable.IntValue() == 0 && pdb.Annotations[holdfastv1alpha1.PacingAnnotation] == "true"
	})
	stop()
	e.StartOperator()
	restarted := time.Since(pd.readyAt)
	e.waitManagedBudget(deploy, "paced", "maxUnavailable 1, the mark gone", func(pdb *policyv1.PodDisruptionBudget) bool {
		return pdb.Spec.MaxUnavailable != nil && pdb.Spec.MaxUnavailable.IntValue() == 1 && pdb.Annotations[holdfastv1alpha1.PacingAnnotation] == ""
	})
	opened := time.Since(pd.readyAt)
	t.Logf("operator restarted %s after the replacement's Ready time; gate opened at %s (minReadySeconds %s)", restarted.Round(time.Millisecond), opened.Round(time.Millisecond), minReady)
	if restarted >= minReady {
		t.Fatalf("the restart took until %s, past minReadySeconds: the test proves nothing", restarted)
	}
	if opened < minReady {
		t.Errorf("the restarted operator opened the gate %s after the replacement's Ready time, before minReadySeconds %s", opened, minReady)
	}
	e.evictUntil(pd.second, settle)
}

// pacedDrain is a drain of two nodes under a paced policy, after its first eviction.
type pacedDrain struct {
	policy *holdfastv1alpha1.DisruptionPolicy
	// second is the pod on the second cordoned node, not yet evicted.
	second *corev1.Pod
	// readyAt is when the first eviction's replacement became Ready.
	readyAt time.Time
}

// startPacedDrain creates a policy over three pods on three nodes, cordons two of them,
// evicts the first pod and waits until the policy paces its Ready replacement.
func (e *env) startPacedDrain(policyMod func(*holdfastv1alpha1.DisruptionPolicySpec), deploymentMod func(*appsv1.Deployment)) pacedDrain {
	e.T.Helper()
	p := e.policy("paced", policyMod)
	mods := []func(*appsv1.Deployment){framework.HostnameAntiAffinity}
	if deploymentMod != nil {
		mods = append(mods, deploymentMod)
	}
	d := e.deployment("paced", "paced", 3, mods...)
	// The pods just became Ready: pacing holds first, then the gate opens by the clock.
	e.waitState(p, deploy, "paced", holdfastv1alpha1.WorkloadBudgeted)
	e.WaitBudget(disruptionBudget("paced"), 1)
	pods, err := e.livePods(e.Ctx, d)
	if err != nil {
		e.T.Fatal(err)
	}
	first, second := &pods[0], &pods[1]
	e.Cordon(first.Spec.NodeName)
	e.Cordon(second.Spec.NodeName)

	e.evictUntil(first, settle)
	var replacement corev1.Pod
	var readyAt time.Time
	e.Eventually(settle, "the replacement of "+first.Name+" Ready", func(ctx context.Context) (bool, error) {
		live, err := e.livePods(ctx, d)
		if err != nil {
			return false, err
		}
		for _, pod := range live {
			if at, ok := readySince(&pod); ok && !slices.ContainsFunc(pods, func(old corev1.Pod) bool { return old.Name == pod.Name }) {
				replacement, readyAt = pod, at
				return true, nil
			}
		}
		return false, nil
	})
	st := e.waitState(p, deploy, "paced", holdfastv1alpha1.WorkloadPacing)
	if !strings.Contains(st.Message, replacement.Name) {
		e.T.Errorf("pacing message %q does not name the replacement %s", st.Message, replacement.Name)
	}
	return pacedDrain{policy: p, second: second, readyAt: readyAt}
}

// Issue point 5, health: a workload with a pod that is not Ready, not because of a
// drain or a rollout, is reported Degraded in status, an Event and the metric, and
// recovers when the pod does.
func TestDegradedWorkloadReported(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	p := e.policy("sick", nil)
	d := e.deployment("sick", "sick", 3)
	e.waitState(p, deploy, "sick", holdfastv1alpha1.WorkloadBudgeted)
	pods, err := e.livePods(e.Ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	sick := &pods[0]
	// Not Ready for a minute: past the grace that a starting pod gets.
	e.setReady(sick, false, time.Now().Add(-time.Minute))

	st := e.waitState(p, deploy, "sick", holdfastv1alpha1.WorkloadDegraded)
	for _, want := range []string{"2 of 3 Ready", sick.Name, sick.Spec.NodeName} {
		if !strings.Contains(st.Message, want) {
			t.Errorf("Degraded message %q does not say %q", st.Message, want)
		}
	}
	note := e.waitEvent(p, "WorkloadDegraded")
	if !strings.Contains(note, sick.Name) {
		t.Errorf("WorkloadDegraded Event %q does not name the pod", note)
	}
	e.Eventually(settle, "the Degraded condition and metric", func(ctx context.Context) (bool, error) {
		cur := &holdfastv1alpha1.DisruptionPolicy{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return false, err
		}
		c := findCondition(cur.Status.Conditions, holdfastv1alpha1.ConditionDegraded)
		v, _ := e.gauge(p, "degraded")
		return c != nil && c.Status == metav1.ConditionTrue && cur.Status.Degraded == 1 && v == 1, nil
	})
	// The budget stays the policy's: the not-Ready pod already uses the one disruption.
	e.WaitBudget(disruptionBudget("sick"), 0)

	e.setReady(sick, true, time.Now())
	e.waitState(p, deploy, "sick", holdfastv1alpha1.WorkloadBudgeted)
	e.Eventually(settle, "the metric back to 0", func(context.Context) (bool, error) {
		v, ok := e.gauge(p, "degraded")
		return ok && v == 0, nil
	})
	e.WaitBudget(disruptionBudget("sick"), 1)
}

// Issue point 3's last line: a Deployment of several replicas whose budget is at zero
// (one pod not Ready) while a drain waits on another is surged (create before evict):
// the drain goes through, Ready pods never fall below the budget's floor, and the
// Deployment ends at its original size. Without the surge the eviction waits until
// the sick pod heals, here never.
func TestSurgeWhenBlockedDrainsSeveralReplicas(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	p := e.policy("blocked", func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.Surge = holdfastv1alpha1.SurgeWhenBlocked })
	d := e.deployment("blocked", "blocked", 3, framework.HostnameAntiAffinity)
	e.WaitBudget(disruptionBudget("blocked"), 1)
	pods, err := e.livePods(e.Ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	victim, sick := &pods[0], &pods[1]
	e.setReady(sick, false, time.Now().Add(-time.Minute))
	e.WaitBudget(disruptionBudget("blocked"), 0)
	e.waitState(p, deploy, "blocked", holdfastv1alpha1.WorkloadDegraded)

	watch := e.WatchReady(framework.SelectorOf(d), 200*time.Millisecond)
	e.Cordon(victim.Spec.NodeName)
	if err := e.Evict(e.Ctx, victim); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("eviction at a budget of zero: %v, want refused", err)
	}
	e.Eventually(settle, "the surge set of 1 extra pod beside the 3", func(context.Context) (bool, error) {
		return e.extra(d) == 1, nil
	})
	e.waitManagedBudget(deploy, "blocked", "held at the original floor, minAvailable 2", func(pdb *policyv1.PodDisruptionBudget) bool {
		return pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.IntValue() == 2
	})
	waited := e.evictUntil(victim, settle)
	e.Eventually(settle, "the surge set gone, 3 pods, none on the drained node", func(ctx context.Context) (bool, error) {
		live, err := e.livePods(ctx, d)
		return e.surgeSet(d) == nil && len(live) == 3 &&
			!slices.ContainsFunc(live, func(p corev1.Pod) bool { return p.Spec.NodeName == victim.Spec.NodeName }), err
	})
	samples, _, lowest := watch.Stop()
	t.Logf("eviction accepted after %s; %d samples every 200ms, lowest %d Ready", waited.Round(time.Millisecond), samples, lowest)
	if lowest < 2 {
		t.Errorf("Ready pods fell to %d, below the budget's floor of 2", lowest)
	}
	e.waitEvent(p, "SurgeStarted")
	e.waitEvent(p, "SurgeFinished")
	e.waitManagedBudget(deploy, "blocked", "the policy's maxUnavailable 1 again", func(pdb *policyv1.PodDisruptionBudget) bool {
		return pdb.Spec.MaxUnavailable != nil && pdb.Spec.MaxUnavailable.IntValue() == 1
	})
	e.untouched(d)
}
