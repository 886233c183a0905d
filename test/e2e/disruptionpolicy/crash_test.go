//go:build e2e

package disruptionpolicy

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/disruptionpolicy"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// An operator killed right after it made a surge set, before its status tells of the
// surge, is restarted and finishes that surge with the same set: the drain goes
// through with no moment at zero Ready, the set is made once and removed once, and the
// Deployment and its autoscaler (bounds 1-1, as an HPA at 1/1 or KEDA would set) are
// never written. The process exits at a failpoint, as a kill would.
func TestOperatorKilledAfterSurgeWrite(t *testing.T) {
	e := setup(t)
	e.OperatorBinary() // built before anything is timed
	op := e.StartOperatorProcess(disruptionpolicy.FailpointEnv + "=" + disruptionpolicy.FailAfterSurge)
	e.policy("single", func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge })
	d := e.deployment("single", "single", 1)
	bounds := e.autoscaler("single")
	e.waitManagedBudget(deploy, "single", "present", func(*policyv1.PodDisruptionBudget) bool { return true })
	pod := e.onlyPod(d)
	sets := e.watchSurgeSet(d)
	ready := e.WatchReady(framework.SelectorOf(d), 200*time.Millisecond)
	e.Cordon(pod.Spec.NodeName)

	if code := op.WaitExit(settle); code != disruptionpolicy.FailpointExitCode {
		t.Fatalf("the operator exited with %d, not at its failpoint (%d)", code, disruptionpolicy.FailpointExitCode)
	}
	if got := e.extra(d); got != 1 {
		t.Fatalf("stopped with a surge set of %d, want 1: not right after the surge's write", got)
	}

	e.StartOperatorProcess()
	e.evictUntil(pod, settle)
	e.Eventually(settle, "the surge set gone, 1 replica Ready off the drained node", func(ctx context.Context) (bool, error) {
		pods, err := e.livePods(ctx, d)
		return e.surgeSet(d) == nil && len(pods) == 1 && framework.PodReady(&pods[0]) && pods[0].Spec.NodeName != pod.Spec.NodeName, err
	})
	samples, zero, _ := ready.Stop()
	made := sets.Stop()
	t.Logf("%d samples every 200ms, %d at zero Ready; surge sets made: %d", samples, zero, len(made))
	if zero != 0 {
		t.Errorf("%d samples (of %d) saw zero Ready pods", zero, samples)
	}
	if len(made) != 1 {
		t.Errorf("the surge set was made %d times, want 1: the restarted operator did not take up the surge it found", len(made))
	}
	if lo, hi := bounds(); lo != 1 || hi != 1 {
		t.Errorf("the autoscaler is at %d-%d, want 1-1 as its owner wrote it", lo, hi)
	}
	e.untouched(d)
}

// setWatch records the UID of every surge set of one Deployment that a watch sees made.
type setWatch struct {
	mu   sync.Mutex
	uids []types.UID
	stop context.CancelFunc
	done chan struct{}
}

func (e *env) watchSurgeSet(d *appsv1.Deployment) *setWatch {
	e.T.Helper()
	name := policy.SurgeSetName(d.Name)
	list := &appsv1.ReplicaSetList{}
	if err := e.c.List(e.Ctx, list, client.InNamespace(d.Namespace), client.MatchingFields{"metadata.name": name}); err != nil {
		e.T.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.Ctx)
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = "metadata.name=" + name
		return e.Clientset.AppsV1().ReplicaSets(d.Namespace).Watch(ctx, o)
	}}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, lw)
	if err != nil {
		cancel()
		e.T.Fatal(err)
	}
	w := &setWatch{stop: func() { cancel(); rw.Stop() }, done: make(chan struct{})}
	for _, rs := range list.Items {
		w.uids = append(w.uids, rs.UID)
	}
	go func() {
		defer close(w.done)
		for ev := range rw.ResultChan() {
			if rs, ok := ev.Object.(*appsv1.ReplicaSet); ok {
				w.mu.Lock()
				if !slices.Contains(w.uids, rs.UID) {
					w.uids = append(w.uids, rs.UID)
				}
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// Stop ends the watch and returns the UIDs of the sets seen.
func (w *setWatch) Stop() []types.UID {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.uids
}
