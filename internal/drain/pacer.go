package drain

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/holdfast-dev/holdfast/internal/availability"
)

// desiredEvery is how long the pacer trusts the size a workload's controller wants while
// it waits for a replacement: reading it at every look was most of a drain's requests.
const desiredEvery = 2 * time.Second

// workloadKey names the controller of a pod. The direct controller (a Deployment's
// ReplicaSet, a StatefulSet) is enough: replacements are created by it.
type workloadKey struct {
	namespace string
	kind      string
	name      string
	uid       types.UID
}

func (k workloadKey) String() string { return k.kind + " " + k.namespace + "/" + k.name }

// workloadOf returns the pod's controller; pods without one have nothing to pace.
func workloadOf(pod *corev1.Pod) (workloadKey, bool) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return workloadKey{}, false
	}
	return workloadKey{namespace: pod.Namespace, kind: ref.Kind, name: ref.Name, uid: ref.UID}, true
}

// pacer holds, per workload, the eviction of this process whose replacement is awaited.
type pacer struct {
	// pods returns the pods of a controller from the run's watch; nil lists them from
	// the API server.
	pods func(types.UID) []*corev1.Pod
	// sizes returns the replicas a ReplicaSet or StatefulSet wants from the run's watch,
	// if it has seen it; nil, or a workload it has not seen, reads the API server.
	sizes func(workloadKey) (*int32, bool)
	// clock times the reads of desired sizes; nil is the real clock.
	clock clock.PassiveClock
	mu    sync.Mutex
	gates map[workloadKey]gate
	// evictions numbers the evictions begun, so that a node can tell its own gate from
	// a later one of the same workload.
	evictions uint64
}

// gate is one awaited replacement: the workload had baseline ready pods before the
// eviction, and is whole again when it has that many again.
type gate struct {
	baseline int
	seq      uint64
	// evicted is the pod evicted, never counted Ready again: a watch may not have seen
	// its deletion yet.
	evicted types.UID
	// evicting is true between begin and end, so that two nodes of one process cannot
	// evict from the same workload at once.
	evicting bool
	// desired is the size the workload's controller wanted, if known is true; desiredAt
	// is when it was last read from the API server.
	desired   int
	known     bool
	desiredAt time.Time
}

// open reports whether the workload may lose another pod, and if not, why.
func (p *pacer) open(ctx context.Context, client kubernetes.Interface, key workloadKey) (bool, string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	open, why, _, err := p.openLocked(ctx, client, key)
	return open, why, err
}

// openLocked is open; stuck is true when the awaited replacement cannot be scheduled.
func (p *pacer) openLocked(ctx context.Context, client kubernetes.Interface, key workloadKey) (open bool, why string, stuck bool, err error) {
	g, ok := p.gates[key]
	if !ok {
		return true, "", false, nil
	}
	if g.evicting {
		return false, fmt.Sprintf("another node is evicting from %s", key), false, nil
	}
	ready, unschedulable, err := p.readyPods(ctx, client, key, g.evicted)
	if err != nil {
		return false, "", false, err
	}
	// A workload that was already short before the eviction counts from where it was; one
	// scaled down since (an autoscaler, or a DisruptionPolicy's surge that ended with the
	// eviction) waits for no more than its new size.
	want := g.baseline
	if ready < want {
		if err := p.desiredPods(ctx, client, key, &g); err != nil {
			return false, "", false, err
		}
		p.gates[key] = g
		if g.known {
			want = min(want, g.desired)
		}
	}
	if ready < want {
		why := fmt.Sprintf("waiting for the replacement in %s to be Ready (%d of %d ready)", key, ready, want)
		if unschedulable != "" {
			why += "; the scheduler cannot place it: " + unschedulable
		}
		return false, why, unschedulable != "", nil
	}
	delete(p.gates, key)
	return true, "", false, nil
}

func (p *pacer) now() time.Time {
	if p.clock == nil {
		return time.Now()
	}
	return p.clock.Now()
}

