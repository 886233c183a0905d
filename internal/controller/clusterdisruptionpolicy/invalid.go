package clusterdisruptionpolicy

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/invalidspec"
)

// invalidSpec reports a cluster policy whose stored template holds values the operator
// cannot decode, and leaves its copies as they are: a copy written from what did decode
// would lack the rest (its maintenance windows, say) and open budgets they keep closed.
func (r *reconciler) invalidSpec(ctx context.Context, p *holdfastv1alpha1.ClusterDisruptionPolicy) error {
	msg := invalidspec.Message("spec.template", p.Spec.Template.DecodeErrors)
	st := p.Status.DeepCopy()
	changed := invalidspec.MarkStatus(&st.Conditions, &st.ObservedGeneration, holdfastv1alpha1.ConditionPoliciesReady, msg, p.Generation, r.clock.Now())
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
