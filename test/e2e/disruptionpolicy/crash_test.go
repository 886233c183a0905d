//go:build e2e

package disruptionpolicy

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/disruptionpolicy"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// Issue 17: an operator killed between the two writes of a surge (the Deployment marked
// and scaled up, its autoscaler not raised yet) is restarted, raises the autoscaler and
// finishes the surge, rather than letting the autoscaler scale it back and taking that
// for someone else's change. The process exits at a failpoint right after the first
// write. Whether the autoscaler scales the surge back before the restart depends on
// where its 15 s sync period stands, so both orders are run: a restart at once, and one
// once the autoscaler has scaled the surge back (the surge is then resumed).
func TestOperatorKilledBetweenSurgeWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		// autoscalerFirst waits for the autoscaler to scale the surge back before the
		// restart.
		autoscalerFirst bool
	}{
		{name: "restarted at once"},
		{name: "restarted after the autoscaler scaled the surge back", autoscalerFirst: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t)
			c := e.surgeUnderAutoscaler(disruptionpolicy.FailSurgeAfterDeployment)
			c.waitFailpoint()
			if lo, hi, original := c.bounds(); c.marked() != "1" || lo != 1 || hi != 1 || original != "" {
				t.Fatalf("stopped with the mark %q and the autoscaler at %d-%d (mark %q): not between the surge's writes", c.marked(), lo, hi, original)
			}
			if tc.autoscalerFirst {
				e.Eventually(settle, "the autoscaler to scale the marked Deployment back to 1", func(context.Context) (bool, error) {
					return ptr.Deref(e.getDeployment(c.d).Spec.Replicas, 0) == 1 && c.marked() == "1", nil
				})
			}

			e.StartOperatorProcess()
			e.Eventually(settle, "the autoscaler raised to 2-2 under the surged Deployment", func(context.Context) (bool, error) {
				lo, hi, original := c.bounds()
				cur := e.getDeployment(c.d)
				return lo == 2 && hi == 2 && original == "1/1" && ptr.Deref(cur.Spec.Replicas, 0) == 2 && c.marked() == "1", nil
			})
			e.evictUntil(c.pod, settle)
			c.finish()
		})
	}
}

// The same between the two writes of the scale-back: the autoscaler restored, the
// Deployment still marked and surged. The restarted operator scales it back.
func TestOperatorKilledBetweenScaleBackWrites(t *testing.T) {
	e := setup(t)
	c := e.surgeUnderAutoscaler(disruptionpolicy.FailScaleBackAfterAutoscaler)
	e.Eventually(settle, "the surge with the autoscaler raised to 2-2", func(context.Context) (bool, error) {
		lo, hi, original := c.bounds()
		return lo == 2 && hi == 2 && original == "1/1" && c.marked() == "1", nil
	})
	e.evictUntil(c.pod, settle)
	c.waitFailpoint()
	if lo, hi, original := c.bounds(); c.marked() != "1" || lo != 1 || hi != 1 || original != "" {
		t.Fatalf("stopped with the mark %q and the autoscaler at %d-%d (mark %q): not between the scale-back's writes", c.marked(), lo, hi, original)
	}

	e.StartOperatorProcess()
	c.finish()
}

// crashCase is a single-replica Deployment under singleReplica: Surge and an autoscaler
// of bounds 1-1, whose node is drained while an operator process runs with a failpoint.
type crashCase struct {
	e      *env
	op     *framework.OperatorProcess
	d      *appsv1.Deployment
	pod    *corev1.Pod // the replica on the node drained
	bounds func() (lo, hi int32, original string)
	ready  *framework.ReadyWatch
	states *deploymentWatch
}

func (e *env) surgeUnderAutoscaler(fp string) *crashCase {
	e.T.Helper()
	e.OperatorBinary() // built before anything is timed
	c := &crashCase{e: e, op: e.StartOperatorProcess(disruptionpolicy.FailpointEnv + "=" + fp)}
	e.policy("single", func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge })
	c.d = e.deployment("single", "single", 1)
	c.bounds = e.autoscaler("single")
	e.waitManagedBudget(deploy, "single", "present", func(*policyv1.PodDisruptionBudget) bool { return true })
	c.pod = e.onlyPod(c.d)
	// An autoscaler that scales a surge back makes the ReplicaSet delete one of the two
	// pods, most often the new one, but not always (pods ready within seconds of each
	// other may rank alike). The replica being drained is kept, so that the surge is
	// still needed when the operator restarts.
	patch := []byte(`{"metadata":{"annotations":{"controller.kubernetes.io/pod-deletion-cost":"1000"}}}`)
	if err := e.c.Patch(e.Ctx, c.pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
		e.T.Fatal(err)
	}
	c.states = e.watchDeployment(c.d)
	c.ready = e.WatchReady(framework.SelectorOf(c.d), 200*time.Millisecond)
	e.Cordon(c.pod.Spec.NodeName)
	return c
}

