// Package drainleftovers clears what a holdfast drain left on a node once no drain keeps
// it: the conditions DrainInProgress and Drained after the node is uncordoned, or after
// the drain that wrote them died; the queued taint and the run's annotation once their
// run is gone. Without it, Drained stays True after kubectl uncordon, and a drain killed
// outright leaves DrainInProgress True and the taint for good.
//
// The reconciler is keyed on the node. What to clear is drain.Leftovers' decision; the
// run's life is its Lease (named in drain.RunAnnotation), timed on the operator's own
// clock as the drain slots are (drain.LeaseObserver), so that a drain host's skewed clock
// neither keeps a dead run alive nor ends a live one. A run still alive requeues the node
// for when its Lease would expire.
package drainleftovers

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/holdfast-dev/holdfast/internal/drain"
)

// Name is the controller's name, in logs, metrics and as the Events' reporting controller.
const Name = "drainleftovers"

// EventCleared is the Event's reason on a node whose drain leftovers were cleared.
const EventCleared = "DrainLeftoversCleared"

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

type reconciler struct {
	client   client.Client
	clock    clock.PassiveClock
	recorder events.EventRecorder
	leases   drain.LeaseObserver
}

// SetupWithManager registers the reconciler with mgr. It reads the runs' Leases from the
// shared cache, which holds those labelled drain.RunLabel in every namespace.
func SetupWithManager(mgr ctrl.Manager, clk clock.PassiveClock) error {
	r := &reconciler{client: mgr.GetClient(), clock: clk, recorder: mgr.GetEventRecorder("holdfast-" + Name)}
	err := ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		// Only nodes that carry a drain's marks, in the state they are in now.
		For(&corev1.Node{}, builder.WithPredicates(predicate.NewPredicateFuncs(marked))).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the %s controller: %w", Name, err)
	}
	return nil
}

// marked reports whether the node carries anything a drain writes that could be left over.
func marked(obj client.Object) bool {
	n, ok := obj.(*corev1.Node)
	return ok && !drain.Leftovers(n, false).Empty()
}

// Reconcile clears the node's leftovers, if it has any, and comes back when its run's
// Lease would expire, if the run lives.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	var node corev1.Node
	if err := r.client.Get(ctx, req.NamespacedName, &node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	live, until, err := r.runLive(ctx, node.Annotations[drain.RunAnnotation])
	if err != nil {
		return ctrl.Result{}, err
	}
	left := drain.Leftovers(&node, live)
	if !left.Empty() {
		if err := r.clear(ctx, &node, left); err != nil {
			return ctrl.Result{}, err
		}
		r.recorder.Eventf(&node, nil, corev1.EventTypeNormal, EventCleared, "Clear", "no holdfast drain keeps the node any more; removed %s", left)
	}
	if live {
		return ctrl.Result{RequeueAfter: until}, nil
	}
	return ctrl.Result{}, nil
}

// runLive reports whether the run Lease ref (namespace/name) is held, and for how long
// at least, as this operator counts from when it saw the Lease last change.
func (r *reconciler) runLive(ctx context.Context, ref string) (bool, time.Duration, error) {
	namespace, name, ok := strings.Cut(ref, "/")
	if !ok {
		return false, 0, nil
	}
	var lease coordinationv1.Lease
	err := r.client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &lease)
	switch {
	case apierrors.IsNotFound(err):
		r.leases.Forget(namespace, name)
		return false, 0, nil
	case err != nil:
		return false, 0, fmt.Errorf("reading drain run Lease %s: %w", ref, err)
	case ptr.Deref(lease.Spec.HolderIdentity, "") == "":
		return false, 0, nil
	}
	now := r.clock.Now()
	r.leases.Seen(&lease, now)
	expiry, _ := r.leases.Expiry(namespace, name)
	if !expiry.After(now) {
		return false, 0, nil
	}
	return true, expiry.Sub(now), nil
}

// clear removes the leftovers: the conditions through nodes/status, merged by type so
// that the kubelet's stay; the taint and the annotation with an optimistic lock, since
// taints are replaced whole.
func (r *reconciler) clear(ctx context.Context, node *corev1.Node, left drain.Leftover) error {
	if patch := left.StatusPatch(); patch != nil {
		if err := r.client.Status().Patch(ctx, node, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
			return fmt.Errorf("removing the drain conditions of node %s: %w", node.Name, err)
		}
	}
	if !left.QueuedTaint && !left.RunAnnotation {
		return nil
	}
	before := node.DeepCopy()
	left.Apply(node)
	if err := r.client.Patch(ctx, node, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("removing the drain marks of node %s: %w", node.Name, err)
	}
	return nil
}
