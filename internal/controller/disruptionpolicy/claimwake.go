package disruptionpolicy

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/holdfast-dev/holdfast/internal/policy"
)

// claimPolicies maps a NodeClaim's change to the policies that act on drains in the
// namespaces that have pods on its node: Karpenter's Consolidatable flaps on many nodes
// at once, and each policy woken lists its namespace's pods, so waking every policy of
// the cluster for each flap multiplies the load by the number of policies.
func (r *reconciler) claimPolicies(ctx context.Context, obj client.Object) []reconcile.Request {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	node := policy.ClaimNode(u)
	if node == "" {
		return nil // not launched yet: no pod on it
	}
	namespaces, err := namespacesOnNode(ctx, r.live, node)
	if err != nil {
		log.FromContext(ctx).Error(err, "Finding the policies a NodeClaim's change concerns", "nodeClaim", u.GetName())
		return nil
	}
	var out []reconcile.Request
	for _, req := range r.drainingPolicies(ctx, obj) {
		if namespaces[req.Namespace] {
			out = append(out, req)
		}
	}
	return out
}
