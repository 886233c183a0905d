package nodecompanion

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/invalidspec"
)

// invalidSpec reports a NodeCompanion whose stored spec holds values the operator
// cannot decode, and leaves its Deployment and budgets as they are until it is fixed:
// rebuilt from what did decode, they could lose the budget's size or the companions'
// template.
func (r *reconciler) invalidSpec(ctx context.Context, nc *holdfastv1alpha1.NodeCompanion) error {
	return r.reportInvalid(ctx, nc, invalidspec.Message("spec", nc.Spec.DecodeErrors))
}

// templateRefused reports a NodeCompanion whose template the API server refused as the
// pod template of the companions' Deployment. The CRD does not validate the template
// (hack/crdschema/podtemplate.yaml), so this is where a template that decodes but is not
// a valid pod (a container without an image, a bad port name) shows; retrying would only
// be refused again, so the NodeCompanion waits for its next change.
func (r *reconciler) templateRefused(ctx context.Context, nc *holdfastv1alpha1.NodeCompanion, err error) error {
	return r.reportInvalid(ctx, nc, fmt.Sprintf("spec.template is not a valid pod template: the companions' Deployment was refused (%v): nothing it manages changes until it is fixed", err))
}

// reportInvalid sets Ready False with reason InvalidSpec and msg, once, and reports it.
func (r *reconciler) reportInvalid(ctx context.Context, nc *holdfastv1alpha1.NodeCompanion, msg string) error {
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
