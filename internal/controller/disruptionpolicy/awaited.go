package disruptionpolicy

import (
	"context"
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// A Surge single replica's node in a cluster-autoscaler node group that is above the
// threshold is handed over once its load leaves, and pods leaving send no event: the
// operator watches no pods, a cluster's largest set. A workload of the policy's own
// namespace deleted or scaled down wakes the policy (policiesInNamespace); one of
// another namespace would not, and the node would be looked at only at the policy's
// periodic look. So each reconcile records the workloads whose deletion or scale-down
// may let a hand-off start (policy.Observed.Awaited: the Deployments and StatefulSets
// with pods on such a node), and such a change of one of them wakes the policies that
// await it. What this keeps is a few names per waiting policy, where a pod informer
// would hold every pod of the cluster; the decision then reads the pods' departure from
// their owners (internal/policy, departure.go).

// awaitedWorkloads are, by policy, the workloads whose deletion or scale-down wakes it.
type awaitedWorkloads struct {
	mu       sync.Mutex
	byPolicy map[types.NamespacedName][]string
}

// set records what policy p awaits now; none forgets p.
func (a *awaitedWorkloads) set(p types.NamespacedName, keys []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(keys) == 0 {
		delete(a.byPolicy, p)
		return
	}
	if a.byPolicy == nil {
		a.byPolicy = map[types.NamespacedName][]string{}
	}
	a.byPolicy[p] = keys
}

// policies are those that await the workload of key.
func (a *awaitedWorkloads) policies(key string) []reconcile.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []reconcile.Request
	for p, keys := range a.byPolicy {
		if _, found := slices.BinarySearch(keys, key); found {
			out = append(out, reconcile.Request{NamespacedName: p})
		}
	}
	return out
}

// awaitingPolicies maps a Deployment's or StatefulSet's deletion or scale-down to the
// policies that await it.
func (r *reconciler) awaitingPolicies(_ context.Context, obj client.Object) []reconcile.Request {
	var kind string
	switch obj.(type) {
	case *appsv1.Deployment:
		kind = holdfastv1alpha1.KindDeployment
	case *appsv1.StatefulSet:
		kind = holdfastv1alpha1.KindStatefulSet
	default:
		return nil
	}
	return r.awaited.policies(policy.OwnerKey(kind, obj.GetNamespace(), obj.GetName()))
}

// shrunk passes the events that make a workload's pods leave: its deletion, its
// deletion in the foreground begun, or fewer replicas asked for.
func shrunk() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil {
				return true
			}
			return replicasOf(e.ObjectNew) < replicasOf(e.ObjectOld)
		},
	}
}

// replicasOf is a Deployment's or StatefulSet's spec.replicas (1 when unset); 0 for
// another kind.
func replicasOf(obj client.Object) int32 {
	var n *int32
	switch o := obj.(type) {
	case *appsv1.Deployment:
		n = o.Spec.Replicas
	case *appsv1.StatefulSet:
		n = o.Spec.Replicas
	default:
		return 0
	}
	if n == nil {
		return 1
	}
	return *n
}
