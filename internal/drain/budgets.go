package drain

import (
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/holdfast-dev/holdfast/internal/availability"
)

// The drain explains its refusals in the words of availability's eviction oracle, from
// the budgets' live status, so that its messages are the ones plan and the dry run show.

// againSuffix ends a message that stops a pod: the drain gives up on it and runs again.
const againSuffix = ", then run the drain again"

// Covering returns the budgets whose selector matches the pod, as the Eviction API finds
// them (availability.Covering).
func Covering(pod *corev1.Pod, pdbs []policyv1.PodDisruptionBudget) []*policyv1.PodDisruptionBudget {
	return availability.Covering(pdbs, pod.Namespace, pod.Labels)
}

// NeverAllows reports whether a budget refuses every eviction even with all its pods
// healthy, from the disruption controller's own numbers for the budget's current spec:
// waiting cannot help; only a change to the budget or the workload can. The message says
// what to change. A budget a DisruptionPolicy manages is never a deadlock: the policy
// makes room, so the drain waits for it.
func NeverAllows(pdb *policyv1.PodDisruptionBudget) (string, bool) {
	ev := availability.CanEvict(availability.Candidate{Phase: corev1.PodRunning, Ready: true},
		[]availability.Count{availability.CountOf(pdb)})
	switch ev.Reason {
	case availability.ReasonBudgetNeverAllows, availability.ReasonSingleReplicaBudget:
		return ev.Message + againSuffix, true
	}
	return "", false
}

// BlockedBy describes the budget that refused an eviction, with its live numbers.
func BlockedBy(pdb *policyv1.PodDisruptionBudget) string {
	c := availability.CountOf(pdb)
	return availability.ExhaustedMessage(&c)
}

// ManagedBy is the DisruptionPolicy that manages the budget, empty for a user's own.
func ManagedBy(pdb *policyv1.PodDisruptionBudget) string {
	return availability.ManagedBy(pdb)
}

// Overlapping explains the Eviction API's 500 for a pod under several budgets.
func Overlapping(pdbs []*policyv1.PodDisruptionBudget) string {
	return availability.OverlappingMessage(pdbs) + againSuffix
}
