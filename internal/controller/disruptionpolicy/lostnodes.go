package disruptionpolicy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/contest"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=patch

// healthTick is how often the node watcher reads the node Leases. A lost node is noticed
// within lostAfter plus this; the read is of the cache, a few milliseconds at 1,000
// nodes.
const healthTick = time.Second

// podNodeField is the pods' field selector the API server serves for spec.nodeName.
const podNodeField = "spec.nodeName"

// namespacesOnNode returns the namespaces with pods on node, found by the apiserver's
// own index of pods by node, as metadata.
func namespacesOnNode(ctx context.Context, live client.Reader, node string) (map[string]bool, error) {
	pods := &metav1.PartialObjectMetadataList{}
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := live.List(ctx, pods, client.MatchingFields{podNodeField: node}); err != nil {
		return nil, fmt.Errorf("listing the pods of node %s: %w", node, err)
	}
	namespaces := map[string]bool{}
	for i := range pods.Items {
		namespaces[pods.Items[i].Namespace] = true
	}
	return namespaces, nil
}

// nodeWatcher keeps the health of every node (policy.NodeHealth) from the cached Nodes
// and node Leases, and wakes the policies of the namespaces whose pods run on a node
// that becomes a suspect or stops being one. No event announces a Lease that is not
// renewed: only looking at the clock does.
type nodeWatcher struct {
	client client.Client
	cache  client.Reader
	live   client.Reader
	clock  clock.PassiveClock
	// events carries one event per namespace to wake, to the controller.
	events chan event.GenericEvent
	health atomic.Pointer[policy.NodeHealth]
	// ledger is told of the taints the watcher takes off.
	ledger *contest.Ledger
	// renewals are the Leases' renewals as the watcher saw them change, by node (look
	// alone uses them, from one goroutine).
	renewals map[string]renewal
	// toWake and back are the nodes whose change is not acted on yet: a failed wake or
	// release is tried again at the next look, not lost with the health it came from.
	toWake, back map[string]bool
}

// rejoin is how long a node silent for SuspectAfter or more must renew its Lease again
// before the watcher takes it back: a node that flaps does not start and end surges
// with each renewal.
const rejoin = 20 * time.Second

// renewal is what the watcher knows of a Lease's renewals.
type renewal struct {
	// renewTime is the Lease's as last read, changed when the watcher saw it change.
	renewTime, changed time.Time
	// seen is the renewal the watcher reports: when it saw the last renewal it accepts.
	seen time.Time
	// back is when a silent node renewed again, zero when it is not on probation.
	back time.Time
}

func newNodeWatcher(c client.Client, cache, live client.Reader, clk clock.PassiveClock, ledger *contest.Ledger) *nodeWatcher {
	w := &nodeWatcher{client: c, cache: cache, live: live, clock: clk, events: make(chan event.GenericEvent, 1024), ledger: ledger,
		renewals: map[string]renewal{}, toWake: map[string]bool{}, back: map[string]bool{}}
	w.health.Store(&policy.NodeHealth{})
	return w
}

// Health is the latest health of the nodes.
func (w *nodeWatcher) Health() policy.NodeHealth { return *w.health.Load() }

// Start looks at the nodes every healthTick until ctx ends. Errors are logged and the
// next tick tries again: the cache is local, and a failed pod list only delays a wake.
func (w *nodeWatcher) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("nodes")
	t := time.NewTicker(healthTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := w.look(ctx); err != nil {
			logger.Error(err, "Reading the health of the nodes")
		}
	}
}

