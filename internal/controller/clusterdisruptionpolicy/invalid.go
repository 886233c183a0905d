package clusterdisruptionpolicy

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
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
	c := invalidspec.Condition(holdfastv1alpha1.ConditionPoliciesReady, msg, p.Generation, r.clock.Now())
	changed := meta.SetStatusCondition(&st.Conditions, c) || st.ObservedGeneration != p.Generation
	st.ObservedGeneration = p.Generation
	if changed {
		patch, err := json.Marshal(map[string]any{"status": st})
		if err != nil {
			return fmt.Errorf("encoding status of ClusterDisruptionPolicy %s: %w", p.Name, err)
		}
		if err := r.client.Status().Patch(ctx, p.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil {
			return fmt.Errorf("patching status of ClusterDisruptionPolicy %s: %w", p.Name, err)
		}
		r.patches.Patched(types.NamespacedName{Name: p.Name}, p.ResourceVersion)
	}
	r.invalid.Report(ctx, p, msg, changed)
	return nil
}
