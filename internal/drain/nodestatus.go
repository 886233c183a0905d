package drain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// The reasons of the node maintenance conditions (Kubernetes 1.37, set and cleared by
// whoever drains) that a drain keeps, and of the Events it writes on the node, so that
// kubectl describe node says that a drain runs, what blocks it, and that it is done.
const (
	// ReasonDraining: DrainInProgress True, the pods are being evicted.
	ReasonDraining = "Draining"
	// ReasonBlocked: DrainInProgress True, a pod is refused or kept; the message says which
	// pod and what stops it (the budget with its numbers).
	ReasonBlocked = "Blocked"
	// ReasonDrained: DrainInProgress False and Drained True.
	ReasonDrained = "Drained"
	// ReasonIncomplete: the drain stopped with pods left; both conditions False.
	ReasonIncomplete = "Incomplete"
	// ReasonRefused: pods on the node need a flag, so the drain evicted none; both
	// conditions False.
	ReasonRefused = "Refused"

	EventDrainStarted = "DrainStarted"
	EventDrainBlocked = "DrainBlocked"
	EventDrained      = "Drained"
	EventDrainStopped = "DrainStopped"
)

// eventNamespace holds the Events of nodes, which have no namespace, as the kubelet's do.
const eventNamespace = metav1.NamespaceDefault

// statusTimeout bounds each status write; they run on a context that outlives the
// drain's, so that a drain stopped by --timeout or Ctrl-C still says so on the node.
const statusTimeout = 10 * time.Second

// nodeStatus turns a drain's progress into the nodes' conditions and Events, writing only
// what changed.
type nodeStatus struct {
	ctx      context.Context
	client   kubernetes.Interface
	clock    clock.Clock
	identity string

	mu    sync.Mutex
	nodes map[string]*nodeRecord
	errs  []error
}

// nodeRecord is what was last written on one node.
type nodeRecord struct {
	mu    sync.Mutex
	uid   types.UID
	conds map[corev1.NodeConditionType]corev1.NodeCondition
	// events are the Events written, by reason and message, so that a repeat counts up
	// the first one instead of making another; blocked is the last DrainBlocked message.
	events  map[string]*corev1.Event
	blocked string
}

func newNodeStatus(ctx context.Context, client kubernetes.Interface, clk clock.Clock, identity string) *nodeStatus {
	return &nodeStatus{ctx: context.WithoutCancel(ctx), client: client, clock: clk, identity: identity, nodes: map[string]*nodeRecord{}}
}

// observe records a drain event on its node. A nil nodeStatus records nothing.
func (s *nodeStatus) observe(e Event) {
	if s == nil {
		return
	}
	s.mu.Lock()
	r := s.nodes[e.Node]
	if r == nil {
		r = &nodeRecord{events: map[string]*corev1.Event{}}
		s.nodes[e.Node] = r
	}
	s.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.ctx, statusTimeout)
	defer cancel()
	var err error
	switch e.Kind {
	case Cordoned:
		// A new drain clears what an earlier one left, Drained=True included.
		if err = s.read(ctx, r, e.Node); err != nil {
			break
		}
		r.blocked = ""
		err = errors.Join(
			s.conditions(ctx, r, e.Node,
				s.condition(r, corev1.NodeDrainInProgress, corev1.ConditionTrue, ReasonDraining, "holdfast drain "+s.identity+" is evicting the node's pods through the Eviction API"),
				s.condition(r, corev1.NodeDrained, corev1.ConditionFalse, ReasonDraining, "a drain is in progress")),
			s.event(ctx, r, e.Node, corev1.EventTypeNormal, EventDrainStarted, "holdfast drain "+s.identity+": node "+e.Message+"; evicting its pods, every budget respected"))
	case Blocked, PodStopped, NoRoom:
		msg := "pod " + e.Pod + ": " + describeBlock(e)
		err = s.conditions(ctx, r, e.Node, s.condition(r, corev1.NodeDrainInProgress, corev1.ConditionTrue, ReasonBlocked, msg))
		if msg != r.blocked {
			r.blocked = msg
			err = errors.Join(err, s.event(ctx, r, e.Node, corev1.EventTypeWarning, EventDrainBlocked, msg))
		}
	case NodeDrained:
		err = s.ended(ctx, r, e.Node, corev1.ConditionTrue, ReasonDrained, corev1.EventTypeNormal, EventDrained, "drained: "+e.Message)
	case NodeIncomplete:
		err = s.ended(ctx, r, e.Node, corev1.ConditionFalse, ReasonIncomplete, corev1.EventTypeWarning, EventDrainStopped, "drain stopped: "+e.Message)
	case NodeRefused:
		err = s.ended(ctx, r, e.Node, corev1.ConditionFalse, ReasonRefused, corev1.EventTypeWarning, EventDrainStopped, "drain refused: "+e.Message)
	}
	if err != nil {
		s.mu.Lock()
		s.errs = append(s.errs, err)
		s.mu.Unlock()
	}
}