// begin claims the workload for one eviction and returns its ready pods before it and the
// eviction's number; ok is false when another eviction from it is in flight or awaited.
func (p *pacer) begin(ctx context.Context, client kubernetes.Interface, key workloadKey) (baseline int, seq uint64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if open, _, _, err := p.openLocked(ctx, client, key); err != nil || !open {
		return 0, 0, false
	}
	ready, _, err := p.readyPods(ctx, client, key, "")
	if err != nil {
		return 0, 0, false
	}
	if p.gates == nil {
		p.gates = map[workloadKey]gate{}
	}
	p.evictions++
	p.gates[key] = gate{baseline: ready, seq: p.evictions, evicting: true}
	return ready, p.evictions, true
}

// end records the outcome of the eviction begin allowed: an accepted one is awaited, a
// refused one frees the workload.
func (p *pacer) end(key workloadKey, baseline int, seq uint64, pod types.UID, evicted bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if evicted {
		p.gates[key] = gate{baseline: baseline, seq: seq, evicted: pod}
		return
	}
	delete(p.gates, key)
}

// replaced reports whether the node that made eviction seq may stop waiting for its
// replacement: it is Ready, or another eviction from the workload has begun (pacing let
// that one begin only then), or it cannot be scheduled. Waiting for a replacement the
// scheduler cannot place (pinned to the cordoned node, no room) would hold the node's
// slot until the timeout; the workload stays paced, so its other pods still wait for it.
func (p *pacer) replaced(ctx context.Context, client kubernetes.Interface, key workloadKey, seq uint64) (bool, string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if g, ok := p.gates[key]; !ok || g.seq != seq {
		return true, "", nil
	}
	open, why, stuck, err := p.openLocked(ctx, client, key)
	if open || err != nil {
		return open, why, err
	}
	if stuck {
		return true, why + "; the node is drained without waiting for it", nil
	}
	return false, why, nil
}

// desiredPods sets in g the replicas the workload's controller wants now, for the
// controllers that recreate evicted pods by count; known is false for other kinds. A
// controller that is gone wants none. The run's watch answers every time; a workload it
// has not seen is read from the API server at most every desiredEvery.
func (p *pacer) desiredPods(ctx context.Context, client kubernetes.Interface, key workloadKey, g *gate) error {
	if key.kind != "ReplicaSet" && key.kind != "StatefulSet" {
		g.known = false
		return nil
	}
	var replicas *int32
	found := false
	if p.sizes != nil {
		replicas, found = p.sizes(key)
	}
	if !found {
		now := p.now()
		if !g.desiredAt.IsZero() && now.Sub(g.desiredAt) < desiredEvery {
			return nil
		}
		var err error
		replicas, err = readReplicas(ctx, client, key)
		switch {
		case apierrors.IsNotFound(err):
			replicas = ptr.To[int32](0)
		case err != nil:
			return fmt.Errorf("reading %s: %w", key, err)
		}
		g.desiredAt = now
	}
	g.desired, g.known = 1, true // the API's default
	if replicas != nil {
		g.desired = int(*replicas)
	}
	return nil
}

// readReplicas reads the replicas a ReplicaSet or StatefulSet wants from the API server.
func readReplicas(ctx context.Context, client kubernetes.Interface, key workloadKey) (*int32, error) {
	if key.kind == "StatefulSet" {
		sts, err := client.AppsV1().StatefulSets(key.namespace).Get(ctx, key.name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return sts.Spec.Replicas, nil
	}
	rs, err := client.AppsV1().ReplicaSets(key.namespace).Get(ctx, key.name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return rs.Spec.Replicas, nil
}

// readyPods counts the workload's Ready pods that are not being deleted, leaving out the
// pod evicted (a watch may not have seen its deletion yet), and returns the scheduler's
// message for one of its pods it could not place, if any.
func (p *pacer) readyPods(ctx context.Context, client kubernetes.Interface, key workloadKey, evicted types.UID) (ready int, unschedulable string, err error) {
	pods := []*corev1.Pod(nil)
	if p.pods != nil {
		pods = p.pods(key.uid)
	} else {
		list, err := client.CoreV1().Pods(key.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, "", fmt.Errorf("listing the pods of %s: %w", key, err)
		}
		for i := range list.Items {
			pods = append(pods, &list.Items[i])
		}
	}
	for _, pod := range pods {
		if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != key.uid || pod.DeletionTimestamp != nil || (evicted != "" && pod.UID == evicted) {
			continue
		}
		if availability.PodReady(pod) {
			ready++
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				unschedulable = c.Message
			}
		}
	}
	return ready, unschedulable, nil
}
