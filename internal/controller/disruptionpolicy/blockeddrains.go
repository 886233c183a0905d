package disruptionpolicy

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// blockedDrain is a budget allowing no disruption that covers pods on a node being
// drained: the drain of that node waits on them.
type blockedDrain struct {
	budget *policyv1.PodDisruptionBudget
	node   string
	pods   int
}

// blockedDrains finds, among budgets (each allowing no disruption), those covering pods
// of podsByNode (the pods of each node being drained), sorted by namespace, budget and
// node. Pods a drain leaves on the node (DaemonSet and mirror pods, availability's
// SkippedByDrain: kubectl drain --ignore-daemonsets and holdfast drain leave them) hold
// no drain back through their budgets; nor do pods being deleted, which the Eviction API
// asks no budget about.
func blockedDrains(budgets []policyv1.PodDisruptionBudget, podsByNode map[string][]metav1.PartialObjectMetadata) []blockedDrain {
	set := availability.NewBudgetSet(budgets)
	var out []blockedDrain
	for node, pods := range podsByNode {
		counts := map[*policyv1.PodDisruptionBudget]int{}
		for i := range pods {
			pod := &pods[i]
			// The drain's rules read only the pod's metadata here (its owner, its
			// annotations): that is all the list holds.
			if pod.DeletionTimestamp != nil || availability.SkippedByDrain(&corev1.Pod{ObjectMeta: pod.ObjectMeta}) {
				continue
			}
			for _, b := range set.Covering(pod.Namespace, pod.Labels) {
				counts[b]++
			}
		}
		for b, n := range counts {
			out = append(out, blockedDrain{budget: b, node: node, pods: n})
		}
	}
	slices.SortFunc(out, func(a, b blockedDrain) int {
		return cmp.Or(cmp.Compare(a.budget.Namespace, b.budget.Namespace), cmp.Compare(a.budget.Name, b.budget.Name), cmp.Compare(a.node, b.node))
	})
	return out
}

// drainingPods lists the nodes being drained from the cache and the metadata of each
// one's pods from the apiserver, which the cache does not hold: one request per node
// being drained, made only while some budget allows no disruption.
func drainingPods(ctx context.Context, cache, live client.Reader) (map[string][]metav1.PartialObjectMetadata, error) {
	nodes := &corev1.NodeList{}
	// Read only, so the cached nodes need no copy.
	if err := cache.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	out := map[string][]metav1.PartialObjectMetadata{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !policy.BeingDrained(n) {
			continue
		}
		pods := &metav1.PartialObjectMetadataList{}
		pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		if err := live.List(ctx, pods, client.MatchingFields{podNodeField: n.Name}); err != nil {
			return nil, fmt.Errorf("listing the pods of node %s: %w", n.Name, err)
		}
		out[n.Name] = pods.Items
	}
	return out, nil
}
