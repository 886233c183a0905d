package drain

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// What blocks a node is written on change only: the same block again counts up its first
// Event instead of adding one; the kubelet's condition is left as it was.
func TestNodeStatusWritesOnChange(t *testing.T) {
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "uid-1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{ready}}})
	s := newNodeStatus(context.Background(), client, clk, "test/1")
	a := Event{Node: "node-1", Pod: "ns/web-0", Kind: Blocked, Message: "blocked by PodDisruptionBudget ns/web"}
	b := Event{Node: "node-1", Pod: "ns/web-1", Kind: NoRoom, Message: "its replacement fits on no other node"}
	for _, e := range []Event{{Node: "node-1", Kind: Cordoned, Message: "cordoned"}, a, a, b, a, {Node: "node-1", Kind: NodeDrained, Message: "2 pod(s) evicted"}} {
		clk.Step(time.Second)
		s.observe(e)
	}
	if err := s.err(); err != nil {
		t.Fatal(err)
	}
	events, err := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events.Items {
		if e.InvolvedObject.UID != "uid-1" || e.InvolvedObject.Kind != "Node" {
			t.Errorf("Event %s is about %+v, want node-1", e.Name, e.InvolvedObject)
		}
		got = append(got, fmt.Sprintf("%s x%d: %s", e.Reason, e.Count, e.Message))
	}
	slices.Sort(got)
	want := []string{
		"DrainBlocked x1: pod ns/web-1: kept, its replacement would fit on no other node: its replacement fits on no other node",
		"DrainBlocked x2: pod ns/web-0: eviction refused, retrying: blocked by PodDisruptionBudget ns/web",
		"DrainStarted x1: holdfast drain test/1: node cordoned; evicting its pods, every budget respected",
		"Drained x1: drained: 2 pod(s) evicted",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Events (-want +got):\n%s", diff)
	}
	node, err := client.CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conds := map[corev1.NodeConditionType]corev1.NodeCondition{}
	for _, c := range node.Status.Conditions {
		conds[c.Type] = c
	}
	if diff := cmp.Diff(ready, conds[corev1.NodeReady]); diff != "" {
		t.Errorf("Ready condition changed (-want +got):\n%s", diff)
	}
	// DrainInProgress went True at the cordon (second 1), stayed True through the blocks,
	// and False at the end (second 6); Drained went False then True at the end.
	for typ, want := range map[corev1.NodeConditionType]string{
		corev1.NodeDrainInProgress: "False Drained since 12:00:06",
		corev1.NodeDrained:         "True Drained since 12:00:06",
	} {
		c := conds[typ]
		if got := string(c.Status) + " " + c.Reason + " since " + c.LastTransitionTime.UTC().Format(time.TimeOnly); got != want {
			t.Errorf("%s: %s, want %s", typ, got, want)
		}
	}
}

// The transition time of a condition that stays True is kept across its messages.
func TestNodeStatusKeepsTransitionTime(t *testing.T) {
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "uid-1"}})
	s := newNodeStatus(context.Background(), client, clk, "test/1")
	s.observe(Event{Node: "node-1", Kind: Cordoned, Message: "cordoned"})
	clk.Step(time.Minute)
	s.observe(Event{Node: "node-1", Pod: "ns/web-0", Kind: Blocked, Message: "blocked"})
	node, err := client.CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeDrainInProgress && (c.Reason != ReasonBlocked || !c.LastTransitionTime.Time.Equal(start) || !c.LastHeartbeatTime.Time.Equal(start.Add(time.Minute))) {
			t.Errorf("DrainInProgress %+v: want reason Blocked, True since %s, written at %s", c, start, start.Add(time.Minute))
		}
	}
}

// --skip-wait-for-delete-timeout: a pod deleting for longer is no longer waited for, and
// the node counts as drained; a pod deleting for less is still waited for.
func TestDrainSkipsPodsDeletingTooLong(t *testing.T) {
	for _, tc := range []struct {
		deletingFor time.Duration
		drained     bool
	}{{time.Minute, true}, {10 * time.Second, false}} {
		t.Run(tc.deletingFor.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			pod := onNode(readyPod("web-0"))
			pod.DeletionTimestamp = &metav1.Time{Time: time.Now().Add(-tc.deletingFor)}
			client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, pod)
			d := &Drainer{Client: client, Clock: clock.RealClock{}, Options: Options{
				MaxConcurrent: 1, SlotNamespace: "holdfast-system", Identity: "test/1",
				Interval: 10 * time.Millisecond, SkipWaitForDeleteTimeout: 30 * time.Second,
			}}
			got := d.Run(ctx, [][]string{{"node-1"}}).Nodes[0]
			if got.Drained != tc.drained {
				t.Fatalf("drained %v, want %v: %+v", got.Drained, tc.drained, got)
			}
			if tc.drained && (len(got.Skipped) != 1 || got.Skipped[0].Pod != "ns/web-0") {
				t.Errorf("skipped %+v, want ns/web-0", got.Skipped)
			}
		})
	}
}
