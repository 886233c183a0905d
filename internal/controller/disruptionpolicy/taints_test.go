package disruptionpolicy

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

var (
	lost    = policy.NodeTaint{Node: "n1", Key: holdfastv1alpha1.LostTaintKey}
	handOff = policy.NodeTaint{Node: "n1", Key: holdfastv1alpha1.HandOffTaintKey}
)

// holdfast's taints leave the node's annotations alone: a kwok node that lost its
// provider's annotation to a hand-off taint could no longer be deleted by
// cluster-autoscaler, and a quarantined node lost its own the same way.
func TestTaintsKeepTheNodesAnnotations(t *testing.T) {
	ctx := context.Background()
	annotations := map[string]string{"kwok.x-k8s.io/node": "fake"}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: annotations}}
	c := fake.NewClientBuilder().WithObjects(n).Build()
	read := func() *corev1.Node {
		got := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: "n1"}, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for name, write := range map[string]func(*corev1.Node) error{
		"hand-off taint": func(n *corev1.Node) error { _, err := taintNode(ctx, c, n, handOff, now); return err },
		"quarantine":     func(n *corev1.Node) error { _, err := taintNode(ctx, c, n, lost, now); return err },
		"release":        func(n *corev1.Node) error { return releaseNode(ctx, c, n) },
	} {
		if err := write(read()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := read().Annotations; got["kwok.x-k8s.io/node"] != "fake" {
			t.Errorf("after the %s the node's annotations are %v, want %v", name, got, annotations)
		}
	}
}

// A node deleted between the read and the write is passed over, not reported as
// tainted or released.
func TestTaintOfADeletedNode(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gone", ResourceVersion: "7"}}
	if _, err := taintNode(ctx, c, n, lost, time.Now()); !nodeGone(err) {
		t.Errorf("quarantine of a deleted node: %v, want NotFound", err)
	}
	if err := releaseNode(ctx, c, n); !nodeGone(err) {
		t.Errorf("release of a deleted node: %v, want NotFound", err)
	}
}
