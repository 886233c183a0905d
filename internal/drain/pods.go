package drain

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mirrorPodAnnotation marks the API's copy of a static pod; the kubelet owns the pod and
// recreates it, so evicting it achieves nothing (kubectl skips it too).
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// Filter says which pods a drain may evict, with kubectl drain's rules and flags.
type Filter struct {
	// Force lets the drain evict pods that no controller will recreate.
	Force bool
	// DeleteEmptyDirData lets the drain evict pods whose emptyDir volumes are lost with them.
	DeleteEmptyDirData bool
}

// Verdict is what a drain does with a pod found on the node.
type Verdict int

const (
	// Evict the pod through the Eviction API.
	Evict Verdict = iota
	// Skip leaves the pod on the node and does not count it as remaining.
	Skip
	// Refuse leaves the pod on the node and the node not drained, until a flag allows it.
	Refuse
)

// Classification is a Verdict with the reason to show the user.
type Classification struct {
	Verdict Verdict
	Reason  string
}

// Classify applies kubectl drain's filters in kubectl's order: DaemonSet pods and mirror
// pods are skipped (DaemonSet pods come back on the node anyway, as with
// --ignore-daemonsets); pods with emptyDir data and pods with no controller are refused
// unless the matching flag is given. Pods that have finished lose nothing and are evicted.
func (f Filter) Classify(pod *corev1.Pod) Classification {
	if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "DaemonSet" {
		return Classification{Skip, "managed by DaemonSet " + ref.Name}
	}
	if _, ok := pod.Annotations[mirrorPodAnnotation]; ok {
		return Classification{Skip, "mirror pod of a static pod"}
	}
	if finished(pod) {
		return Classification{Evict, "finished"}
	}
	if !f.DeleteEmptyDirData {
		for _, v := range pod.Spec.Volumes {
			if v.EmptyDir != nil {
				return Classification{Refuse, fmt.Sprintf("emptyDir volume %q would lose its data (use --delete-emptydir-data)", v.Name)}
			}
		}
	}
	if metav1.GetControllerOf(pod) == nil && !f.Force {
		return Classification{Refuse, "no controller would recreate the pod (use --force)"}
	}
	return Classification{Evict, ""}
}

func finished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// PodState is what a drain knows about one pod it must move off the node.
type PodState struct {
	// Gone is true once the pod is deleted (or replaced by a new pod of the same name).
	Gone bool
	// Terminating is true once the pod has a deletion timestamp: evicted by this drain,
	// by an earlier run of it, or by someone else.
	Terminating bool
	// Stopped is why the drain gave up on the pod, when it did.
	Stopped string
	// RetryAt is when a refused eviction may be tried again.
	RetryAt time.Time
	// NoRoom is why the pod's replacement would fit on no other node now, when it would
	// not: the pod is kept rather than evicted into Pending, spending its budget for
	// nothing.
	NoRoom string
	// PacingOpen is true when the pod's workload has no earlier eviction of this drain
	// whose replacement is not yet Ready (always true without pacing).
	PacingOpen bool
}

// Action is what to do next with a pod.
type Action int

const (
	// ActEvict asks the Eviction API to evict the pod now.
	ActEvict Action = iota
	// ActWaitRetry waits until RetryAt after a refusal.
	ActWaitRetry
	// ActWaitPacing waits until the replacement of the workload's previous eviction is Ready.
	ActWaitPacing
	// ActWaitRoom keeps the pod until its replacement would fit on another node.
	ActWaitRoom
	// ActWaitGone waits for the evicted pod to be deleted.
	ActWaitGone
	// ActDone means the pod has left the node.
	ActDone
	// ActStopped means the drain will not evict the pod; the node stays not drained.
	ActStopped
)

// Next decides what to do with a pod given its state. A pod that is already gone is done
// whatever else is known about it; one that is terminating needs no new eviction.
func Next(s PodState, now time.Time) Action {
	switch {
	case s.Gone:
		return ActDone
	case s.Terminating:
		return ActWaitGone
	case s.Stopped != "":
		return ActStopped
	case s.NoRoom != "":
		return ActWaitRoom
	case now.Before(s.RetryAt):
		return ActWaitRetry
	case !s.PacingOpen:
		return ActWaitPacing
	}
	return ActEvict
}

// Backoff bounds the retries of a refused eviction.
const (
	minBackoff = time.Second
	maxBackoff = 8 * time.Second
)

// Backoff returns how long to wait before the attempt-th retry of a refused eviction
// (attempt counts from 1): doubling from one second up to maxBackoff, and never less than
// the Retry-After the API server asked for.
func Backoff(attempt int, retryAfter time.Duration) time.Duration {
	d := maxBackoff
	if attempt < 4 {
		d = minBackoff << max(attempt-1, 0)
	}
	return max(d, retryAfter)
}
