package disruptionpolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
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

// nodeWatcher keeps the health of every node (policy.NodeHealth) from the cached Nodes
// and node Leases, and wakes the policies of the namespaces whose pods run on a node
// that becomes a suspect or stops being one. No event announces a Lease that is not
// renewed: only looking at the clock does.
type nodeWatcher struct {
	client client.Client
	cache  client.Reader
	live  client.Reader
	clock clock.PassiveClock
	// events carries one event per namespace to wake, to the controller.
	events chan event.GenericEvent
	health atomic.Pointer[policy.NodeHealth]
}

func newNodeWatcher(c client.Client, cache, live client.Reader, clk clock.PassiveClock) *nodeWatcher {
	w := &nodeWatcher{client: c, cache: cache, live: live, clock: clk, events: make(chan event.GenericEvent, 1024)}
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

// look reads the nodes, stores their health and wakes the policies of the nodes whose
// suspicion changed.
func (w *nodeWatcher) look(ctx context.Context) error {
	h, nodes, err := w.read(ctx)
	if err != nil {
		return err
	}
	if err := w.release(ctx, nodes, h); err != nil {
		return err
	}
	old := w.health.Swap(&h)
	for name := range h.Suspects {
		if _, was := old.Suspects[name]; !was {
			log.FromContext(ctx).Info("Node suspected lost", "node", klog.KRef("", name), "renewed", h.Suspects[name].Renewed)
			if err := w.wake(ctx, name); err != nil {
				return err
			}
		}
	}
	for name := range old.Suspects {
		if _, is := h.Suspects[name]; !is {
			log.FromContext(ctx).Info("Node back", "node", klog.KRef("", name))
			if err := w.wake(ctx, name); err != nil {
				return err
			}
		}
	}
	return nil
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
	byNode := make(map[string]*coordinationv1.Lease, len(leases.Items))
	for i := range leases.Items {
		byNode[leases.Items[i].Name] = &leases.Items[i]
	}
	now := w.clock.Now()
	h := policy.NodeHealth{Zones: map[string]int{}}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		s, suspect := policy.SuspectOf(n, byNode[n.Name], now)
		h.Zones[s.Zone]++
		if suspect {
			if h.Suspects == nil {
				h.Suspects = map[string]policy.Suspect{}
			}
			h.Suspects[n.Name] = s
		}
	}
	return h, nodes.Items, nil
}

// release takes holdfast's NoSchedule taint off every node that is no longer a
// suspect. Level-based, from the cache: a taint left by an operator that stopped
// before the node came back is removed by the next one.
func (w *nodeWatcher) release(ctx context.Context, nodes []corev1.Node, h policy.NodeHealth) error {
	for i := range nodes {
		n := &nodes[i]
		if _, suspect := h.Suspects[n.Name]; suspect || !policy.Quarantined(n) {
			continue
		}
		if err := setLostTaint(ctx, w.client, n, false, w.clock.Now()); err != nil {
			return err
		}
		log.FromContext(ctx).Info("Node released", "node", klog.KObj(n))
	}
	return nil
}

// setLostTaint adds or removes holdfast's NoSchedule taint on n, as read from the
// cache. The patch carries the taints with n's resourceVersion: a change made meanwhile
// (the node-lifecycle controller's own taints) fails it, and the caller tries again on
// what the cache then holds.
func setLostTaint(ctx context.Context, c client.Client, n *corev1.Node, on bool, now time.Time) error {
	taints := slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t corev1.Taint) bool { return t.Key == holdfastv1alpha1.LostTaintKey })
	if on {
		taints = append(taints, corev1.Taint{Key: holdfastv1alpha1.LostTaintKey, Effect: corev1.TaintEffectNoSchedule, TimeAdded: ptr.To(metav1.NewTime(now))})
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": n.ResourceVersion}, "spec": map[string]any{"taints": taints}})
	if err != nil {
		return fmt.Errorf("encoding the taints of node %s: %w", n.Name, err)
	}
	if err := c.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("setting the taints of node %s: %w", n.Name, err)
	}
	return nil
}

// wake sends one event for each namespace with pods on node.
func (w *nodeWatcher) wake(ctx context.Context, node string) error {
	pods := &metav1.PartialObjectMetadataList{}
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := w.live.List(ctx, pods, client.MatchingFields{podNodeField: node}); err != nil {
		return fmt.Errorf("listing the pods of node %s: %w", node, err)
	}
	namespaces := map[string]bool{}
	for i := range pods.Items {
		namespaces[pods.Items[i].Namespace] = true
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

// lostPodLabels reads the labels of namespace's live pods on the suspect nodes, from
// the API server (the cache holds no pods): the workloads they belong to need their
// pods read.
func lostPodLabels(ctx context.Context, live client.Reader, namespace string, h policy.NodeHealth) ([]map[string]string, error) {
	var out []map[string]string
	for node := range h.Suspects {
		pods := &metav1.PartialObjectMetadataList{}
		pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		if err := live.List(ctx, pods, client.InNamespace(namespace), client.MatchingFields{podNodeField: node}); err != nil {
			return nil, fmt.Errorf("listing the pods of node %s in namespace %s: %w", node, namespace, err)
		}
		for i := range pods.Items {
			if pods.Items[i].DeletionTimestamp == nil {
				out = append(out, pods.Items[i].Labels)
			}
		}
	}
	return out, nil
}
