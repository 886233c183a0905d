package disruptionpolicy

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// Karpenter's kinds, read as unstructured so that holdfast does not depend on Karpenter's
// module, and watched only where its CRDs are installed.
var (
	nodeClaimKind = schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodeClaim"}
	nodePoolKind  = schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodePool"}
)

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims;nodepools,verbs=get;list;watch

// karpenterInstalled reports whether the apiserver serves Karpenter's NodeClaims. It is
// asked once at start: Karpenter installed later is seen after a restart.
func karpenterInstalled(mgr ctrl.Manager) (bool, error) {
	_, err := mgr.GetRESTMapper().RESTMapping(nodeClaimKind.GroupKind(), nodeClaimKind.Version)
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
	u.SetGroupVersionKind(nodeClaimKind)
	return u
}

// Claims reads the NodeClaims behind nodes, their NodePools' consolidation, and, for a
// node Karpenter considers for consolidation, what keeps Karpenter off it.
func (r *observer) Claims(ctx context.Context, nodes map[string]*corev1.Node, now time.Time) (map[string]policy.NodeClaim, error) {
	if !r.karpenter {
		return nil, nil
	}
	claims := &unstructured.UnstructuredList{}
	claims.SetGroupVersionKind(nodeClaimKind.GroupVersion().WithKind("NodeClaimList"))
	if err := r.cache.List(ctx, claims); err != nil {
		return nil, fmt.Errorf("listing NodeClaims: %w", err)
	}
	out := map[string]policy.NodeClaim{}
	for i := range claims.Items {
		u := &claims.Items[i]
		name, _, _ := unstructured.NestedString(u.Object, "status", "nodeName")
		node := nodes[name]
		if node == nil {
			continue
		}
		c := policy.NodeClaim{Name: u.GetName(), ConsolidatableSince: consolidatableSince(u), Deleting: u.GetDeletionTimestamp() != nil}
		var err error
		if c.ConsolidationPolicy, c.ConsolidateAfter, err = r.consolidation(ctx, u.GetLabels()["karpenter.sh/nodepool"]); err != nil {
			return nil, err
		}
		if !c.ConsolidatableSince.IsZero() {
			if c.Load, err = r.load(ctx, node, karpenterBlocker(node, now)); err != nil {
				return nil, err
			}
		}
		out[name] = c
	}
	return out, nil
}

// consolidatableSince is when a NodeClaim's Consolidatable condition turned True; zero
// while it is not True.
func consolidatableSince(u *unstructured.Unstructured) time.Time {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Consolidatable" || m["status"] != "True" {
			continue
		}
		s, _ := m["lastTransitionTime"].(string)
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return time.Time{}
		}
		return t
	}
	return time.Time{}
}

// consolidation reads a NodePool's consolidationPolicy and consolidateAfter; "" and 0 for
// a NodePool that is gone or does not consolidate ("Never").
func (r *observer) consolidation(ctx context.Context, pool string) (string, time.Duration, error) {
	if pool == "" {
		return "", 0, nil
	}
	np := &unstructured.Unstructured{}
	np.SetGroupVersionKind(nodePoolKind)
	if err := r.cache.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
		return "", 0, client.IgnoreNotFound(err)
	}
	after, _, _ := unstructured.NestedString(np.Object, "spec", "disruption", "consolidateAfter")
	d, err := time.ParseDuration(after)
	if err != nil {
		return "", 0, nil
	}
	policy, _, _ := unstructured.NestedString(np.Object, "spec", "disruption", "consolidationPolicy")
	return policy, d, nil
}

// load reads what runs on a node for a hand-off to autoscaler: what keeps it off the
// node whatever the budgets allow, and what its pods but DaemonSets' request. The pods
// come from the apiserver, by node, since the cache holds only companion pods.
func (r *observer) load(ctx context.Context, node *corev1.Node, blocks blocker) (policy.Load, error) {
	pods := &corev1.PodList{}
	if err := r.live.List(ctx, pods, client.MatchingFields{"spec.nodeName": node.Name}); err != nil {
		return policy.Load{}, fmt.Errorf("listing the pods of node %s: %w", node.Name, err)
	}
	l := policy.Load{Requested: corev1.ResourceList{}}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if l.Blocker == "" {
			var err error
			if l.Blocker, err = blocks(ctx, p); err != nil {
				return policy.Load{}, err
			}
		}
		if owner := metav1.GetControllerOf(p); owner != nil && owner.Kind == "DaemonSet" {
			continue // it goes with the node, wherever the others go
		}
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			sum := l.Requested[name]
			sum.Add(q)
			l.Requested[name] = sum
		}
	}
	return l, nil
}

// blocker names what on a pod keeps an autoscaler off its node whatever its budget
// allows; "" when nothing does.
type blocker func(context.Context, *corev1.Pod) (string, error)

// karpenterBlocker is do-not-disrupt, on the node or active on a pod there: Karpenter's
// own test.
func karpenterBlocker(node *corev1.Node, now time.Time) blocker {
	return func(_ context.Context, p *corev1.Pod) (string, error) {
		if node.Annotations[availability.AnnotationKarpenterDoNotDisrupt] == "true" {
			return fmt.Sprintf("node %s has %s", node.Name, availability.AnnotationKarpenterDoNotDisrupt), nil
		}
		if availability.KarpenterDoNotDisrupt(p.Annotations[availability.AnnotationKarpenterDoNotDisrupt], p.Status.StartTime, now) {
			return fmt.Sprintf("pod %s has %s", klog.KObj(p), availability.AnnotationKarpenterDoNotDisrupt), nil
		}
		return "", nil
	}
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
			return !okOld || !okNew || !consolidatableSince(o).Equal(consolidatableSince(n)) ||
				(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil)
		},
	}
}
