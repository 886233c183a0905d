package disruptionpolicy

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/invalidspec"
)

// invalidSpec reports a policy whose stored spec holds values the operator cannot
// decode, and changes nothing else: its budgets, surges and pod annotations stay as they
// are until it is fixed, since acting on the fields that did decode could open a budget
// the missing ones would have kept closed. Other policies still see it, and it still
// wins the workloads it selects, so that they do not pass to another policy meanwhile.
func (r *reconciler) invalidSpec(ctx context.Context, p *holdfastv1alpha1.DisruptionPolicy) error {
	msg := invalidspec.Message("spec", p.Spec.DecodeErrors)
	st := p.Status.DeepCopy()
	changed := invalidspec.MarkStatus(&st.Conditions, &st.ObservedGeneration, holdfastv1alpha1.ConditionBudgetsReady, msg, p.Generation, r.clock.Now())
	if changed {
		patched := p.DeepCopy()
		if err := invalidspec.PatchStatus(ctx, r.client, patched, st); err != nil {
			return err
		}
		r.patches.Patched(client.ObjectKeyFromObject(p), p.ResourceVersion, patched.ResourceVersion)
	}
	r.invalid.Report(ctx, p, msg, changed)
	return nil
}
