package drain

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
	"github.com/holdfast-dev/holdfast/internal/snapshot/live"
)

// RoomRecheck is how often a node whose pods' replacements fit nowhere looks again: an
// uncordon, a new node or a pod gone elsewhere can make room.
const RoomRecheck = 10 * time.Second

// Unplaceable returns the pods of node (namespace/name) whose replacement would fit on no
// other node of snap as it is now, each with the planner's explanation: the planner's
// scheduling simulation of draining node alone with the drain's rules (the pods
// --pod-selector leaves out stay), the other cordoned nodes counted out, whatever else
// keeps the node. snap is not changed.
func Unplaceable(snap *snapshot.Snapshot, now time.Time, node string, f Filter) (map[string]string, error) {
	reasons, err := plan.Unplaceable(snap, now, node, f)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range reasons {
		if r.Type == plan.NoRoom && r.Kind == snapshot.KindPod {
			out[r.Namespace+"/"+r.Name] = r.Message
		}
	}
	return out, nil
}

// roomView is a run's read of the cluster for room checks, shared by every node it
// drains. The cluster's pods come from the run's pod cache, which keeps what placing them
// takes; the workloads and budgets, which a drain changes little, are read again at most
// every RoomRecheck; the nodes (which are cordoned changes most during a drain) and the
// checked node's pods, whole, at every check. Reading every pod per check instead cost
// seconds and hundreds of megabytes each at 50,000 pods.
type roomView struct {
	mu   sync.Mutex
	rest *snapshot.Snapshot // every kind but pods
	at   time.Time
}

// get returns a snapshot for checking node. pods returns the cluster's pods as cached:
// not to be changed.
func (v *roomView) get(ctx context.Context, client kubernetes.Interface, pods func() []*corev1.Pod, now time.Time, node string) (*snapshot.Snapshot, error) {
	v.mu.Lock()
	if v.rest == nil || !now.Before(v.at.Add(RoomRecheck)) {
		rest, err := live.LoadWithoutPods(ctx, client, metav1.NamespaceAll)
		if err != nil {
			v.mu.Unlock()
			return nil, err
		}
		v.rest, v.at = rest, now
	}
	fresh := *v.rest
	v.mu.Unlock()
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	onNode, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return nil, err
	}
	fresh.Nodes = nodes.Items
	cached := pods()
	fresh.Pods = make([]corev1.Pod, 0, len(cached)+len(onNode.Items))
	for _, p := range cached {
		if p.Spec.NodeName != node {
			fresh.Pods = append(fresh.Pods, *p)
		}
	}
	fresh.Pods = append(fresh.Pods, onNode.Items...)
	return &fresh, nil
}

// checkRoom marks the node's pods whose replacement fits nowhere; a pod that has room
// again loses the mark. It runs once when the node starts and then every RoomRecheck
// while a pod waits for room.
func (w *nodeWork) checkRoom(ctx context.Context) error {
	now := w.d.Clock.Now()
	if !w.roomAt.IsZero() && now.Before(w.roomAt.Add(RoomRecheck)) {
		return nil
	}
	w.roomAt = now
	snap, err := w.d.room.get(ctx, w.d.Client, w.d.pods.all, now, w.node)
	if err != nil {
		return fmt.Errorf("reading the cluster to place node %s's pods: %w", w.node, err)
	}
	room, err := Unplaceable(snap, now, w.node, w.d.Filter)
	if err != nil {
		return fmt.Errorf("placing node %s's pods: %w", w.node, err)
	}
	for name, p := range w.pods {
		why, stuck := room[name]
		switch {
		case !stuck:
			p.state.NoRoom = ""
		case w.d.EvictUnplaceable:
			w.say(p, NoRoom, why+"; evicting it anyway (--evict-unplaceable)")
		case p.state.Stopped == "" && p.state.NoRoom == "":
			// A budget that never allows the eviction, or two budgets, is the reason to
			// give: room would not help.
			if msg := w.hopeless(ctx, p); msg != "" {
				p.state.Stopped = msg
				continue
			}
			p.state.NoRoom = why
		default:
			p.state.NoRoom = why
		}
	}
	return nil
}

// hopeless says why no room would ever let the pod be evicted, if so: two budgets over
// it, or one that never allows an eviction.
func (w *nodeWork) hopeless(ctx context.Context, p *podWork) string {
	pdbs, err := w.budgets(ctx, p.pod)
	switch {
	case err != nil || len(pdbs) == 0:
		return ""
	case len(pdbs) > 1:
		return Overlapping(pdbs)
	}
	msg, never := NeverAllows(pdbs[0])
	if !never {
		return ""
	}
	return msg
}

// waitingForRoom reports whether a pod is kept for want of room.
func (w *nodeWork) waitingForRoom() bool {
	for _, p := range w.pods {
		if p.state.NoRoom != "" && !p.state.Gone && !p.state.Terminating && p.state.Stopped == "" {
			return true
		}
	}
	return false
}
