// Package apply writes the objects the controllers decide on, the same way for every
// controller: create when missing, patch only holdfast's part when it differs.
package apply

import (
	"context"
	"fmt"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Budget creates the budget, or patches it when holdfast's part of it (labels,
// annotations, owner references, spec) differs from want. A budget that another
// reconcile created since the cache was read is left for the next pass, which compares
// it: the cache is often a write behind, and failing on it would only log noise. The
// patch is a merge patch from the object read, so that a status written meanwhile is
// never overwritten.
func Budget(ctx context.Context, c client.Client, want *policyv1.PodDisruptionBudget) error {
	cur := &policyv1.PodDisruptionBudget{}
	err := c.Get(ctx, client.ObjectKeyFromObject(want), cur)
	if apierrors.IsNotFound(err) {
		if err := c.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating PodDisruptionBudget %s: %w", klog.KObj(want), err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting PodDisruptionBudget %s: %w", klog.KObj(want), err)
	}
	if equality.Semantic.DeepEqual(cur.Spec, want.Spec) && equality.Semantic.DeepEqual(cur.Labels, want.Labels) &&
		equality.Semantic.DeepEqual(cur.Annotations, want.Annotations) && equality.Semantic.DeepEqual(cur.OwnerReferences, want.OwnerReferences) {
		return nil
	}
	updated := cur.DeepCopy()
	updated.Labels = want.Labels
	updated.Annotations = want.Annotations
	updated.OwnerReferences = want.OwnerReferences
	updated.Spec = want.Spec
	if err := c.Patch(ctx, updated, client.MergeFrom(cur)); err != nil {
		return fmt.Errorf("updating PodDisruptionBudget %s: %w", klog.KObj(want), err)
	}
	return nil
}
