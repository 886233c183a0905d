// Package apply writes the objects the controllers decide on, the same way for every
// controller: server-side apply of the desired object, as holdfast's field manager, so
// that holdfast owns exactly the fields it sets and the keys others put on the same
// object (a user's label, the deployment controller's revision) stay.
package apply

import (
	"context"
	"fmt"
	"maps"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/csaupgrade"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// FieldOwner is the field manager of everything the operator applies.
const FieldOwner = "holdfast-operator"

// holdfastPrefix starts the keys of the labels and annotations holdfast writes.
const holdfastPrefix = "holdfast.dev/"

// Budget applies the budget when BudgetStale says so.
func Budget(ctx context.Context, c client.Client, live client.Reader, want *policyv1.PodDisruptionBudget) error {
	if _, stale, err := BudgetStale(ctx, c, want); err != nil || !stale {
		return err
	}
	return Object(ctx, c, live, want)
}

// BudgetStale reads the budget from the cache (nil when it has none) and says whether
// holdfast's part of it (its labels and annotations, the owner references, the spec)
// differs from want. The cache is often a write behind, and the apply of an unchanged
// budget would be a request for nothing.
func BudgetStale(ctx context.Context, c client.Reader, want *policyv1.PodDisruptionBudget) (*policyv1.PodDisruptionBudget, bool, error) {
	cur := &policyv1.PodDisruptionBudget{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(want), cur); apierrors.IsNotFound(err) {
		return nil, true, nil
	} else if err != nil {
		return nil, false, fmt.Errorf("getting PodDisruptionBudget %s: %w", klog.KObj(want), err)
	}
	current := equality.Semantic.DeepEqual(cur.Spec, want.Spec) && equality.Semantic.DeepEqual(cur.OwnerReferences, want.OwnerReferences) &&
		ours(cur.Labels, want.Labels) && ours(cur.Annotations, want.Annotations)
	return cur, !current, nil
}

// ours reports whether the keys of have that holdfast writes (those of want, and any
// of holdfast's prefix) are exactly want.
func ours(have, want map[string]string) bool {
	mine := maps.Clone(have)
	maps.DeleteFunc(mine, func(k, _ string) bool {
		_, wanted := want[k]
		return !wanted && !strings.HasPrefix(k, holdfastPrefix)
	})
	return equality.Semantic.DeepEqual(mine, want) || len(mine) == 0 && len(want) == 0
}

// Object applies want, the whole of what holdfast wants of the object, as FieldOwner,
// taking over fields another manager set (holdfast's word on what it manages is
// final). A field holdfast applied before and leaves out now is removed; one only
// others set is left.
//
// Before its first apply, the object may carry the fields an older holdfast wrote by
// update, owned by the client's default field manager: they are handed to FieldOwner
// first (read from the apiserver, since the cache drops managedFields), or an apply
// that leaves one out (a budget's minAvailable replaced by maxUnavailable) would keep
// it for good.
func Object(ctx context.Context, c client.Client, live client.Reader, want client.Object) error {
	gvk, err := apiutil.GVKForObject(want, c.Scheme())
	if err != nil {
		return fmt.Errorf("finding the kind of %s: %w", klog.KObj(want), err)
	}
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(gvk)
	err = live.Get(ctx, client.ObjectKeyFromObject(want), cur)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("getting %s %s: %w", gvk.Kind, klog.KObj(want), err)
	}
	if err == nil {
		patch, err := csaupgrade.UpgradeManagedFieldsPatch(cur, sets.New(legacyFieldManager()), FieldOwner)
		if err != nil {
			return fmt.Errorf("handing the fields of %s %s to %s: %w", gvk.Kind, klog.KObj(want), FieldOwner, err)
		}
		if patch != nil {
			if err := c.Patch(ctx, cur, client.RawPatch(types.JSONPatchType, patch)); err != nil {
				return fmt.Errorf("handing the fields of %s %s to %s: %w", gvk.Kind, klog.KObj(want), FieldOwner, err)
			}
		}
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(want)
	if err != nil {
		return fmt.Errorf("encoding %s %s: %w", gvk.Kind, klog.KObj(want), err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(gvk)
	// Fields the apiserver sets, which an apply must not claim.
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", gvk.Kind, klog.KObj(want), err)
	}
	return nil
}

// Own says a field manager is holdfast's: FieldOwner, or the one of its patches (taints,
// pods' labels and annotations), which the apiserver names as legacyFieldManager.
func Own(manager string) bool { return manager == FieldOwner || manager == legacyFieldManager() }

// legacyFieldManager is the field manager the apiserver recorded for holdfast's writes
// before they were applied: the client's default user agent up to its first slash.
func legacyFieldManager() string {
	name, _, _ := strings.Cut(rest.DefaultKubernetesUserAgent(), "/")
	return name
}

// SurgeSet applies a surge set when holdfast's part of it differs from want, as the
// cache shows it.
func SurgeSet(ctx context.Context, c client.Client, live client.Reader, want *appsv1.ReplicaSet) error {
	cur := &appsv1.ReplicaSet{}
	err := c.Get(ctx, client.ObjectKeyFromObject(want), cur)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("getting ReplicaSet %s: %w", klog.KObj(want), err)
	}
	if err == nil && cur.DeletionTimestamp == nil && equality.Semantic.DeepEqual(cur.Spec.Replicas, want.Spec.Replicas) &&
		equality.Semantic.DeepEqual(cur.Spec.Template, want.Spec.Template) && cur.Spec.MinReadySeconds == want.Spec.MinReadySeconds &&
		equality.Semantic.DeepEqual(cur.OwnerReferences, want.OwnerReferences) && ours(cur.Labels, want.Labels) && ours(cur.Annotations, want.Annotations) {
		return nil
	}
	return Object(ctx, c, live, want)
}
