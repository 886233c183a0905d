package nodecompanion

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"
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
	patched := nc.DeepCopy()
	c := invalidspec.Condition(holdfastv1alpha1.ConditionReady, msg, nc.Generation, r.clock.Now())
	changed := meta.SetStatusCondition(&patched.Status.Conditions, c) || patched.Status.ObservedGeneration != nc.Generation
	patched.Status.ObservedGeneration = nc.Generation
	if changed {
		if err := r.client.Status().Patch(ctx, patched, client.MergeFrom(nc)); err != nil {
			return fmt.Errorf("patching status of NodeCompanion %s: %w", klog.KObj(nc), err)
		}
		r.patches.Patched(client.ObjectKeyFromObject(nc), nc.ResourceVersion)
	}
	r.invalid.Report(ctx, nc, msg, changed)
	return nil
}
