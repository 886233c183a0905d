package nodecompanion

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/announce"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// Event reasons, one per decision a human would want to know about.
const (
	EventBudgetHeld     = "BudgetHeld"
	EventBudgetReleased = "BudgetReleased"
	EventNodeExcluded   = "NodeExcluded"
	EventNodeIncluded   = "NodeIncluded"
	EventGuardHeld      = "GuardHeld"
	EventGuardCleared   = "GuardCleared"
	EventTargetNotFound = "TargetNotFound"
	EventTargetFound    = "TargetFound"
	EventScaled         = "Scaled"
	EventStalePod       = "StalePodDeleted"
)

// statusEvents returns the Events that explain the move from one status to the next, in
// a stable order. They are derived from status so that a repeated reconcile, or a
// restarted operator, does not repeat them.
func statusEvents(old, cur holdfastv1alpha1.NodeCompanionStatus) []announce.Event {
	var out []announce.Event
	oldDrained := map[string]bool{}
	for _, d := range old.Drained {
		oldDrained[d.Node] = true
	}
	curDrained := map[string]bool{}
	for _, d := range cur.Drained {
		curDrained[d.Node] = true
		if !oldDrained[d.Node] {
			out = append(out, announce.Normal(EventBudgetHeld, fmt.Sprintf(
				"node %s was drained and is still cordoned: it holds the disruption budget since %s, so other nodes cannot be drained; uncordon or delete it to release the budget",
				d.Node, d.Since.UTC().Format(time.RFC3339))).About(nodeRef(d.Node)))
		}
	}
	for _, d := range old.Drained {
		if !curDrained[d.Node] {
			out = append(out, announce.Normal(EventBudgetReleased, fmt.Sprintf("node %s no longer holds the disruption budget", d.Node)).About(nodeRef(d.Node)))
		}
	}

	oldExcluded, curExcluded := gapNodes(old.Excluded), gapNodes(cur.Excluded)
	for _, n := range cur.Excluded {
		if !oldExcluded[n.Node] {
			out = append(out, announce.Normal(EventNodeExcluded, "node "+n.Node+" is "+n.Message).About(nodeRef(n.Node)))
		}
	}
	for _, n := range old.Excluded {
		if !curExcluded[n.Node] {
			out = append(out, announce.Normal(EventNodeIncluded, "node "+n.Node+" counts again").About(nodeRef(n.Node)))
		}
	}

	for _, n := range cur.Guarded {
		if !slices.Contains(old.Guarded, n) {
			out = append(out, announce.Normal(EventGuardHeld, "the companion on node "+n+" holds the guard: evictions from "+n+" are refused").About(nodeRef(n)))
		}
	}
	for _, n := range old.Guarded {
		if !slices.Contains(cur.Guarded, n) {
			out = append(out, announce.Normal(EventGuardCleared, "the companion on node "+n+" cleared the guard: "+n+" can be drained").About(nodeRef(n)))
		}
	}

	oldMissing := readyCondition(old).Reason == policy.ReasonTargetNotFound
	curMissing := readyCondition(cur).Reason == policy.ReasonTargetNotFound
	switch {
	case curMissing && !oldMissing:
		out = append(out, announce.Warning(EventTargetNotFound, readyCondition(cur).Message))
	case oldMissing && !curMissing:
		out = append(out, announce.Normal(EventTargetFound, "the target DaemonSet is back: companions follow it again"))
	}
	return out
}

func gapNodes(gaps []holdfastv1alpha1.NodeGap) map[string]bool {
	m := make(map[string]bool, len(gaps))
	for _, g := range gaps {
		m[g.Node] = true
	}
	return m
}

// readyCondition returns the Ready condition of a status, or an empty one.
func readyCondition(st holdfastv1alpha1.NodeCompanionStatus) metav1.Condition {
	if c := meta.FindStatusCondition(st.Conditions, holdfastv1alpha1.ConditionReady); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// nodeRef refers to a node, so that the Events of one reason about different nodes,
// often recorded in one pass, stay apart.
func nodeRef(name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: name}
}
