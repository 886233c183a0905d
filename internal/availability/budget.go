package availability

import (
	"fmt"
	"slices"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// DeletionTimeout is how long the disruption controller keeps counting an evicted pod as
// disrupted while it waits for the pod's deletion (pkg/controller/disruption).
const DeletionTimeout = 2 * time.Minute

// Budget is one PodDisruptionBudget with the pods it covers and the four numbers the
// disruption controller writes into its status, computed here from the objects.
type Budget struct {
	Namespace string
	Name      string
	PDB       *policyv1.PodDisruptionBudget

	// Selector is nil when SelectorErr says why the selector could not be parsed; such a
	// budget covers no pod, as in the disruption controller.
	Selector    labels.Selector
	SelectorErr error

	// Members are the pods (or, from manifests, the templates) the selector matches.
	Members []*Member
	// Workloads are the distinct controllers of Members, in the model's order.
	Workloads []*Workload

	// Status is what the disruption controller would write now.
	Status Status
	// AtFullHealth is the disruptions the budget would allow with every expected pod
	// healthy: zero means it can never allow one, whatever the pods do (NeverAllows).
	AtFullHealth int32
	// SyncError is why the disruption controller cannot compute this budget, when it
	// cannot; it then writes DisruptionsAllowed 0 and a SyncFailed condition, so every
	// eviction is refused.
	SyncError string
	// UnmanagedPods are covered pods with no controller; a percentage or maxUnavailable
	// cannot count them, so the controller asks for an integer minAvailable.
	UnmanagedPods []string
	// Projected is true when the numbers come from pod templates (manifests) rather
	// than from pods.
	Projected bool
}

// Status holds the four numbers of a PodDisruptionBudget's status.
type Status struct {
	ExpectedPods       int32 `json:"expectedPods"`
	DesiredHealthy     int32 `json:"desiredHealthy"`
	CurrentHealthy     int32 `json:"currentHealthy"`
	DisruptionsAllowed int32 `json:"disruptionsAllowed"`
}

// Policy is the DisruptionPolicy that manages the budget (its holdfast.dev/disruption-policy
// label), empty for a user's own. A managed budget that allows nothing at full health is
// not a deadlock: the policy's single-replica strategy makes room for a drain.
func (b *Budget) Policy() string {
	return ManagedBy(b.PDB)
}

// UsesScale reports whether the budget's arithmetic needs its pods' controllers' scale:
// maxUnavailable, or minAvailable as a percentage. Only an integer minAvailable counts pods.
func (b *Budget) UsesScale() bool {
	return UsesScale(b.PDB.Spec)
}

// compute fills Status, AtFullHealth and SyncError the way the disruption controller's
// trySync does: expected and desired from the spec, current from healthy pods.
func (b *Budget) compute(now time.Time) {
	expected, desired, err := b.expectedAndDesired()
	if err != nil {
		// The controller's failSafe leaves the numbers of a new budget at zero.
		b.SyncError = err.Error()
		b.Status = Status{}
		return
	}
	var current int32
	for _, m := range b.Members {
		current += b.healthy(m, now)
	}
	b.Status = Status{ExpectedPods: expected, DesiredHealthy: desired, CurrentHealthy: current}
	b.Status.DisruptionsAllowed = DisruptionsAllowed(expected, desired, current)
	b.AtFullHealth = DisruptionsAllowed(expected, desired, expected)
}

func (b *Budget) expectedAndDesired() (expected, desired int32, err error) {
	spec := b.PDB.Spec
	var pods, scale int32
	if UsesScale(spec) {
		if scale, err = b.expectedScale(); err != nil {
			return 0, 0, err
		}
	}
	for _, m := range b.Members {
		pods += m.Count
	}
	expected = ExpectedPods(spec, pods, scale)
	desired, err = DesiredHealthy(spec, expected)
	if err != nil {
		return 0, 0, err
	}
	return expected, desired, nil
}

// expectedScale sums the scale of the distinct controllers of the covered pods. Pods with
// no controller are left out (and listed), as the controller does.
func (b *Budget) expectedScale() (int32, error) {
	var sum int32
	// Budgets cover few workloads: a slice is cheaper than a map here.
	var seen []*Workload
	for _, m := range b.Members {
		switch {
		case m.Workload != nil:
			if slices.Contains(seen, m.Workload) {
				continue
			}
			seen = append(seen, m.Workload)
			if m.Workload.ScaleError != "" {
				return 0, fmt.Errorf("%s", m.Workload.ScaleError)
			}
			sum += m.Workload.Scale
		case m.UnknownOwner != "":
			return 0, fmt.Errorf("%s", m.UnknownOwner)
		default:
			b.UnmanagedPods = append(b.UnmanagedPods, m.Name)
		}
	}
	return sum, nil
}

// healthy counts the member's pods that the controller counts as healthy: ready, not being
// deleted, and not evicted in the last DeletionTimeout according to the budget's status.
func (b *Budget) healthy(m *Member, now time.Time) int32 {
	if !m.Ready {
		return 0
	}
	if m.Pod != nil {
		if t, ok := b.PDB.Status.DisruptedPods[m.Pod.Name]; ok && t.Add(DeletionTimeout).After(now) {
			return 0
		}
	}
	return m.Count
}
