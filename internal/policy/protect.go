package policy

import (
	"time"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// protect keeps minAvailable 1 and do-not-disrupt on the pod; once a drain of its node
// has waited escapeAfter, it relaxes the budget, and Decide removes the annotation as
// from every pod that is no longer Protected (unmark).
func protect(o Observed, w *Workload, st holdfastv1alpha1.WorkloadStatus) verdict {
	p := o.Policy
	pods := o.Pods[WorkloadKey(w.Kind, w.Name)]
	st.Budget = BudgetName(w.Kind, w.Name)
	drained := drainedNode(o, w)
	if drained == "" {
		st.State, st.Message = holdfastv1alpha1.WorkloadProtected, protectedMessage(o, w)
		return verdict{status: st, budget: singleReplicaBudget(o, w, nil), annotations: annotatePods(pods)}
	}
	since := BlockedSince(existingBudget(o.Budgets, st.Budget), o.Now)
	if p.Spec.EscapeAfter == nil {
		st.State, st.Message = holdfastv1alpha1.WorkloadProtected, msgProtectBlocks(drained)
		return verdict{status: st, budget: singleReplicaBudget(o, w, &since), annotations: annotatePods(pods)}
	}
	escapeAt := since.Add(p.Spec.EscapeAfter.Duration)
	if o.Now.Before(escapeAt) {
		st.State, st.Message = holdfastv1alpha1.WorkloadProtected, msgProtectBlocksUntil(drained, since, escapeAt)
		return verdict{status: st, budget: singleReplicaBudget(o, w, &since), annotations: annotatePods(pods), requeueAfter: escapeAt.Sub(o.Now)}
	}
	st.State, st.Message = holdfastv1alpha1.WorkloadEscaped, msgEscaped(drained, p.Spec.EscapeAfter.Duration)
	b := budgetFor(p, w, policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1))}, &since)
	return verdict{status: st, budget: b}
}

// BlockedSince is when a protected workload's budget b started holding a drain back, as
// recorded on it; now when b records none.
func BlockedSince(b *policyv1.PodDisruptionBudget, now time.Time) time.Time {
	if b != nil {
		if t, err := time.Parse(time.RFC3339Nano, b.Annotations[holdfastv1alpha1.BlockedSinceAnnotation]); err == nil {
			return t
		}
	}
	return now
}

// annotatePods are the changes that put do-not-disrupt on pods. A pod that has it
// already, the user's or another policy's, is left as it is.
func annotatePods(pods []Pod) []PodAnnotation {
	var out []PodAnnotation
	for _, pod := range pods {
		if !pod.DoNotDisrupt {
			out = append(out, PodAnnotation{Pod: pod.Name, Mark: DoNotDisrupt, Set: true})
		}
	}
	return out
}
