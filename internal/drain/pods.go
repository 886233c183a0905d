package drain

import (
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/holdfast-dev/holdfast/internal/availability"
)

// mirrorPodAnnotation marks the API's copy of a static pod (availability.MirrorPodAnnotation).
const mirrorPodAnnotation = availability.MirrorPodAnnotation

// Filter says which pods a drain may evict, with kubectl drain's rules and flags. It is
// availability's, which the planner uses too.
type Filter = availability.DrainFilter

// Verdict is what a drain does with a pod found on the node.
type Verdict = availability.DrainVerdict

// The verdicts.
const (
	// Evict the pod through the Eviction API.
	Evict = availability.DrainEvict
	// Skip leaves the pod on the node and does not count it as remaining.
	Skip = availability.DrainSkip
	// Refuse leaves the pod on the node and the node not drained, until a flag allows it.
	Refuse = availability.DrainRefuse
)

// Classification is a Verdict with the reason to show the user.
type Classification = availability.DrainClassification

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

// Answer is what the Eviction API's answer to an eviction means for the pod.
type Answer int

const (
	// AnsEvicted: the eviction was accepted; the pod is terminating.
	AnsEvicted Answer = iota
	// AnsGone: 404, the pod is deleted already.
	AnsGone
	// AnsConflict: 409, a failed UID precondition (the pod is gone) or a pod still there
	// (the API server's retries on a budget's status conflicts ran out, or the pod
	// changed under the request); only the pod itself says which.
	AnsConflict
	// AnsBudget: 429, a budget refused now; it says whether it ever will allow it.
	AnsBudget
	// AnsInternal: 500, which several budgets over the pod answer, as other faults do.
	AnsInternal
	// AnsNever: 403, 422 or 405, which no retry changes: the drain stops on the pod.
	AnsNever
	// AnsRetry: anything else, tried again after a backoff.
	AnsRetry
)

// AnswerOf classifies the error an eviction returned (nil when it was accepted).
func AnswerOf(err error) Answer {
	switch {
	case err == nil:
		return AnsEvicted
	case apierrors.IsNotFound(err):
		return AnsGone
	case apierrors.IsConflict(err):
		return AnsConflict
	case apierrors.IsTooManyRequests(err):
		return AnsBudget
	case apierrors.IsInternalError(err):
		return AnsInternal
	case apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsMethodNotSupported(err):
		return AnsNever
	}
	return AnsRetry
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

// BudgetBackoff returns how long to wait before the attempt-th retry of an eviction its
// budget refused: Backoff, except after the first refusal when the budget, read since,
// allows a disruption and the API server asked for no delay. The Eviction API then read
// the budget's status before the disruption controller had counted the last replacement
// Ready, and the eviction can go again at once: a second of backoff there is a second
// added to every round of a paced drain.
func BudgetBackoff(attempt int, retryAfter time.Duration, allows bool) time.Duration {
	if attempt == 1 && allows && retryAfter == 0 {
		return 0
	}
	return Backoff(attempt, retryAfter)
}