// look reads the nodes, stores their health, wakes the policies of the nodes whose
// suspicion changed, and takes off holdfast's taints no lost node or surge keeps.
func (w *nodeWatcher) look(ctx context.Context) error {
	h, nodes, err := w.read(ctx)
	if err != nil {
		return err
	}
	// The new health first: a reconcile that read the old one could quarantine a node
	// just released (the next look releases it again).
	old := w.health.Swap(&h)
	logger := log.FromContext(ctx)
	for name, s := range h.Suspects {
		was, suspected := old.Suspects[name]
		switch {
		case !suspected:
			logger.Info("Node suspected lost", "node", klog.KRef("", name), "renewed", s.Renewed)
		case was != s:
			// Tainted by the node-lifecycle controller, or proven down: fencing may act.
			logger.Info("Lost node changed", "node", klog.KRef("", name), "tainted", s.Tainted, "down", s.Down)
		default:
			continue
		}
		w.toWake[name] = true
		delete(w.back, name)
	}
	for name := range old.Suspects {
		if _, is := h.Suspects[name]; !is {
			logger.Info("Node back", "node", klog.KRef("", name))
			w.toWake[name], w.back[name] = true, true
		}
	}
	var errs []error
	for name := range w.toWake {
		if err := w.wake(ctx, name); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(w.toWake, name)
	}
	errs = append(errs, w.release(ctx, nodes, h), w.releaseHandOffs(ctx, nodes))
	return errors.Join(errs...)
}

// read builds the nodes' health from the cache, without copying its objects (which
// are returned too, not to be modified).
func (w *nodeWatcher) read(ctx context.Context) (policy.NodeHealth, []corev1.Node, error) {
	nodes := &corev1.NodeList{}
	if err := w.cache.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return policy.NodeHealth{}, nil, fmt.Errorf("listing nodes: %w", err)
	}
	leases := &coordinationv1.LeaseList{}
	if err := w.cache.List(ctx, leases, client.InNamespace(corev1.NamespaceNodeLease), client.UnsafeDisableDeepCopy); err != nil {
		return policy.NodeHealth{}, nil, fmt.Errorf("listing node Leases: %w", err)
	}
	now := w.clock.Now()
	byNode := make(map[string]*coordinationv1.Lease, len(leases.Items))
	for i := range leases.Items {
		byNode[leases.Items[i].Name] = w.seen(&leases.Items[i], now)
	}
	// Nodes come and go (autoscalers): what is known of those gone goes with them.
	for name := range w.renewals {
		if byNode[name] == nil {
			delete(w.renewals, name)
		}
	}
	for name := range w.back {
		if !slices.ContainsFunc(nodes.Items, func(n corev1.Node) bool { return n.Name == name }) {
			delete(w.back, name)
		}
	}
	h := policy.HealthOf(nodes.Items, byNode, now)
	return h, nodes.Items, nil
}

// seen is the Lease l as the watcher judges its age: renewed when the watcher saw its
// renewTime change, by the operator's clock, as the node-lifecycle controller judges
// it, so that a node whose clock is behind is not lost while it renews. A Lease seen
// for the first time (the operator just started) is taken at its renewTime, but as
// renewed at most SuspectAfter ago: a node is lost only once this operator has itself
// seen no renewal for a while. A node that renews again after a silence is taken back
// only once it has renewed for rejoin (its probation); silent again meanwhile, it stays
// as it was.
func (w *nodeWatcher) seen(l *coordinationv1.Lease, now time.Time) *coordinationv1.Lease {
	if l.Spec.RenewTime == nil {
		return l
	}
	renewed := l.Spec.RenewTime.Time
	r, ok := w.renewals[l.Name]
	switch {
	case !ok:
		r = renewal{renewTime: renewed, changed: now, seen: renewed}
		if floor := now.Add(-policy.SuspectAfter); renewed.Before(floor) {
			r.seen = floor
		}
	case !r.renewTime.Equal(renewed):
		if now.Sub(r.changed) >= policy.SuspectAfter {
			r.back = now // renewed after a silence: on probation from now
		}
		r.renewTime, r.changed = renewed, now
		if r.back.IsZero() || now.Sub(r.back) >= rejoin {
			r.seen, r.back = now, time.Time{}
		}
	}
	w.renewals[l.Name] = r
	if r.seen.Equal(renewed) {
		return l
	}
	c := l.DeepCopy()
	c.Spec.RenewTime = &metav1.MicroTime{Time: r.seen}
	return c
}