// marked returns the Deployment's surge mark, "" for none.
func (c *crashCase) marked() string {
	return c.e.getDeployment(c.d).Annotations[holdfastv1alpha1.SurgeOriginalReplicasAnnotation]
}

func (c *crashCase) waitFailpoint() {
	c.e.T.Helper()
	if code := c.op.WaitExit(settle); code != disruptionpolicy.FailpointExitCode {
		c.e.T.Fatalf("the operator exited with %d, not at its failpoint (%d)", code, disruptionpolicy.FailpointExitCode)
	}
}

// finish waits for the user's values everywhere: one Ready replica off the drained
// node, no surge mark, the autoscaler at 1-1 without its mark. No sample may have seen
// zero Ready pods, and the surge must have been started and ended once: a second start
// means the first ended as someone else's change.
func (c *crashCase) finish() {
	e := c.e
	e.T.Helper()
	e.Eventually(settle, "1 replica unmarked, the autoscaler at 1-1 unmarked, its pod Ready elsewhere", func(ctx context.Context) (bool, error) {
		lo, hi, original := c.bounds()
		cur := e.getDeployment(c.d)
		pods, err := e.livePods(ctx, c.d)
		return lo == 1 && hi == 1 && original == "" && ptr.Deref(cur.Spec.Replicas, 0) == 1 &&
			cur.Annotations[holdfastv1alpha1.SurgeOriginalReplicasAnnotation] == "" &&
			len(pods) == 1 && framework.PodReady(&pods[0]) && pods[0].Spec.NodeName != c.pod.Spec.NodeName, err
	})
	samples, zero, _ := c.ready.Stop()
	states := c.states.Stop()
	e.T.Logf("%d samples every 200ms, %d at zero Ready; the Deployment went through %s", samples, zero, strings.Join(states, " → "))
	if zero != 0 {
		e.T.Errorf("%d samples (of %d) saw zero Ready pods", zero, samples)
	}
	if marks := countMarks(states); marks != 1 {
		e.T.Errorf("the Deployment was marked for a surge %d times, want 1: the surge ended before its drain and started again", marks)
	}
}

// deploymentWatch records every state a Deployment passes through, as a watch delivers
// each change: its replicas and its surge mark.
type deploymentWatch struct {
	mu     sync.Mutex
	states []string
	stop   context.CancelFunc
	done   chan struct{}
}

func (e *env) watchDeployment(d *appsv1.Deployment) *deploymentWatch {
	e.T.Helper()
	cur := e.getDeployment(d)
	ctx, cancel := context.WithCancel(e.Ctx)
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = "metadata.name=" + d.Name
		return e.Clientset.AppsV1().Deployments(d.Namespace).Watch(ctx, o)
	}}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, cur.ResourceVersion, lw)
	if err != nil {
		cancel()
		e.T.Fatal(err)
	}
	w := &deploymentWatch{states: []string{surgeState(cur)}, stop: func() { cancel(); rw.Stop() }, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ev := range rw.ResultChan() {
			if dep, ok := ev.Object.(*appsv1.Deployment); ok {
				w.mu.Lock()
				if s := surgeState(dep); s != w.states[len(w.states)-1] {
					w.states = append(w.states, s)
				}
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// Stop ends the watch and returns the states seen, repeats left out.
func (w *deploymentWatch) Stop() []string {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.states
}

func surgeState(d *appsv1.Deployment) string {
	s := fmt.Sprint(ptr.Deref(d.Spec.Replicas, 0))
	if mark, ok := d.Annotations[holdfastv1alpha1.SurgeOriginalReplicasAnnotation]; ok {
		s += " marked " + mark
	}
	return s
}

// countMarks counts the moves from unmarked to marked.
func countMarks(states []string) int {
	n := 0
	for i := 1; i < len(states); i++ {
		if strings.Contains(states[i], "marked") && !strings.Contains(states[i-1], "marked") {
			n++
		}
	}
	return n
}
