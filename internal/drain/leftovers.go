package drain

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// RunAnnotation is set, on every node a drain run marks queued or cordons, to the run's
// Lease (namespace/name) for as long as the run lives: while the Lease is held, the node's
// DrainInProgress, Drained and queued taint are the run's to keep. A run that ends takes
// the annotation off; one killed leaves it, with a Lease that expires.
const RunAnnotation = "holdfast.dev/drain-run"

// ownReasons are the reasons holdfast gives its DrainInProgress and Drained conditions: a
// condition with another reason was written by another drainer and is not holdfast's to
// clear.
var ownReasons = []string{ReasonDraining, ReasonBlocked, ReasonDrained, ReasonIncomplete, ReasonRefused}

// Leftover is what a drain left on a node that no drain keeps any more.
type Leftover struct {
	// Conditions are holdfast's maintenance conditions to remove, sorted.
	Conditions []corev1.NodeConditionType
	// QueuedTaint and RunAnnotation say to remove the queued taint and the annotation.
	QueuedTaint, RunAnnotation bool
}

// Empty reports whether there is nothing to clear.
func (l Leftover) Empty() bool {
	return len(l.Conditions) == 0 && !l.QueuedTaint && !l.RunAnnotation
}

// Leftovers decides what of a drain's marks on the node to clear, given whether the run
// that claims it (RunAnnotation) still holds its Lease:
//
//   - the queued taint and the annotation once the run is gone: a queued node is not
//     cordoned, so only the run's life says whether it still waits its turn;
//   - holdfast's DrainInProgress and Drained once the node is schedulable again and its
//     drain not in progress (uncordoned after the drain), or once its drain is in
//     progress and the run gone (a drain killed). A drain that ended on a cordoned node
//     keeps them, the truth about that drain, until the node is uncordoned.
//
// holdfast uncordon asks it of the node as it is once uncordoned, the run taken as gone.
func Leftovers(node *corev1.Node, runLive bool) Leftover {
	var out Leftover
	own := map[corev1.NodeConditionType]corev1.NodeCondition{}
	for _, c := range node.Status.Conditions {
		if (c.Type == corev1.NodeDrainInProgress || c.Type == corev1.NodeDrained) && slices.Contains(ownReasons, c.Reason) {
			own[c.Type] = c
		}
	}
	inProgress := own[corev1.NodeDrainInProgress].Status == corev1.ConditionTrue
	if len(own) > 0 && ((!inProgress && !node.Spec.Unschedulable) || (inProgress && !runLive)) {
		out.Conditions = slices.Sorted(maps.Keys(own))
	}
	if !runLive {
		_, out.QueuedTaint = WithQueuedTaint(node.Spec.Taints, false)
		_, out.RunAnnotation = node.Annotations[RunAnnotation]
	}
	return out
}

// String names what there is to clear, as "condition DrainInProgress, taint ...".
func (l Leftover) String() string {
	var parts []string
	for _, c := range l.Conditions {
		parts = append(parts, "condition "+string(c))
	}
	if l.QueuedTaint {
		parts = append(parts, "taint "+QueuedTaintKey)
	}
	if l.RunAnnotation {
		parts = append(parts, "annotation "+RunAnnotation)
	}
	return strings.Join(parts, ", ")
}

// Apply takes the taint and the annotation off node, for a write of its spec and
// metadata; the conditions go through StatusPatch.
func (l Leftover) Apply(node *corev1.Node) {
	if l.QueuedTaint {
		node.Spec.Taints, _ = WithQueuedTaint(node.Spec.Taints, false)
	}
	if l.RunAnnotation {
		delete(node.Annotations, RunAnnotation)
	}
}

// StatusPatch is the strategic merge patch of nodes/status that removes the conditions,
// by type, leaving every other condition as it is; nil when there are none.
func (l Leftover) StatusPatch() []byte {
	if len(l.Conditions) == 0 {
		return nil
	}
	conds := make([]map[string]string, len(l.Conditions))
	for i, t := range l.Conditions {
		conds[i] = map[string]string{"type": string(t), "$patch": "delete"}
	}
	// Maps of strings always marshal.
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
	return patch
}
