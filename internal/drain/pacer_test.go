package drain

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// readyPod is a Ready pod of the ReplicaSet with UID "rs".
func readyPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-abc", UID: "rs", Controller: ptr.To(true)}}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// replicaSet is the ReplicaSet of readyPod, wanting replicas pods.
func replicaSet(replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: "ns", UID: "rs"},
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas)},
	}
}

// The pacer against a fake clientset (it lists pods and reads their ReplicaSet): one eviction per workload at
// a time, the next once the workload has its ready pods back.
func TestPacerWaitsForTheReplacement(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(replicaSet(3))
	for i := range 3 {
		if _, err := client.CoreV1().Pods("ns").Create(ctx, readyPod(fmt.Sprintf("web-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	key, _ := workloadOf(readyPod("web-0"))
	var p pacer

	baseline, seq, ok := p.begin(ctx, client, key)
	if !ok || baseline != 3 {
		t.Fatalf("begin = %d, %v; want 3 ready pods and the go-ahead", baseline, ok)
	}
	if _, _, again := p.begin(ctx, client, key); again {
		t.Fatal("a second eviction from the workload began while the first was in flight")
	}
	// The eviction is accepted: the pod goes, its replacement is not Ready yet.
	if err := client.CoreV1().Pods("ns").Delete(ctx, "web-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	replacement := readyPod("web-3")
	replacement.Status.Conditions = nil
	if _, err := client.CoreV1().Pods("ns").Create(ctx, replacement, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.end(key, baseline, seq, "", true)
	if open, why, err := p.open(ctx, client, key); err != nil || open || why == "" {
		t.Errorf("open = %v, %q, %v; want closed, saying why", open, why, err)
	}
	if done, _, _ := p.replaced(ctx, client, key, seq); done {
		t.Error("replaced before the replacement is Ready")
	}

	replacement.Status = readyPod("x").Status
	if _, err := client.CoreV1().Pods("ns").UpdateStatus(ctx, replacement, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if done, _, err := p.replaced(ctx, client, key, seq); err != nil || !done {
		t.Errorf("replaced = %v, %v once the replacement is Ready; want true", done, err)
	}
	_, next, ok := p.begin(ctx, client, key)
	if !ok {
		t.Fatal("the next eviction may not begin once the replacement is Ready")
	}
	// A later eviction's gate does not hold the node of the earlier one.
	if done, _, _ := p.replaced(ctx, client, key, seq); !done || next == seq {
		t.Errorf("replaced(first) = %v with a later eviction %d under way; want true", done, next)
	}
}

func TestPacerRefusedEvictionFreesTheWorkload(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(replicaSet(1), readyPod("web-0"))
	key, _ := workloadOf(readyPod("web-0"))
	var p pacer
	baseline, seq, ok := p.begin(ctx, client, key)
	if !ok {
		t.Fatal("begin refused")
	}
	p.end(key, baseline, seq, "", false)
	if open, _, err := p.open(ctx, client, key); err != nil || !open {
		t.Errorf("open after a refused eviction = %v, %v; want open", open, err)
	}
}

// A replacement the scheduler cannot place keeps the workload paced, but does not hold
// the node that evicted it: that node is drained.
func TestPacerUnschedulableReplacement(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(replicaSet(2), readyPod("web-0"), readyPod("web-1"))
	key, _ := workloadOf(readyPod("web-0"))
	var p pacer
	baseline, seq, _ := p.begin(ctx, client, key)
	if err := client.CoreV1().Pods("ns").Delete(ctx, "web-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pending := readyPod("web-2")
	pending.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 node(s) were unschedulable."}}
	if _, err := client.CoreV1().Pods("ns").Create(ctx, pending, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.end(key, baseline, seq, "", true)

	open, why, err := p.open(ctx, client, key)
	if err != nil || open || !strings.Contains(why, "the scheduler cannot place it: 0/3 nodes are available") {
		t.Errorf("open = %v, %q, %v; want closed with the scheduler's reason", open, why, err)
	}
	done, why, err := p.replaced(ctx, client, key, seq)
	if err != nil || !done || !strings.Contains(why, "without waiting for it") {
		t.Errorf("replaced = %v, %q, %v; want done, saying it does not wait", done, why, err)
	}
}

// scaledDownAfterEviction has p evict one of the ReplicaSet's two pods, checks that the
// workload waits for its replacement, then scales the ReplicaSet down to 1 (a
// DisruptionPolicy's surge ends as the old pod goes).
func scaledDownAfterEviction(ctx context.Context, t *testing.T, client *fake.Clientset, p *pacer) workloadKey {
	t.Helper()
	key, _ := workloadOf(readyPod("web-old"))
	baseline, seq, _ := p.begin(ctx, client, key)
	if err := client.CoreV1().Pods("ns").Delete(ctx, "web-old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p.end(key, baseline, seq, "", true)
	if open, _, _ := p.open(ctx, client, key); open {
		t.Fatal("open with 1 of 2 pods ready and the ReplicaSet still at 2")
	}
	if _, err := client.AppsV1().ReplicaSets("ns").Update(ctx, replicaSet(1), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return key
}

// A workload scaled down after the eviction waits for its new size, not for the pods it
// had before; read from the API server, the size is read at most every desiredEvery.
func TestPacerWorkloadScaledDownAfterTheEviction(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(replicaSet(2), readyPod("web-old"), readyPod("web-surge"))
	clk := clocktesting.NewFakeClock(time.Now())
	p := pacer{clock: clk}
	key := scaledDownAfterEviction(ctx, t, client, &p)
	if open, _, _ := p.open(ctx, client, key); open {
		t.Fatal("open before the desired size read is due: the size is read at most every desiredEvery")
	}
	clk.Step(desiredEvery)
	if open, why, err := p.open(ctx, client, key); err != nil || !open {
		t.Errorf("open = %v, %q, %v after the scale down to 1 with 1 ready; want open", open, why, err)
	}
}

// With the run's watch of sizes, the pacer reads the size a ReplicaSet wants from it,
// never from the API server, and follows a scale down as soon as the watch sees it.
func TestPacerReadsSizesFromTheWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(replicaSet(2), readyPod("web-old"), readyPod("web-surge"))
	sizes := newSizeCache(client)
	if err := sizes.start(ctx); err != nil {
		t.Fatal(err)
	}
	p := pacer{clock: clocktesting.NewFakeClock(time.Now()), sizes: sizes.desired}
	key := scaledDownAfterEviction(ctx, t, client, &p)
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		r, ok := sizes.desired(key)
		return ok && *r == 1, nil
	}); err != nil {
		t.Fatalf("the watch never saw the scale down: %v", err)
	}
	if open, why, err := p.open(ctx, client, key); err != nil || !open {
		t.Errorf("open = %v, %q, %v after the watch saw the scale down to 1 with 1 ready; want open without waiting for desiredEvery", open, why, err)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "replicasets" {
			t.Errorf("the pacer read the ReplicaSet from the API server: %v", a)
		}
	}
}
