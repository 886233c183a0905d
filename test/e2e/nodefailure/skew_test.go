//go:build e2e

package nodefailure

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

const (
	// skew is how far behind the operator's the clock of the skewed node is: more than
	// the default lostAfter, so that a Lease judged by its renewTime is lost at once.
	skew = 45 * time.Second
	// renewEvery is the skewed node's renewal period, a kubelet's with a 40 s Lease.
	renewEvery = 10 * time.Second
	// skewedRenewals is how many renewals the test watches the node through.
	skewedRenewals = 4
)

// A node whose clock is 45 s behind renews its Lease with renewTimes 45 s in the past.
// The operator judges a Lease's age by when it saw it change, as the node-lifecycle
// controller does, so the node is never lost while it renews: no surge of its single
// replica, and the policy never lists it. kwok renews with the testbed's clock, so the
// test stops kwok on the node (testbed crash) and renews in its place: the Lease, and
// the Ready condition's heartbeat the node-lifecycle controller also watches, both
// stamped by the skewed clock.
func TestSkewedNodeRenewingIsNotLost(t *testing.T) {
	e := setup(t)
	e.StartOperator()
	p := e.policy(nil)
	victim := e.Nodes[1]
	web := e.Deployment("web", 1)
	framework.PreferNodes(&web.Spec.Template.Spec, corev1.LabelHostname, victim)
	e.Create(web)
	e.placed(web, victim)
	e.WaitBudget("holdfast-deploy-web", 0)
	pods, err := e.Pods(e.Ctx, "app=web")
	if err != nil || len(pods) != 1 {
		t.Fatalf("web's pods: %d (%v), want 1", len(pods), err)
	}
	held := pods[0]

	e.CrashNode(victim)
	renewer := e.renewBehind(victim)
	var lostIn, surgingIn int
	samples := 0
	e.Eventually(recovery, "the skewed node's renewals", func(ctx context.Context) (bool, error) {
		cur := &holdfastv1alpha1.DisruptionPolicy{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return false, err
		}
		samples++
		if slices.Contains(cur.Status.LostNodes, victim) {
			lostIn++
		}
		if slices.ContainsFunc(cur.Status.Workloads, func(w holdfastv1alpha1.WorkloadStatus) bool {
			return w.Name == "web" && w.State == holdfastv1alpha1.WorkloadSurging
		}) {
			surgingIn++
		}
		if set, err := e.SurgeSet(ctx, web); err != nil || set != nil {
			surgingIn++
		}
		return renewer.count() >= skewedRenewals, nil
	})
	renewals, errs := renewer.stop()
	t.Logf("FIGURE node-failure skewed-node renewals=%d skew=%s status-samples=%d lost-in=%d surging-in=%d", renewals, skew, samples, lostIn, surgingIn)
	if len(errs) > 0 {
		t.Errorf("renewing the skewed node's Lease: %v", errs)
	}
	if lostIn > 0 || surgingIn > 0 {
		t.Errorf("node %s, %s behind but renewing, was listed lost in %d of %d status samples and surged in %d", victim, skew, lostIn, samples, surgingIn)
	}
	if cur := e.pod(held.Name); cur == nil || cur.UID != held.UID || cur.DeletionTimestamp != nil {
		t.Errorf("web's pod %s on node %s deleted: the node was taken for lost", held.Name, victim)
	}
}

// renewer renews a node's Lease and Ready heartbeat as a kubelet whose clock is skew
// behind, every renewEvery, until stopped.
type renewer struct {
	mu     sync.Mutex
	n      int
	errs   []error
	cancel context.CancelFunc
	done   chan struct{}
}

func (r *renewer) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// stop ends the renewals and returns how many succeeded and the errors of the others.
func (r *renewer) stop() (int, []error) {
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, r.errs
}

// renewBehind starts renewing node's Lease and Ready heartbeat, at once and then every
// renewEvery, with times skew in the past; it stops when the test ends.
func (e *env) renewBehind(node string) *renewer {
	ctx, cancel := context.WithCancel(e.Ctx)
	r := &renewer{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			err := e.renewSkewed(ctx, node, time.Now().Add(-skew))
			r.mu.Lock()
			if err == nil {
				r.n++
			} else if ctx.Err() == nil {
				r.errs = append(r.errs, err)
			}
			r.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-time.After(renewEvery):
			}
		}
	}()
	// Before CrashNode's cleanup restores the node to kwok.
	e.T.Cleanup(func() { r.stop() })
	return r
}

// renewSkewed writes at as the node's Lease renewTime and its Ready condition's
// heartbeat.
func (e *env) renewSkewed(ctx context.Context, node string, at time.Time) error {
	lease := &coordinationv1.Lease{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: node}, lease); err != nil {
		return err
	}
	lease.Spec.RenewTime = &metav1.MicroTime{Time: at}
	if err := e.Client.Update(ctx, lease); err != nil {
		return err
	}
	n := &corev1.Node{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		return err
	}
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i].LastHeartbeatTime = metav1.NewTime(at)
		}
	}
	return e.Client.Status().Update(ctx, n)
}
