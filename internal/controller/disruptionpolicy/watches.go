// Package disruptionpolicy runs DisruptionPolicies: a PodDisruptionBudget on every
// selected workload, kept in step with its size and selector, never over pods that
// another budget already covers, and single replicas handled by a declared strategy.
//
// The reconciler gathers one namespace from the cache (pods only of the few workloads in
// motion that policy.NeedsPods names, and the objects of custom kinds with their scale,
// straight from the apiserver), decides in the pure core, policy.Decide, acts only on
// what differs, writes status only when it changed, and records Events after the writes
// succeed.
package disruptionpolicy

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// policiesInNamespace maps a change in a namespace to every policy of it: policies per
// namespace are few, and any of them may select the workload or lose it.
func (r *reconciler) policiesInNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &holdfastv1alpha1.DisruptionPolicyList{}
	if err := r.client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		log.FromContext(ctx).Error(err, "Listing DisruptionPolicies for a change", "object", klog.KObj(obj))
		return nil
	}
	return requests(list.Items)
}

// drainingPolicies maps a node's cordon or drain taint to the policies that act on
// drains: those with singleReplica Surge or Protect, or surge WhenBlocked.
func (r *reconciler) drainingPolicies(ctx context.Context, _ client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, s := range []string{string(holdfastv1alpha1.SingleReplicaSurge), string(holdfastv1alpha1.SingleReplicaProtect), string(holdfastv1alpha1.SurgeWhenBlocked), zoneAwareIndex} {
		list := &holdfastv1alpha1.DisruptionPolicyList{}
		if err := r.client.List(ctx, list, client.MatchingFields{drainIndex: s}); err != nil {
			log.FromContext(ctx).Error(err, "Listing DisruptionPolicies for a node change")
			return nil
		}
		out = append(out, requests(list.Items)...)
	}
	return out
}

// drainStrategies are the values of drainIndex for a policy.
func drainStrategies(o client.Object) []string {
	spec := o.(*holdfastv1alpha1.DisruptionPolicy).Spec
	if spec.ZoneAware != nil {
		return []string{string(spec.SingleReplica), string(spec.Surge), zoneAwareIndex}
	}
	return []string{string(spec.SingleReplica), string(spec.Surge)}
}

func requests(policies []holdfastv1alpha1.DisruptionPolicy) []reconcile.Request {
	reqs := make([]reconcile.Request, 0, len(policies))
	for i := range policies {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&policies[i])})
	}
	return reqs
}

// labelledPolicy maps a managed budget to the policy its label names: when that policy
// is gone, its reconcile sweeps the namespace.
func labelledPolicy(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetLabels()[holdfastv1alpha1.PolicyLabel]}}}
}

func managedBudget(obj client.Object) bool {
	return obj.GetLabels()[holdfastv1alpha1.PolicyLabel] != ""
}

// seenOrResynced passes the objects for which keep is true when the informer lists them
// (at start, and after a watch is lost) and at each resync, when an update carries the
// same resourceVersion: when a policy may have gone without an event seen.
func seenOrResynced(keep func(client.Object) bool) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return keep(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return keep(e.ObjectNew) && e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion()
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// workloadChanged passes workload events that can change a decision: anything Decide
// reads (size, selector, labels, the Ready count a surge and
// pacing wait on, a rollout). Most workload updates are status churn of other fields.
func workloadChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !equality.Semantic.DeepEqual(policy.WorkloadOf(e.ObjectOld), policy.WorkloadOf(e.ObjectNew))
		},
	}
}

// blockedChanged passes a budget's status update that starts or ends blocking
// disruptions, which a surge: WhenBlocked waits on and status.blocked counts, and the
// first count after a spec change, which may block from the start.
func blockedChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*policyv1.PodDisruptionBudget)
			n, okNew := e.ObjectNew.(*policyv1.PodDisruptionBudget)
			return !okOld || !okNew || o.Status.ObservedGeneration != n.Status.ObservedGeneration ||
				(o.Status.DisruptionsAllowed == 0) != (n.Status.DisruptionsAllowed == 0) ||
				(o.Status.ExpectedPods == 0) != (n.Status.ExpectedPods == 0)
		},
	}
}

// drainSignalChanged passes node events that start or end a drain: cordon and taints.
func drainSignalChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*corev1.Node)
			n, okNew := e.ObjectNew.(*corev1.Node)
			return !okOld || !okNew || policy.BeingDrained(o) != policy.BeingDrained(n)
		},
	}
}
