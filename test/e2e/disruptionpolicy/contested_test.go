//go:build e2e

package disruptionpolicy

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/contest"
)

// A GitOps tool that keeps rewriting a managed budget's maxUnavailable every 500 ms
// meets at most contest.Limit writes of holdfast's a minute, not a write loop, and is
// named in the policy's WritesContested condition and a Warning Event; once it stops,
// holdfast's value comes back and the condition clears.
func TestContestedBudgetIsWrittenAFewTimesAMinute(t *testing.T) {
	const writer = "argocd-controller"
	e := setup(t)
	e.StartOperator()
	p := e.policy("web", nil)
	e.deployment("web", "web", 3)
	e.waitManagedBudget(deploy, "web", "maxUnavailable 1", func(pdb *policyv1.PodDisruptionBudget) bool {
		return pdb.Spec.MaxUnavailable != nil && pdb.Spec.MaxUnavailable.IntValue() == 1
	})
	name := disruptionBudget("web")

	// holdfast's writes are the moves of maxUnavailable back from the writer's 2 to 1.
	list, err := e.Clientset.PolicyV1().PodDisruptionBudgets(e.Namespace).List(e.Ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	watchCtx, stopWatch := context.WithCancel(e.Ctx)
	defer stopWatch()
	w, err := e.Clientset.PolicyV1().PodDisruptionBudgets(e.Namespace).Watch(watchCtx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	var repairs []time.Time
	go func() {
		last := 1
		for ev := range w.ResultChan() {
			pdb, ok := ev.Object.(*policyv1.PodDisruptionBudget)
			if !ok || ev.Type != watch.Modified || pdb.Spec.MaxUnavailable == nil {
				continue
			}
			if v := pdb.Spec.MaxUnavailable.IntValue(); v != last {
				if v == 1 {
					mu.Lock()
					repairs = append(repairs, time.Now())
					mu.Unlock()
				}
				last = v
			}
		}
	}()

	// The other writer, with a field manager of its own.
	other := client.WithFieldOwner(e.c, writer)
	writerCtx, stopWriter := context.WithCancel(e.Ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			pdb := &policyv1.PodDisruptionBudget{}
			pdb.Namespace, pdb.Name = e.Namespace, name
			if err := other.Patch(writerCtx, pdb, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"maxUnavailable":2}}`))); err != nil && writerCtx.Err() == nil {
				t.Errorf("the other writer's patch: %v", err)
			}
			select {
			case <-writerCtx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	defer func() { stopWriter(); wg.Wait() }()

	var cond metav1.Condition
	e.Eventually(settle, "WritesContested naming "+writer, func(ctx context.Context) (bool, error) {
		cur := &holdfastv1alpha1.DisruptionPolicy{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, holdfastv1alpha1.ConditionWritesContested)
		ready := meta.FindStatusCondition(cur.Status.Conditions, holdfastv1alpha1.ConditionReady)
		if c == nil || ready == nil {
			return false, nil
		}
		cond = *c
		return c.Status == metav1.ConditionTrue && ready.Status == metav1.ConditionFalse, nil
	})
	if cond.Reason != holdfastv1alpha1.ReasonUndoneByOtherWriter || !strings.Contains(cond.Message, writer) || !strings.Contains(cond.Message, name) {
		t.Errorf("WritesContested = %s %q, want %s naming %s and budget %s", cond.Reason, cond.Message, holdfastv1alpha1.ReasonUndoneByOtherWriter, writer, name)
	}
	if note := e.waitEvent(p, "WriteContested"); !strings.Contains(note, writer) {
		t.Errorf("WriteContested Event %q does not name %s", note, writer)
	}

	// A whole minute of the loop.
	time.Sleep(time.Until(start.Add(contest.Window + 5*time.Second)))
	mu.Lock()
	seen := append([]time.Time(nil), repairs...)
	mu.Unlock()
	t.Logf("holdfast rewrote the budget %d times in %s of another writer's undoing it every 500 ms", len(seen), time.Since(start).Round(time.Second))
	if len(seen) == 0 {
		t.Error("holdfast never wrote its budget back")
	}
	for i := range seen {
		if j := i + contest.Limit; j < len(seen) && seen[j].Sub(seen[i]) < contest.Window {
			t.Errorf("holdfast wrote the budget %d times within %s: %v", contest.Limit+1, seen[j].Sub(seen[i]).Round(time.Millisecond), seen[i:j+1])
		}
	}

	// The writer stops: holdfast's value comes back and the contest clears.
	stopWriter()
	wg.Wait()
	e.waitManagedBudgetWithin(contest.Window+settle, deploy, "web", "maxUnavailable 1 again", func(pdb *policyv1.PodDisruptionBudget) bool {
		return pdb.Spec.MaxUnavailable != nil && pdb.Spec.MaxUnavailable.IntValue() == 1
	})
	e.Eventually(settle, "WritesContested False", func(ctx context.Context) (bool, error) {
		cur := &holdfastv1alpha1.DisruptionPolicy{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return false, err
		}
		return meta.IsStatusConditionFalse(cur.Status.Conditions, holdfastv1alpha1.ConditionWritesContested) &&
			meta.IsStatusConditionTrue(cur.Status.Conditions, holdfastv1alpha1.ConditionReady), nil
	})
}
