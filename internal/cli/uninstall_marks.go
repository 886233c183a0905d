package cli

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/drain"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// marks are the keys of holdfast's labels, annotations and taints on one object that
// uninstall removes, and a mark it keeps with the reason.
type marks struct {
	labels, annotations, taints []string
	kept, why                   string
}

func (m marks) empty() bool {
	return len(m.labels) == 0 && len(m.annotations) == 0 && len(m.taints) == 0
}

// nodeTaints are the taints holdfast puts on nodes that only steer the scheduler, and
// so go at once: the hand-off's, the lost node's (the node-lifecycle controller's own
// taints keep pods off a node that is really gone) and a drain's queued mark.
var nodeTaints = []string{holdfastv1alpha1.HandOffTaintKey, holdfastv1alpha1.LostTaintKey, drain.QueuedTaintKey}

// nodeMarks is what uninstall removes from a node. holdfast's out-of-service taint (the
// one its fenced annotation vouches for) goes with the annotation on a Ready node, as the
// operator would remove them; on a node that is not Ready it is kept: Kubernetes is still
// moving the node's pods and their volumes off it, and removing the taint would stop that
// while the machine may be running them. NodeDownAnnotation is a person's or an agent's
// proof, not holdfast's, and stays.
func nodeMarks(n *corev1.Node) marks {
	var m marks
	for _, t := range n.Spec.Taints {
		if slices.Contains(nodeTaints, t.Key) && !slices.Contains(m.taints, t.Key) {
			m.taints = append(m.taints, t.Key)
		}
	}
	if _, ok := n.Annotations[drain.RunAnnotation]; ok {
		m.annotations = append(m.annotations, drain.RunAnnotation)
	}
	if _, fenced := n.Annotations[holdfastv1alpha1.FencedAnnotation]; fenced {
		outOfService := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == holdfastv1alpha1.OutOfServiceTaintKey })
		switch {
		case !nodeReady(n) && outOfService:
			m.kept = holdfastv1alpha1.OutOfServiceTaintKey + " and " + holdfastv1alpha1.FencedAnnotation
			m.why = "the node is not Ready and its pods are being moved off it; remove them once it is back or gone"
		case outOfService:
			m.taints = append(m.taints, holdfastv1alpha1.OutOfServiceTaintKey)
			m.annotations = append(m.annotations, holdfastv1alpha1.FencedAnnotation)
		default:
			m.annotations = append(m.annotations, holdfastv1alpha1.FencedAnnotation)
		}
	}
	return m
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// withoutTaints returns taints without those of the keys.
func withoutTaints(taints []corev1.Taint, keys []string) []corev1.Taint {
	return slices.DeleteFunc(slices.Clone(taints), func(t corev1.Taint) bool { return slices.Contains(keys, t.Key) })
}

// podMarks is what uninstall removes from a pod: the zone label of zone-aware budgets,
// and holdfast's pod marks (Protect's do-not-disrupt, a hand-off's safe-to-evict) with
// the annotation that says they are holdfast's. One without it is someone else's and
// stays.
func podMarks(p *corev1.Pod) marks {
	var m marks
	if _, ok := p.Labels[holdfastv1alpha1.ZoneLabel]; ok {
		m.labels = append(m.labels, holdfastv1alpha1.ZoneLabel)
	}
	for _, mark := range policy.PodMarks {
		if _, ok := p.Annotations[mark.By]; ok {
			if _, ok := p.Annotations[mark.Key]; ok {
				m.annotations = append(m.annotations, mark.Key)
			}
			m.annotations = append(m.annotations, mark.By)
		}
	}
	return m
}

// workloadMarks is what uninstall removes from a Deployment or StatefulSet: the record
// of its last rebalancing move. The annotations that opt it into rebalancing are its
// owner's and stay.
func workloadMarks(annotations map[string]string) marks {
	var m marks
	if _, ok := annotations[holdfastv1alpha1.LastRebalanceAnnotation]; ok {
		m.annotations = []string{holdfastv1alpha1.LastRebalanceAnnotation}
	}
	return m
}

// removalPatch is the JSON merge patch that removes the labels and annotations of m.
func removalPatch(m marks) map[string]any {
	meta := map[string]any{}
	remove := func(field string, keys []string) {
		if len(keys) == 0 {
			return
		}
		nulls := map[string]any{}
		for _, k := range keys {
			nulls[k] = nil
		}
		meta[field] = nulls
	}
	remove("labels", m.labels)
	remove("annotations", m.annotations)
	return map[string]any{"metadata": meta}
}
