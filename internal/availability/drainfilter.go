package availability

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// MirrorPodAnnotation marks the API's copy of a static pod; the kubelet owns the pod and
// recreates it, so evicting it achieves nothing (kubectl drain skips it too).
const MirrorPodAnnotation = "kubernetes.io/config.mirror"

// DrainFilter says which pods a drain evicts, with kubectl drain's rules and flags. Both
// holdfast drain and the planner use it, so that a plan refuses what the drain refuses.
type DrainFilter struct {
	// Force lets the drain evict pods that no controller will recreate.
	Force bool
	// DeleteEmptyDirData lets the drain evict pods whose emptyDir volumes are lost with them.
	DeleteEmptyDirData bool
	// PodSelector, when set, limits the drain to the pods it matches (kubectl drain
	// --pod-selector); the others stay on the node and do not keep it from being drained.
	PodSelector labels.Selector
}

// DrainVerdict is what a drain does with a pod found on the node.
type DrainVerdict int

const (
	// DrainEvict evicts the pod through the Eviction API.
	DrainEvict DrainVerdict = iota
	// DrainSkip leaves the pod on the node and does not count it as remaining.
	DrainSkip
	// DrainRefuse leaves the pod on the node and the node not drained, until a flag allows it.
	DrainRefuse
)

// DrainRule names the kubectl drain rule behind a verdict.
type DrainRule string

// kubectl drain's rules, in kubectl's order.
const (
	RuleDaemonSetPod DrainRule = "DaemonSetPod"
	RuleMirrorPod    DrainRule = "MirrorPod"
	RuleFinished     DrainRule = "Finished"
	RuleEmptyDirData DrainRule = "EmptyDirData"
	RuleNoController DrainRule = "NoController"
	// RuleNotSelected leaves a pod that --pod-selector does not match, as kubectl drain
	// never lists it.
	RuleNotSelected DrainRule = "NotSelected"
)

// DrainClassification is a verdict with the rule and the reason to show the user.
type DrainClassification struct {
	Verdict DrainVerdict
	Reason  string
	Rule    DrainRule
}

// Classify applies kubectl drain's filters in kubectl's order: pods --pod-selector does
// not match are left alone; DaemonSet pods and mirror
// pods are skipped (DaemonSet pods come back on the node anyway, as with
// --ignore-daemonsets); pods that have finished lose nothing and are evicted; pods with
// emptyDir data and pods with no controller are refused unless the matching flag is given.
func (f DrainFilter) Classify(pod *corev1.Pod) DrainClassification {
	if f.PodSelector != nil && !f.PodSelector.Matches(labels.Set(pod.Labels)) {
		return DrainClassification{Verdict: DrainSkip, Rule: RuleNotSelected, Reason: "not matched by --pod-selector " + f.PodSelector.String()}
	}
	if c, ok := skipped(pod); ok {
		return c
	}
	if Finished(pod) {
		return DrainClassification{Verdict: DrainEvict, Reason: "finished", Rule: RuleFinished}
	}
	if r := f.Refusals(pod); len(r) > 0 {
		return r[0]
	}
	return DrainClassification{Verdict: DrainEvict}
}

// Refusals lists every rule that refuses the pod with these flags, in kubectl's order,
// for a plan that names them all.
func (f DrainFilter) Refusals(pod *corev1.Pod) []DrainClassification {
	var out []DrainClassification
	if !f.DeleteEmptyDirData {
		if v := EmptyDirVolume(&pod.Spec); v != "" {
			out = append(out, DrainClassification{Verdict: DrainRefuse, Rule: RuleEmptyDirData,
				Reason: fmt.Sprintf("emptyDir volume %q would lose its data (use --delete-emptydir-data)", v)})
		}
	}
	if metav1.GetControllerOfNoCopy(pod) == nil && !f.Force {
		out = append(out, DrainClassification{Verdict: DrainRefuse, Rule: RuleNoController, Reason: "no controller would recreate the pod (use --force)"})
	}
	return out
}

// SkippedByDrain reports whether a drain leaves the pod alone: a DaemonSet's pod or a
// static pod's mirror.
func SkippedByDrain(pod *corev1.Pod) bool {
	_, ok := skipped(pod)
	return ok
}

func skipped(pod *corev1.Pod) (DrainClassification, bool) {
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil && ref.Kind == "DaemonSet" {
		return DrainClassification{Verdict: DrainSkip, Rule: RuleDaemonSetPod, Reason: "managed by DaemonSet " + ref.Name}, true
	}
	if _, ok := pod.Annotations[MirrorPodAnnotation]; ok {
		return DrainClassification{Verdict: DrainSkip, Rule: RuleMirrorPod, Reason: "mirror pod of a static pod"}, true
	}
	return DrainClassification{}, false
}

// Finished reports whether the pod has succeeded or failed: it runs no more.
func Finished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// EmptyDirVolume names the pod's first emptyDir volume, or "".
func EmptyDirVolume(spec *corev1.PodSpec) string {
	for _, v := range spec.Volumes {
		if v.EmptyDir != nil {
			return v.Name
		}
	}
	return ""
}
