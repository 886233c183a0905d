package disruptionpolicy

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
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
	c := invalidspec.Condition(holdfastv1alpha1.ConditionBudgetsReady, msg, p.Generation, r.clock.Now())
	changed := meta.SetStatusCondition(&st.Conditions, c) || st.ObservedGeneration != p.Generation
	st.ObservedGeneration = p.Generation
	if changed {
		patch, err := json.Marshal(map[string]any{"status": st})
		if err != nil {
			return fmt.Errorf("encoding status of DisruptionPolicy %s: %w", klog.KObj(p), err)
		}
		if err := r.client.Status().Patch(ctx, p.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil {
			return fmt.Errorf("patching status of DisruptionPolicy %s: %w", klog.KObj(p), err)
		}
		r.patches.Patched(client.ObjectKeyFromObject(p), p.ResourceVersion)
	}
	r.invalid.Report(ctx, p, msg, changed)
	return nil
}
