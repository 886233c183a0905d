package policy

import (
	policyv1 "k8s.io/api/policy/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
)

// Sweep is what is left of DisruptionPolicies that no longer exist in a namespace.
//
// A policy deleted while the operator is down, or between two leaders, sends no event
// that anyone sees, so its budgets (a closed window's maxUnavailable 0 would block every
// drain for good) would stay. (Its surge sets need no sweep: the policy owns them, and
// the garbage collector removes them with it.) holdfast sweeps rather than holding the policy with a
// finalizer: a finalizer keeps a policy, and so its namespace, from being deleted while
// the operator is not running or is uninstalled, and protects nothing for policies made
// before it existed; the sweep needs nothing of the policy, runs at start (the budget
// informer's first list), on every resync and on any event of a budget whose policy is
// gone, and can only remove what a gone policy left.
type Sweep struct {
	// Delete are holdfast's budgets (OwnBudget) labelled with a policy that is not in the
	// namespace.
	Delete []*policyv1.PodDisruptionBudget
	// PodAnnotations take holdfast's marks off the pods that a gone policy put them on:
	// Protect's do-not-disrupt, a hand-off's safe-to-evict.
	PodAnnotations []PodAnnotation
}

// SweepNamespace decides the sweep of one namespace from its policies (those being
// deleted included: their budgets go once they are gone), its budgets and its pods
// holdfast marked (Observed.Marked). It reads only its arguments and does not modify
// them.
func SweepNamespace(policies []holdfastv1alpha1.DisruptionPolicy, budgets []policyv1.PodDisruptionBudget, marked Marks) Sweep {
	exists := make(map[string]bool, len(policies))
	for i := range policies {
		exists[policies[i].Name] = true
	}
	var s Sweep
	for i := range budgets {
		if by := availability.ManagedBy(&budgets[i]); by != "" && !exists[by] && OwnBudget(&budgets[i]) {
			s.Delete = append(s.Delete, &budgets[i])
		}
	}
	s.PodAnnotations = unmark(marked, func(by string) bool { return !exists[by] }, nil)
	return s
}
