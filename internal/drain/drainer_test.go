package drain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

// onNode puts a pod on node-1.
func onNode(p *corev1.Pod) *corev1.Pod {
	p.Spec.NodeName = "node-1"
	p.UID = types.UID("uid-" + p.Name)
	return p
}

// evictionsMarkTerminating makes an accepted eviction leave the pod terminating, as a
// kubelet that has not yet stopped it would: the fake's tracker does not delete it.
func evictionsMarkTerminating(c *fake.Clientset) {
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		obj, err := c.Tracker().Get(podsGVR, a.GetNamespace(), a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName())
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*corev1.Pod).DeepCopy()
		pod.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		return true, nil, c.Tracker().Update(podsGVR, pod, pod.Namespace)
	})
}

// hangUntil makes the verb on the resource wait for ctx to end and then fail the way
// client-go does when a request's context ends.
func hangUntil(ctx context.Context, c *fake.Clientset, verb, resource string) {
	c.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		<-ctx.Done()
		return true, nil, ctx.Err()
	})
}

// Wherever the drain waits when its context ends, the node's result carries the cause
// the context was given (--timeout, an interrupt), never an error that merely wraps
// "context deadline exceeded": the CLI tells a timeout from an interrupt by it.
func TestDrainStopsWithTheCauseWhereverItWaits(t *testing.T) {
	errStop := errors.New("the test's deadline")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	tests := map[string]struct {
		objects []runtime.Object
		pace    bool
		setup   func(ctx context.Context, c *fake.Clientset)
	}{
		"waiting for a slot": {
			objects: []runtime.Object{node, onNode(readyPod("web-0")), ptr.To(func() coordinationv1.Lease {
				l := lease(0, "other/1/node-9", time.Now())
				l.Namespace = "holdfast-system"
				return l
			}())},
		},
		"backing off after a refusal": {
			objects: []runtime.Object{node, onNode(readyPod("web-0"))},
			setup: func(_ context.Context, c *fake.Clientset) {
				c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
					if a.GetSubresource() != "eviction" {
						return false, nil, nil
					}
					return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
				})
			},
		},
		"waiting for an evicted pod to go": {
			objects: []runtime.Object{node, onNode(readyPod("web-0"))},
			setup:   func(_ context.Context, c *fake.Clientset) { evictionsMarkTerminating(c) },
		},
		"waiting for a replacement to be Ready (pacing)": {
			objects: []runtime.Object{node, replicaSet(2), onNode(readyPod("web-0")), onNode(readyPod("web-1"))},
			pace:    true,
			setup:   func(_ context.Context, c *fake.Clientset) { evictionsMarkTerminating(c) },
		},
		"in an eviction request": {
			objects: []runtime.Object{node, onNode(readyPod("web-0"))},
			setup:   func(ctx context.Context, c *fake.Clientset) { hangUntil(ctx, c, "create", "pods") },
		},
		"in a list of the node's pods": {
			objects: []runtime.Object{node, onNode(readyPod("web-0"))},
			setup:   func(ctx context.Context, c *fake.Clientset) { hangUntil(ctx, c, "list", "pods") },
		},
		"in cordoning the node": {
			objects: []runtime.Object{node, onNode(readyPod("web-0"))},
			setup:   func(ctx context.Context, c *fake.Clientset) { hangUntil(ctx, c, "patch", "nodes") },
		},
		"in taking a slot": {
			objects: []runtime.Object{node, onNode(readyPod("web-0"))},
			setup:   func(ctx context.Context, c *fake.Clientset) { hangUntil(ctx, c, "list", "leases") },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeoutCause(context.Background(), 300*time.Millisecond, errStop)
			defer cancel()
			client := fake.NewClientset(tc.objects...)
			if tc.setup != nil {
				tc.setup(ctx, client)
			}
			d := &Drainer{Client: client, Clock: clock.RealClock{}, Options: Options{
				Pace: tc.pace, MaxConcurrent: 1, SlotNamespace: "holdfast-system",
				Identity: "test/1", Interval: 10 * time.Millisecond,
			}}
			res := d.Run(ctx, [][]string{{"node-1"}})
			if len(res.Nodes) != 1 {
				t.Fatalf("results %+v, want one node", res.Nodes)
			}
			got := res.Nodes[0]
			if got.Drained || !errors.Is(got.Err, errStop) {
				t.Errorf("node result drained %v, err %v; want not drained, err %v", got.Drained, got.Err, errStop)
			}
		})
	}
}

// A pod whose replacement would fit on no other node is kept, not evicted into Pending,
// and the node is not drained; with EvictUnplaceable it is evicted all the same.
func TestDrainKeepsPodsThatFitNowhere(t *testing.T) {
	for _, evictAnyway := range []bool{false, true} {
		t.Run(fmt.Sprintf("EvictUnplaceable=%t", evictAnyway), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			full := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}, Spec: corev1.NodeSpec{Unschedulable: true}}
			client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, full, replicaSet(1), onNode(readyPod("web-0")))
			evictionsMarkTerminating(client)
			evictions := 0 // counted before the reactor above answers
			client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() == "eviction" {
					evictions++
				}
				return false, nil, nil
			})
			var said []string
			d := &Drainer{Client: client, Clock: clock.RealClock{}, Options: Options{
				MaxConcurrent: 1, SlotNamespace: "holdfast-system", Identity: "test/1",
				Interval: 10 * time.Millisecond, EvictUnplaceable: evictAnyway,
			}, Report: func(e Event) {
				if e.Kind == NoRoom {
					said = append(said, e.Message)
				}
			}}
			res := d.Run(ctx, [][]string{{"node-1"}})
			got := res.Nodes[0]
			if len(said) != 1 || !strings.Contains(said[0], "fits on no other node") {
				t.Errorf("NoRoom events %q, want one saying the replacement fits nowhere", said)
			}
			if evictAnyway {
				if evictions != 1 {
					t.Errorf("%d evictions, want 1", evictions)
				}
				return
			}
			if evictions != 0 || got.Drained {
				t.Errorf("%d evictions, drained %v; want the pod kept and the node not drained", evictions, got.Drained)
			}
			if len(got.Remaining) != 1 || !strings.HasPrefix(got.Remaining[0].Reason, "kept: its replacement fits on no other node") {
				t.Errorf("remaining %+v, want the pod kept for want of room", got.Remaining)
			}
		})
	}
}
