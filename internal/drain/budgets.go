package drain

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// Covering returns the budgets whose selector matches the pod, as the Eviction API finds
// them: an invalid selector covers nothing, and in policy/v1 an empty one covers every pod
// of the namespace.
func Covering(pod *corev1.Pod, pdbs []policyv1.PodDisruptionBudget) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for i := range pdbs {
		pdb := &pdbs[i]
		if pdb.Namespace != pod.Namespace {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		if sel.Matches(labels.Set(pod.Labels)) {
			out = append(out, pdb)
		}
	}
	return out
}

// NeverAllows reports whether a budget refuses every eviction even with all its pods
// healthy, from the disruption controller's own numbers: it wants as many healthy pods as
// it expects (article 003: minAvailable 1, or 50%, on one replica; or maxUnavailable 0).
// Waiting cannot help; only a change to the budget or the workload can. The message says
// what to change.
func NeverAllows(pdb *policyv1.PodDisruptionBudget) (string, bool) {
	if pdb.Status.ObservedGeneration < pdb.Generation {
		return "", false
	}
	return NeverAllowsAt(pdb, pdb.Status.ExpectedPods, pdb.Status.DesiredHealthy)
}

// NeverAllowsAt is NeverAllows with the expected and desired healthy pods computed
// elsewhere, as availability computes them from a snapshot. A budget that a
// DisruptionPolicy manages is never a deadlock: the policy's single-replica strategy
// surges a replacement or lets the drain through, so the drain waits for it.
func NeverAllowsAt(pdb *policyv1.PodDisruptionBudget, expected, desired int32) (string, bool) {
	if expected == 0 || desired < expected || ManagedBy(pdb) != "" {
		return "", false
	}
	return fmt.Sprintf("PodDisruptionBudget %s/%s (%s) wants %d healthy of %d expected pods, so it never allows an eviction: "+
		"scale the workload to at least %d replicas or relax the budget, then run the drain again",
		pdb.Namespace, pdb.Name, budgetSpec(pdb), desired, expected, desired+1), true
}

// BlockedBy describes the budget that refused an eviction, with its live numbers.
func BlockedBy(pdb *policyv1.PodDisruptionBudget) string {
	s := pdb.Status
	msg := fmt.Sprintf("PodDisruptionBudget %s/%s (%s): %d of %d healthy, needs %d, allows %d",
		pdb.Namespace, pdb.Name, budgetSpec(pdb), s.CurrentHealthy, s.ExpectedPods, s.DesiredHealthy, s.DisruptionsAllowed)
	switch policy := ManagedBy(pdb); {
	case policy != "" && pdb.Annotations[holdfastv1alpha1.PacingAnnotation] != "":
		msg += "; paced by DisruptionPolicy " + policy + ": the next eviction waits until the latest replacement has been Ready for minReadySeconds"
	case policy != "":
		msg += "; managed by DisruptionPolicy " + policy + ", which makes room for the drain"
	}
	return msg
}

// ManagedBy is the DisruptionPolicy that manages the budget, empty for a user's own.
func ManagedBy(pdb *policyv1.PodDisruptionBudget) string {
	return pdb.Labels[holdfastv1alpha1.PolicyLabel]
}

// Overlapping explains the Eviction API's 500 for a pod under several budgets.
func Overlapping(pdbs []*policyv1.PodDisruptionBudget) string {
	names := make([]string, len(pdbs))
	for i, p := range pdbs {
		names[i] = p.Namespace + "/" + p.Name
	}
	return fmt.Sprintf("the pod is covered by %d PodDisruptionBudgets (%s) and the Eviction API refuses to evict such pods: "+
		"make the budgets' selectors disjoint, then run the drain again", len(pdbs), strings.Join(names, ", "))
}

func budgetSpec(pdb *policyv1.PodDisruptionBudget) string {
	switch {
	case pdb.Spec.MinAvailable != nil:
		return "minAvailable " + pdb.Spec.MinAvailable.String()
	case pdb.Spec.MaxUnavailable != nil:
		return "maxUnavailable " + pdb.Spec.MaxUnavailable.String()
	}
	return "no minAvailable or maxUnavailable"
}
