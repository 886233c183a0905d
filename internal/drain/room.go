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

// RoomInterval is how often a node whose pods' replacements fit nowhere looks again: an
// uncordon, a new node or a pod gone elsewhere can make room.
const RoomInterval = 10 * time.Second

// Unplaceable returns the pods of node (namespace/name) whose replacement would fit on no
// other node of snap as it is now, each with the planner's explanation. It is the
// planner's scheduling simulation of draining node alone, the other cordoned nodes
// counted out; snap is not changed.
func Unplaceable(snap *snapshot.Snapshot, now time.Time, node string, f Filter) (map[string]string, error) {
	p, err := plan.DrainWaves(snap, now, plan.Targets{Names: []string{node}}, plan.Options{
		Force: f.Force, DeleteEmptyDirData: f.DeleteEmptyDirData,
	})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, b := range p.Blocked {
		if b.Node != node {
			continue
		}
		for _, r := range b.Reasons {
			if r.Type == plan.NoRoom && r.Kind == snapshot.KindPod {
				out[r.Namespace+"/"+r.Name] = r.Message
			}
		}
	}
	return out, nil
}

// roomView is a run's read of the cluster for room checks, shared by every node it
// drains: a read is of every pod of the cluster, which at thousands of nodes costs the
// API server and the drain seconds each, so the cluster's pods are read again at most
// every RoomInterval. What decides most where a pod can go is read at every check: the
// nodes (which are cordoned changes most during a drain) and the pods of the node checked
// (replacements from other drained nodes land there).
type roomView struct {
	mu   sync.Mutex
	snap *snapshot.Snapshot
	at   time.Time
}

// get returns a snapshot for checking node: its pods and the nodes current, the other
// pods and the workloads at most RoomInterval old. The snapshot shares the run's: not to
// be changed.
func (v *roomView) get(ctx context.Context, client kubernetes.Interface, now time.Time, node string) (*snapshot.Snapshot, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.snap == nil || !now.Before(v.at.Add(RoomInterval)) {
		snap, err := live.Load(ctx, client, nil, metav1.NamespaceAll)
		if err != nil {
			return nil, err
		}
		v.snap, v.at = snap, now
		return snap, nil
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	onNode, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return nil, err
	}
	fresh := *v.snap
	fresh.Nodes = nodes.Items
	fresh.Pods = make([]corev1.Pod, 0, len(v.snap.Pods)+len(onNode.Items))
	for i := range v.snap.Pods {
		if v.snap.Pods[i].Spec.NodeName != node {
			fresh.Pods = append(fresh.Pods, v.snap.Pods[i])
		}
	}
	fresh.Pods = append(fresh.Pods, onNode.Items...)
	return &fresh, nil
}

// checkRoom marks the node's pods whose replacement fits nowhere; a pod that has room
// again loses the mark. It runs once when the node starts and then every RoomInterval
// while a pod waits for room.
func (w *nodeWork) checkRoom(ctx context.Context) error {
	now := w.d.Clock.Now()
	if !w.roomAt.IsZero() && now.Before(w.roomAt.Add(RoomInterval)) {
		return nil
	}
	w.roomAt = now
	snap, err := w.d.room.get(ctx, w.d.Client, now, w.node)
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