// ended writes the end of a node's drain: DrainInProgress False, Drained as it ended, and
// the Event that says so.
func (s *nodeStatus) ended(ctx context.Context, r *nodeRecord, node string, drained corev1.ConditionStatus, reason, eventType, eventReason, msg string) error {
	return errors.Join(
		s.conditions(ctx, r, node,
			s.condition(r, corev1.NodeDrainInProgress, corev1.ConditionFalse, reason, msg),
			s.condition(r, corev1.NodeDrained, drained, reason, msg)),
		s.event(ctx, r, node, eventType, eventReason, msg))
}

// describeBlock says what stops a pod, in the words the progress uses.
func describeBlock(e Event) string {
	switch e.Kind {
	case Blocked:
		return "eviction refused, retrying: " + e.Message
	case NoRoom:
		return "kept, its replacement would fit on no other node: " + e.Message
	}
	return "not evicted: " + e.Message
}

// err is every write that failed, each said once: the drain goes on without them.
func (s *nodeStatus) err() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	var out []error
	for _, e := range s.errs {
		if !seen[e.Error()] {
			seen[e.Error()] = true
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return fmt.Errorf("writing the nodes' drain conditions and Events: %w", errors.Join(out...))
}

// read takes the node's UID, for its Events, and its conditions as they are, so that a
// condition that keeps its status keeps its lastTransitionTime.
func (s *nodeStatus) read(ctx context.Context, r *nodeRecord, node string) error {
	n, err := s.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading node %s: %w", node, err)
	}
	r.uid = n.UID
	r.conds = map[corev1.NodeConditionType]corev1.NodeCondition{}
	for _, c := range n.Status.Conditions {
		r.conds[c.Type] = c
	}
	return nil
}

// condition is the condition to write, or nil when the node has it already.
func (s *nodeStatus) condition(r *nodeRecord, t corev1.NodeConditionType, status corev1.ConditionStatus, reason, msg string) *corev1.NodeCondition {
	old, had := r.conds[t]
	if had && old.Status == status && old.Reason == reason && old.Message == msg {
		return nil
	}
	now := metav1.NewTime(s.clock.Now())
	c := corev1.NodeCondition{Type: t, Status: status, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	if had && old.Status == status {
		c.LastTransitionTime = old.LastTransitionTime
	}
	return &c
}

// conditions writes the changed conditions through nodes/status with a strategic merge
// patch: conditions merge by type, so the kubelet's (kwok's) and other admins' stay.
func (s *nodeStatus) conditions(ctx context.Context, r *nodeRecord, node string, conds ...*corev1.NodeCondition) error {
	var changed []corev1.NodeCondition
	for _, c := range conds {
		if c != nil {
			changed = append(changed, *c)
		}
	}
	if len(changed) == 0 || r.conds == nil {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": changed}})
	if err != nil {
		return err
	}
	if _, err := s.client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("setting the conditions of node %s: %w", node, err)
	}
	for _, c := range changed {
		r.conds[c.Type] = c
	}
	return nil
}

// event writes an Event on the node, or counts up the one already written with the same
// reason and message, as the kubelet's recorder does, so that a drain blocked by turns
// by the same few things does not make a new Event at each turn.
func (s *nodeStatus) event(ctx context.Context, r *nodeRecord, node, typ, reason, msg string) error {
	if r.uid == "" {
		return nil
	}
	now := metav1.NewTime(s.clock.Now())
	key := reason + "\x00" + msg
	if old := r.events[key]; old != nil {
		patch, err := json.Marshal(map[string]any{"count": old.Count + 1, "lastTimestamp": now})
		if err != nil {
			return err
		}
		ev, err := s.client.CoreV1().Events(eventNamespace).Patch(ctx, old.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("counting Event %s on node %s: %w", reason, node, err)
		}
		r.events[key] = ev
		return nil
	}
	ev, err := s.client.CoreV1().Events(eventNamespace).Create(ctx, &corev1.Event{
		// Named as the kubelet's recorder names them; the count keeps two Events written at
		// one instant apart.
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x.%d", node, now.UnixNano(), len(r.events)), Namespace: eventNamespace},
		InvolvedObject:      corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: node, UID: r.uid},
		Type:                typ,
		Reason:              reason,
		Message:             msg,
		Source:              corev1.EventSource{Component: "holdfast-drain"},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		ReportingController: "holdfast.dev/drain",
		ReportingInstance:   s.identity,
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("writing Event %s on node %s: %w", reason, node, err)
	}
	r.events[key] = ev
	return nil
}
