package nodecompanion

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/invalidspec"
)

// invalidSpec reports a NodeCompanion whose stored spec holds values the operator
// cannot decode, and leaves its Deployment and budgets as they are until it is fixed:
// rebuilt from what did decode, they could lose the budget's size or the companions'
// template.
func (r *reconciler) invalidSpec(ctx context.Context, nc *holdfastv1alpha1.NodeCompanion) error {
	msg := invalidspec.Message("spec", nc.Spec.DecodeErrors)
	st := nc.Status.DeepCopy()
	changed := invalidspec.MarkStatus(&st.Conditions, &st.ObservedGeneration, holdfastv1alpha1.ConditionReady, msg, nc.Generation, r.clock.Now())
	if changed {
		patched := nc.DeepCopy()
		if err := invalidspec.PatchStatus(ctx, r.client, patched, st); err != nil {
			return err
		}
		r.patches.Patched(client.ObjectKeyFromObject(nc), nc.ResourceVersion, patched.ResourceVersion)
	}
	r.invalid.Report(ctx, nc, msg, changed)
	return nil
}
