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
	// IgnoreDaemonSets lets the drain leave DaemonSet pods on the node; without it a
	// DaemonSet pod refuses the node, as kubectl drain does without --ignore-daemonsets.
	IgnoreDaemonSets bool
	// PodSelector, when set, limits the drain to the pods it matches (kubectl drain
	// --pod-selector); the others stay on the node and do not keep it from being drained.
	PodSelector labels.Selector
}

// DaemonSets reports whether the DaemonSet namespace/name exists. kubectl drain reads a
// DaemonSet pod's controller: a pod whose DaemonSet is gone is an orphan, evicted with
// --force and refused without it.
type DaemonSets func(namespace, name string) bool

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
	// RuleNoController refuses a pod nothing would recreate: one with no controller, or a
	// DaemonSet's orphan.
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
// not match are left alone (kubectl never lists them); a DaemonSet pod refuses the node
// unless --ignore-daemonsets leaves it, and one whose DaemonSet is gone needs --force;
// mirror pods are skipped; pods that have finished lose nothing and are evicted; pods
// with emptyDir data and pods with no controller are refused unless the matching flag is
// given. daemonSets says which DaemonSets exist; nil takes every one a pod names as there.
func (f DrainFilter) Classify(pod *corev1.Pod, daemonSets DaemonSets) DrainClassification {
	if f.PodSelector != nil && !f.PodSelector.Matches(labels.Set(pod.Labels)) {
		return DrainClassification{Verdict: DrainSkip, Rule: RuleNotSelected, Reason: "not matched by --pod-selector " + f.PodSelector.String()}
	}
	daemon, isDaemon := f.daemonSetPod(pod, daemonSets)
	if isDaemon && daemon.Verdict != DrainEvict {
		return daemon
	}
	if _, ok := pod.Annotations[MirrorPodAnnotation]; ok {
		return DrainClassification{Verdict: DrainSkip, Rule: RuleMirrorPod, Reason: "mirror pod of a static pod"}
	}
	if Finished(pod) {
		return DrainClassification{Verdict: DrainEvict, Reason: "finished", Rule: RuleFinished}
	}
	if r := f.Refusals(pod, daemonSets); len(r) > 0 {
		return r[0]
	}
	if isDaemon {
		return daemon
	}
	return DrainClassification{Verdict: DrainEvict}
}

// daemonSetPod is kubectl's DaemonSet rule for a running pod a DaemonSet controls: left
// with --ignore-daemonsets, refused without; an orphan (its DaemonSet gone) evicted with
// --force, refused without. ok is false for any other pod.
func (f DrainFilter) daemonSetPod(pod *corev1.Pod, daemonSets DaemonSets) (DrainClassification, bool) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != "DaemonSet" || Finished(pod) {
		return DrainClassification{}, false
	}
	gone := daemonSets != nil && !daemonSets(pod.Namespace, ref.Name)
	switch {
	case gone && f.Force:
		return DrainClassification{Verdict: DrainEvict, Rule: RuleNoController, Reason: "DaemonSet " + ref.Name + " is gone: evicted as an orphan (--force)"}, true
	case gone:
		return DrainClassification{Verdict: DrainRefuse, Rule: RuleNoController, Reason: "DaemonSet " + ref.Name + " is gone: no controller would recreate the pod (use --force)"}, true
	case f.IgnoreDaemonSets:
		return DrainClassification{Verdict: DrainSkip, Rule: RuleDaemonSetPod, Reason: "managed by DaemonSet " + ref.Name}, true
	}
	return DrainClassification{Verdict: DrainRefuse, Rule: RuleDaemonSetPod, Reason: "managed by DaemonSet " + ref.Name + ", which would put it back on the node (use --ignore-daemonsets)"}, true
}

// Refusals lists every rule that refuses the pod with these flags, in kubectl's order,
// for a plan that names them all. A DaemonSet pod refused or left is given no other
// rule, as kubectl gives it none; an orphan let go by --force still needs
// --delete-emptydir-data for its emptyDir data.
func (f DrainFilter) Refusals(pod *corev1.Pod, daemonSets DaemonSets) []DrainClassification {
	if c, ok := f.daemonSetPod(pod, daemonSets); ok && c.Verdict == DrainRefuse {
		return []DrainClassification{c}
	} else if ok && c.Verdict == DrainSkip {
		return nil
	}
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

// SkippedByDrain reports whether a drain given --ignore-daemonsets leaves the running pod
// alone: a DaemonSet's pod or a static pod's mirror.
func SkippedByDrain(pod *corev1.Pod) bool {
	return DrainFilter{IgnoreDaemonSets: true}.Classify(pod, nil).Verdict == DrainSkip
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
