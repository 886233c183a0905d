package availability

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
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
	// AtFullHealth is the disruptions the budget would allow with every covered pod
	// healthy: zero means it can never allow one, whatever the pods do.
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
	return b.PDB.Labels[holdfastv1alpha1.PolicyLabel]
}

// UsesScale reports whether the budget's arithmetic needs its pods' controllers' scale:
// maxUnavailable, or minAvailable as a percentage. Only an integer minAvailable counts pods.
func (b *Budget) UsesScale() bool {
	spec := b.PDB.Spec
	return spec.MaxUnavailable != nil || (spec.MinAvailable != nil && spec.MinAvailable.Type == intstr.String)
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
	var current, all int32
	for _, m := range b.Members {
		all += m.Count - m.terminating()
		current += b.healthy(m, now)
	}
	b.Status = Status{ExpectedPods: expected, DesiredHealthy: desired, CurrentHealthy: current}
	b.Status.DisruptionsAllowed = allowed(expected, desired, current)
	b.AtFullHealth = allowed(expected, desired, all)
}

func allowed(expected, desired, current int32) int32 {
	// A budget expecting no pod allows nothing, so that its first pods are safe before
	// the controller has seen them.
	if expected <= 0 || current <= desired {
		return 0
	}
	return current - desired
}

func (b *Budget) expectedAndDesired() (expected, desired int32, err error) {
	spec := b.PDB.Spec
	switch {
	case spec.MaxUnavailable != nil:
		if expected, err = b.expectedScale(); err != nil {
			return 0, 0, err
		}
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, err
		}
		return expected, max(0, expected-int32(maxUnavailable)), nil
	case spec.MinAvailable != nil && spec.MinAvailable.Type == intstr.Int:
		for _, m := range b.Members {
			expected += m.Count
		}
		return expected, spec.MinAvailable.IntVal, nil
	case spec.MinAvailable != nil:
		if expected, err = b.expectedScale(); err != nil {
			return 0, 0, err
		}
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, 0, err
		}
		return expected, int32(minAvailable), nil
	}
	return 0, 0, nil
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

// Eviction is what the Eviction API would answer for one pod now.
type Eviction struct {
	Allowed bool
	// Code is the HTTP status the API answers a refusal with: 429 when a budget has no
	// disruption to give, 500 when the pod has more than one budget.
	Code int
	// Budget is the budget that decides, when there is one.
	Budget *Budget
	Reason string
}

// Eviction answers as the Eviction API does (pkg/registry/core/pod/storage/eviction.go):
// pods that are not running are always evictable; a pod with several budgets never is; an
// unready pod is evictable under unhealthyPodEvictionPolicy AlwaysAllow, or under
// IfHealthyBudget while its budget is satisfied; any other pod needs a disruption to spare.
// The numbers are holdfast's own, not the budget's possibly stale status.
func (m *Model) Eviction(p *Member) Eviction {
	if p.Pod != nil && (p.Terminating || p.Pod.Status.Phase == corev1.PodPending ||
		p.Pod.Status.Phase == corev1.PodSucceeded || p.Pod.Status.Phase == corev1.PodFailed) {
		return Eviction{Allowed: true, Reason: "the pod is not running, so no budget applies"}
	}
	switch len(p.Budgets) {
	case 0:
		return Eviction{Allowed: true, Reason: "no budget covers the pod"}
	case 1:
	default:
		return Eviction{Code: 500, Reason: "the pod has more than one PodDisruptionBudget, which the Eviction API does not support"}
	}
	b := p.Budgets[0]
	if !p.Ready {
		if policy := b.PDB.Spec.UnhealthyPodEvictionPolicy; policy != nil && *policy == policyv1.AlwaysAllow {
			return Eviction{Allowed: true, Budget: b, Reason: "the pod is not ready and the budget's unhealthyPodEvictionPolicy is AlwaysAllow"}
		}
		if b.Status.CurrentHealthy >= b.Status.DesiredHealthy && b.Status.DesiredHealthy > 0 {
			return Eviction{Allowed: true, Budget: b, Reason: "the pod is not ready and its budget is satisfied without it"}
		}
	}
	if b.Status.DisruptionsAllowed > 0 {
		return Eviction{Allowed: true, Budget: b, Reason: fmt.Sprintf("budget %s allows %d disruption(s)", b.Name, b.Status.DisruptionsAllowed)}
	}
	reason := fmt.Sprintf("budget %s needs %d healthy pods and has %d", b.Name, b.Status.DesiredHealthy, b.Status.CurrentHealthy)
	if b.SyncError != "" {
		reason = fmt.Sprintf("budget %s cannot be computed: %s", b.Name, b.SyncError)
	}
	return Eviction{Code: 429, Budget: b, Reason: reason}
}
