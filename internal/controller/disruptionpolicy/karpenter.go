package disruptionpolicy

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims;nodepools,verbs=get;list;watch

// karpenterInstalled reports whether the apiserver serves Karpenter's NodeClaims. It is
// asked once at start: Karpenter installed later is seen after a restart.
func karpenterInstalled(mgr ctrl.Manager) (bool, error) {
	_, err := mgr.GetRESTMapper().RESTMapping(snapshot.NodeClaimKind.GroupKind(), snapshot.NodeClaimKind.Version)
	if meta.IsNoMatchError(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("finding out whether Karpenter is installed: %w", err)
	}
	return true, nil
}

func nodeClaim() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(snapshot.NodeClaimKind)
	return u
}

// NodeClaims lists Karpenter's NodeClaims from the cache; nil where Karpenter is not
// installed.
func (r *observer) NodeClaims(ctx context.Context) ([]unstructured.Unstructured, error) {
	if !r.karpenter {
		return nil, nil
	}
	claims := &unstructured.UnstructuredList{}
	claims.SetGroupVersionKind(snapshot.NodeClaimKind.GroupVersion().WithKind("NodeClaimList"))
	if err := r.cache.List(ctx, claims); err != nil {
		return nil, fmt.Errorf("listing NodeClaims: %w", err)
	}
	if claims.Items == nil {
		return []unstructured.Unstructured{}, nil // installed, no NodeClaim yet
	}
	return claims.Items, nil
}

// NodePool gets a NodePool from the cache; nil when it is gone.
func (r *observer) NodePool(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	np := &unstructured.Unstructured{}
	np.SetGroupVersionKind(snapshot.NodePoolKind)
	if err := r.cache.Get(ctx, client.ObjectKey{Name: name}, np); apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("getting NodePool %s: %w", name, err)
	}
	return np, nil
}

// NodePods lists the pods of a node from the apiserver, by node, since the cache holds
// only companion pods.
func (r *observer) NodePods(ctx context.Context, node string) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := r.live.List(ctx, pods, client.MatchingFields{podNodeField: node}); err != nil {
		return nil, fmt.Errorf("listing the pods of node %s: %w", node, err)
	}
	return pods.Items, nil
}

// consolidatableChanged passes NodeClaim events that change whether, or since when,
// Karpenter considers the node for consolidation.
func consolidatableChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*unstructured.Unstructured)
			n, okNew := e.ObjectNew.(*unstructured.Unstructured)
			// A NodeClaim being deleted is proof for fencing that its node is down.
			return !okOld || !okNew || !policy.ConsolidatableSince(o).Equal(policy.ConsolidatableSince(n)) ||
				(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil)
		},
	}
}
