package disruptionpolicy

import (
	"context"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/holdfast-dev/holdfast/internal/policy"
)

// A Lease's age is how long the watcher has seen it unchanged, by the operator's clock:
// a node whose clock is 45 s behind but renews every 10 s is never lost, and a node dead
// before the operator started is lost once the operator has itself seen no renewal for
// its lostAfter's share past SuspectAfter.
func TestLeaseAgeIsWhatTheWatcherSaw(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	w := newNodeWatcher(nil, nil, nil, clk, nil)
	nodes := []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "skewed"}}, {ObjectMeta: metav1.ObjectMeta{Name: "dead"}}}
	lease := func(name string, renewed time.Time) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](40), RenewTime: ptr.To(metav1.NewMicroTime(renewed))}}
	}
	deadSince := t0.Add(-10 * time.Minute)
	lostAt := map[string]time.Time{}
	for step := 0; step <= 12; step++ {
		now := t0.Add(time.Duration(step) * 5 * time.Second)
		clk.SetTime(now)
		// The skewed kubelet renews every 10 s, stamping its own clock, 45 s behind.
		renewed := t0.Add(time.Duration(step/2)*10*time.Second - 45*time.Second)
		leases := map[string]*coordinationv1.Lease{"skewed": w.seen(lease("skewed", renewed), now), "dead": w.seen(lease("dead", deadSince), now)}
		h := policy.HealthOf(nodes, leases, now)
		for name, s := range h.Suspects {
			if _, ok := lostAt[name]; !ok && !now.Before(s.Renewed.Add(30*time.Second)) {
				lostAt[name] = now
			}
		}
	}
	if at, ok := lostAt["skewed"]; ok {
		t.Errorf("the node 45 s behind, renewing, was lost at %s", at.Sub(t0))
	}
	if got, want := lostAt["dead"].Sub(t0), 15*time.Second; got != want {
		t.Errorf("the node dead before the operator started was lost %s after it started, want %s", got, want)
	}
}

// A node back after a silence is taken back only once it has renewed for rejoin: a node
// that flaps stays lost, and its surge neither ends nor starts again with each renewal.
func TestNodeBackAfterProbation(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	w := newNodeWatcher(nil, nil, nil, clk, nil)
	nodes := []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "flaky"}}}
	lease := func(renewed time.Time) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "flaky"},
			Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](40), RenewTime: ptr.To(metav1.NewMicroTime(renewed))}}
	}
	// alive says whether the kubelet renews in each 10 s step.
	alive := []bool{true, true, false, false, false, false, false, false, true, false, false, true, true, true, true, true}
	var last time.Time
	var lost []bool
	for step, up := range alive {
		now := t0.Add(time.Duration(step) * 10 * time.Second)
		clk.SetTime(now)
		if up {
			last = now
		}
		h := policy.HealthOf(nodes, map[string]*coordinationv1.Lease{"flaky": w.seen(lease(last), now)}, now)
		s, suspect := h.Suspects["flaky"]
		lost = append(lost, suspect && !now.Before(s.Renewed.Add(30*time.Second)))
	}
	// Last renewed at 10 s: lost from 40 s; one renewal at 80 s, silent again: still
	// lost; renewing from 110 s: back only at 130 s, after its probation.
	want := []bool{false, false, false, false, true, true, true, true, true, true, true, true, true, false, false, false}
	if !slices.Equal(lost, want) {
		t.Errorf("lost at each 10 s step:\n got %v\nwant %v", lost, want)
	}
}

// What the watcher knows of a node's renewals goes with its Lease: autoscalers make and
// remove nodes all day.
func TestRenewalsOfNodesGoneAreForgotten(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	lease := func(name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: name},
			Spec: coordinationv1.LeaseSpec{RenewTime: ptr.To(metav1.NewMicroTime(clk.Now()))}}
	}
	c := fake.NewClientBuilder().WithObjects(lease("n1"), lease("n2")).Build()
	w := newNodeWatcher(c, c, c, clk, nil)
	w.back["n2"] = true
	if _, _, err := w.read(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(context.Background(), lease("n2")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.read(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, kept := w.renewals["n2"]; kept || len(w.renewals) != 1 || w.back["n2"] {
		t.Errorf("renewals %v, back %v after n2 went: want only n1's", w.renewals, w.back)
	}
}
