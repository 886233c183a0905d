package policy

import (
	"maps"
	"slices"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
)

// PodAnnotation sets one of holdfast's pod marks on a pod, its annotation at "true"
// beside the one that names the policy (PodMark.By), or removes both (Set false).
type PodAnnotation struct {
	Pod  string
	Mark PodMark
	Set  bool
}

// PodMark is an annotation of another project's that holdfast puts on pods, "true",
// with a mark of its own that names the policy that put it there: holdfast removes only
// what it marked, so a user's annotation stays.
type PodMark struct {
	Key, By string
}

var (
	// DoNotDisrupt is Protect's karpenter.sh/do-not-disrupt.
	DoNotDisrupt = PodMark{Key: holdfastv1alpha1.DoNotDisruptAnnotation, By: holdfastv1alpha1.DoNotDisruptByAnnotation}
	// SafeToEvict is cluster-autoscaler's safe-to-evict, on a Surge single replica's pod
	// while its node is handed over to cluster-autoscaler (caMark).
	SafeToEvict = PodMark{Key: availability.AnnotationSafeToEvict, By: holdfastv1alpha1.SafeToEvictByAnnotation}
	// PodMarks are every mark holdfast puts on pods.
	PodMarks = []PodMark{DoNotDisrupt, SafeToEvict}
)

// Marks are the pods holdfast marked in a namespace: by mark, pod name to the policy
// that marked it.
type Marks map[PodMark]map[string]string

// Read adds the marks a pod's annotations carry.
func (m Marks) Read(pod string, annotations map[string]string) {
	for _, mark := range PodMarks {
		if by := annotations[mark.By]; by != "" {
			if m[mark] == nil {
				m[mark] = map[string]string{}
			}
			m[mark][pod] = by
		}
	}
}

// unmark are the changes that take holdfast's marks off the pods of marked whose policy
// ours says is ours, except the pods kept marked (kept[mark][pod]): Protect's
// do-not-disrupt off a workload switched to Surge or Skip, scaled to several replicas,
// no longer selected or escaped, safe-to-evict off a pod whose hand-off to
// cluster-autoscaler is over, and both off the pods of a policy deleted, so that
// neither keeps Karpenter off a node for good nor lets cluster-autoscaler pass a pod it
// would keep. Only holdfast's own annotation is marked, so a user's stays.
func unmark(marked Marks, ours func(policy string) bool, kept map[PodMark]map[string]bool) []PodAnnotation {
	var out []PodAnnotation
	for _, mark := range PodMarks {
		for _, pod := range slices.Sorted(maps.Keys(marked[mark])) {
			if ours(marked[mark][pod]) && !kept[mark][pod] {
				out = append(out, PodAnnotation{Pod: pod, Mark: mark})
			}
		}
	}
	return out
}
