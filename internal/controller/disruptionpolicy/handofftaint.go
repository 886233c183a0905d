package disruptionpolicy

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/contest"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// releaseHandOffs takes the hand-off taint off the nodes no surge hands over any more
// (policy.LeftoverHandOffTaints): the surge is over, or an operator stopped between the
// taint and the surge. Level-based, from the cache; the surge sets are read only while
// a node carries the taint.
func (w *nodeWatcher) releaseHandOffs(ctx context.Context, nodes []corev1.Node) error {
	tainted := false
	for i := range nodes {
		tainted = tainted || policy.HandOffTainted(&nodes[i])
	}
	if !tainted {
		return nil
	}
	list := &appsv1.ReplicaSetList{}
	if err := w.cache.List(ctx, list, client.HasLabels{holdfastv1alpha1.SurgeOfLabel}, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing surge sets: %w", err)
	}
	sets := make([]policy.SurgeSet, 0, len(list.Items))
	for i := range list.Items {
		if set, ok := policy.SurgeSetOf(&list.Items[i]); ok {
			sets = append(sets, set)
		}
	}
	for _, name := range policy.LeftoverHandOffTaints(nodes, sets, w.clock.Now()) {
		n := &nodes[slices.IndexFunc(nodes, func(n corev1.Node) bool { return n.Name == name })]
		taints := slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t corev1.Taint) bool { return t.Key == holdfastv1alpha1.HandOffTaintKey })
		if _, err := setTaints(ctx, w.client, n, taints, nil); nodeGone(err) {
			continue
		} else if err != nil {
			return err
		}
		w.ledger.Forget(contest.Taint(n.Name, holdfastv1alpha1.HandOffTaintKey))
		log.FromContext(ctx).Info("Hand-off over: holdfast's taint removed", "node", klog.KObj(n))
	}
	return nil
}
