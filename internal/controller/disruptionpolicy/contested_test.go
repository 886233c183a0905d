package disruptionpolicy

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/contest"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// A node-management tool that takes the quarantine taint off every 500 ms gets it back
// at most contest.Limit times a minute, and is named in the condition and an Event.
func TestQuarantineAgainstANodeSyncer(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	c := fake.NewClientBuilder().WithObjects(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}).Build()
	// The fake client records no field managers of patches: the apiserver's, after the
	// syncer's patch, are given.
	live := interceptor.NewClient(c, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if err := c.Get(ctx, key, obj, opts...); err != nil {
			return err
		}
		obj.SetManagedFields([]metav1.ManagedFieldsEntry{
			{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, Time: ptr.To(metav1.NewTime(clk.Now())), FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{"f:kubernetes.io/hostname":{}}}}`)},
			{Manager: "node-sync", Operation: metav1.ManagedFieldsOperationUpdate, Time: ptr.To(metav1.NewTime(clk.Now().Add(-time.Second))), FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:taints":{}}}`)},
		})
		return nil
	}})
	r := &reconciler{client: c, live: live, ledger: contest.NewLedger(clk)}
	syncer := client.WithFieldOwner(c, "node-sync")
	writes, events := 0, 0
	var cs contests
	for range 120 {
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: "n1"}, n); err != nil {
			t.Fatal(err)
		}
		if !policy.Quarantined(n) {
			cs = contests{}
			done, err := r.taint(ctx, &cs, n, holdfastv1alpha1.LostTaintKey, func() error {
				_, err := taintNode(ctx, c, n, policy.NodeTaint{Node: n.Name, Key: holdfastv1alpha1.LostTaintKey}, clk.Now())
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if done {
				writes++
			}
			events += len(cs.events)
		}
		if err := syncer.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"taints":null}}`))); err != nil {
			t.Fatal(err)
		}
		clk.SetTime(clk.Now().Add(500 * time.Millisecond))
	}
	if writes != contest.Limit || events != contest.Limit-1 {
		t.Errorf("holdfast tainted the node %d times in a minute with %d WriteContested Events, want %d and %d", writes, events, contest.Limit, contest.Limit-1)
	}
	cond := cs.condition(1, clk.Now())
	if cond.Status != metav1.ConditionTrue || cond.Reason != holdfastv1alpha1.ReasonUndoneByOtherWriter || !strings.Contains(cond.Message, `"node-sync"`) ||
		!strings.Contains(cond.Message, "Node n1 spec.taints[holdfast.dev/lost]") {
		t.Errorf("condition %s %s %q, want True naming node-sync and the taint", cond.Status, cond.Reason, cond.Message)
	}
	if (&contests{}).condition(1, clk.Now()).Reason != holdfastv1alpha1.ReasonNoContest {
		t.Error("no contest should read NoContest")
	}
}
