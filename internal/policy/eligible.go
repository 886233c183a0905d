package policy

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
)

// placement is where companions may run: the required node affinity and the tolerations
// that decide eligibility, as the DaemonSet controller (or the scheduler, for a node
// selector target) would apply them.
type placement struct {
	nodeSelector map[string]string
	affinity     *corev1.Affinity
	// tolerations decide eligibility. For a DaemonSet they include the tolerations the
	// DaemonSet controller adds to every daemon pod.
	tolerations []corev1.Toleration
}

// placementOf returns the placement of a NodeCompanion's target. ds is nil for a node
// selector target.
func placementOf(nc *holdfastv1alpha1.NodeCompanion, ds *appsv1.DaemonSet) placement {
	if ds != nil {
		spec := ds.Spec.Template.Spec
		return placement{
			nodeSelector: spec.NodeSelector,
			affinity:     spec.Affinity,
			tolerations:  append(slices.Clone(spec.Tolerations), availability.DaemonTolerations(spec.HostNetwork)...),
		}
	}
	selector := make(map[string]string, len(nc.Spec.NodeSelector)+len(nc.Spec.Template.Spec.NodeSelector))
	for k, v := range nc.Spec.Template.Spec.NodeSelector {
		selector[k] = v
	}
	for k, v := range nc.Spec.NodeSelector {
		selector[k] = v
	}
	tolerations := append(slices.Clone(nc.Spec.Template.Spec.Tolerations), nc.Spec.Tolerations...)
	// Cordons are handled by the controller, not by eligibility: see decide.
	tolerations = append(tolerations, corev1.Toleration{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	return placement{nodeSelector: selector, affinity: nc.Spec.Template.Spec.Affinity, tolerations: tolerations}
}

// companionTolerations returns the tolerations companion pods get: the target's own, the
// NodeCompanion's, the template's, and the DaemonSet controller's pressure tolerations,
// so that companions can go wherever the target's pods are. None of them may tolerate a
// cordon: the scheduler must keep companions off cordoned nodes, or a drained node would
// get its companion straight back. A toleration of every taint (empty key, Exists) is
// therefore replaced by one toleration per taint key found on the eligible nodes.
func companionTolerations(nc *holdfastv1alpha1.NodeCompanion, ds *appsv1.DaemonSet, eligibleNodes []*corev1.Node) []corev1.Toleration {
	var in []corev1.Toleration
	if ds != nil {
		in = append(in, ds.Spec.Template.Spec.Tolerations...)
		for _, t := range availability.DaemonTolerations(ds.Spec.Template.Spec.HostNetwork) {
			if t.Effect == corev1.TaintEffectNoSchedule && t.Key != corev1.TaintNodeUnschedulable {
				in = append(in, t)
			}
		}
	}
	in = append(in, nc.Spec.Template.Spec.Tolerations...)
	in = append(in, nc.Spec.Tolerations...)

	var out []corev1.Toleration
	for _, t := range in {
		switch {
		case t.Key == corev1.TaintNodeUnschedulable:
			continue
		case t.Key == "" && t.Operator == corev1.TolerationOpExists:
			for _, n := range eligibleNodes {
				for _, taint := range n.Spec.Taints {
					if taint.Key == corev1.TaintNodeUnschedulable || (t.Effect != "" && t.Effect != taint.Effect) {
						continue
					}
					out = append(out, corev1.Toleration{Key: taint.Key, Operator: corev1.TolerationOpExists, Effect: taint.Effect, TolerationSeconds: t.TolerationSeconds})
				}
			}
		default:
			out = append(out, t)
		}
	}
	// Sorted and deduplicated, so that the same inputs always give the same template and
	// the Deployment is not rolled out for nothing.
	slices.SortFunc(out, compareTolerations)
	return slices.CompactFunc(out, func(a, b corev1.Toleration) bool { return compareTolerations(a, b) == 0 })
}

func compareTolerations(a, b corev1.Toleration) int {
	for _, c := range [][2]string{
		{a.Key, b.Key}, {string(a.Operator), string(b.Operator)}, {a.Value, b.Value}, {string(a.Effect), string(b.Effect)},
	} {
		if c[0] != c[1] {
			if c[0] < c[1] {
				return -1
			}
			return 1
		}
	}
	as, bs := int64(-1), int64(-1)
	if a.TolerationSeconds != nil {
		as = *a.TolerationSeconds
	}
	if b.TolerationSeconds != nil {
		bs = *b.TolerationSeconds
	}
	switch {
	case as < bs:
		return -1
	case as > bs:
		return 1
	}
	return 0
}