// release takes holdfast's taints off every node that is no longer a suspect: the
// NoSchedule quarantine, and the out-of-service taint of a fence holdfast made (one a
// person made has no FencedAnnotation, and stays). Level-based, from the cache: taints
// left by an operator that stopped before the node came back are removed by the next.
// The proof that a node was down (NodeDownAnnotation) goes too, with them or when the
// node is back (w.back), so that it proves no later failure.
func (w *nodeWatcher) release(ctx context.Context, nodes []corev1.Node, h policy.NodeHealth) error {
	for i := range nodes {
		n := &nodes[i]
		_, fenced := n.Annotations[holdfastv1alpha1.FencedAnnotation]
		_, proven := n.Annotations[holdfastv1alpha1.NodeDownAnnotation]
		back := w.back[n.Name]
		delete(w.back, n.Name) // kept below when its release fails
		if _, suspect := h.Suspects[n.Name]; suspect || !policy.Quarantined(n) && !fenced && !(proven && back) {
			continue
		}
		if err := releaseNode(ctx, w.client, n); nodeGone(err) {
			continue
		} else if err != nil {
			if back {
				w.back[n.Name] = true
			}
			return err
		}
		w.ledger.Forget(contest.Taint(n.Name, holdfastv1alpha1.LostTaintKey))
		w.ledger.Forget(contest.Taint(n.Name, holdfastv1alpha1.OutOfServiceTaintKey))
		log.FromContext(ctx).Info("Node back: holdfast's taints removed", "node", klog.KObj(n), "fenced", fenced)
	}
	return nil
}

// taintNode makes t on n, as read from the cache: its taint and its annotations in
// one write, so that no crash leaves one without the other. It returns the node as
// written, which the next taint of the same reconcile starts from.
func taintNode(ctx context.Context, c client.Client, n *corev1.Node, t policy.NodeTaint, now time.Time) (*corev1.Node, error) {
	annotations := map[string]any{}
	for k, v := range t.Annotations(now) {
		annotations[k] = v
	}
	return setTaints(ctx, c, n, t.On(n, now).Spec.Taints, annotations)
}

// releaseNode takes holdfast's quarantine off n, as read from the cache, and the
// out-of-service taint only if holdfast put it (FencedAnnotation), with that
// annotation and the proof of the failure (NodeDownAnnotation), in one write.
func releaseNode(ctx context.Context, c client.Client, n *corev1.Node) error {
	_, fencedByUs := n.Annotations[holdfastv1alpha1.FencedAnnotation]
	taints := slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t corev1.Taint) bool {
		return t.Key == holdfastv1alpha1.LostTaintKey || fencedByUs && t.Key == holdfastv1alpha1.OutOfServiceTaintKey
	})
	_, err := setTaints(ctx, c, n, taints, map[string]any{holdfastv1alpha1.FencedAnnotation: nil, holdfastv1alpha1.NodeDownAnnotation: nil})
	return err
}

// setTaints writes n's taints and annotations (none: the node's stay as they are; a
// null in a merge patch would remove them all). The patch carries the taints with n's
// resourceVersion: a change made meanwhile (the node-lifecycle controller's own taints)
// fails it, and the caller tries again on what the cache then holds. A node deleted
// meanwhile fails it with NotFound, which the callers pass over (nodeGone).
func setTaints(ctx context.Context, c client.Client, n *corev1.Node, taints []corev1.Taint, annotations map[string]any) (*corev1.Node, error) {
	metadata := map[string]any{"resourceVersion": n.ResourceVersion}
	if len(annotations) > 0 {
		metadata["annotations"] = annotations
	}
	patch, err := json.Marshal(map[string]any{"metadata": metadata, "spec": map[string]any{"taints": taints}})
	if err != nil {
		return nil, fmt.Errorf("encoding the taints of node %s: %w", n.Name, err)
	}
	written := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}
	if err := c.Patch(ctx, written, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return nil, fmt.Errorf("setting the taints of node %s: %w", n.Name, err)
	}
	return written, nil
}

// nodeGone says a taint's write found its node deleted: nothing to taint or release,
// and nothing to log as done.
func nodeGone(err error) bool { return apierrors.IsNotFound(err) }

// wake sends one event for each namespace with pods on node.
func (w *nodeWatcher) wake(ctx context.Context, node string) error {
	namespaces, err := namespacesOnNode(ctx, w.live, node)
	if err != nil {
		return err
	}
	for ns := range maps.Keys(namespaces) {
		obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns}}
		select {
		case w.events <- event.GenericEvent{Object: obj}:
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}
