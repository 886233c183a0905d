package disruptionpolicy

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/announce"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// tainted are the log messages of the taints but the fence's.
var tainted = map[string]string{
	holdfastv1alpha1.LostTaintKey:    "Lost node quarantined",
	holdfastv1alpha1.HandOffTaintKey: "Node tainted for its hand-off",
}

// execute makes one effect of p's decision, as obs saw the cluster: the writes to
// objects another writer may undo go through the ledger (cs). A fence returns the Event
// that announces it, recorded once the reconcile's writes are done.
func (r *reconciler) execute(ctx context.Context, cs *contests, p *holdfastv1alpha1.DisruptionPolicy, obs policy.Observed, e policy.Effect) (*announce.Event, error) {
	logger := log.FromContext(ctx)
	switch e := e.(type) {
	case policy.ApplyBudget:
		return nil, r.applyBudget(ctx, cs, e.Budget)
	case policy.DeleteBudget:
		return nil, r.deleteBudget(ctx, e.Budget)
	case policy.PodZone:
		return nil, r.guardedLabel(ctx, cs, p.Namespace, e)
	case policy.PodAnnotation:
		return nil, r.guardedAnnotation(ctx, cs, p.Namespace, p.Name, e)
	case policy.Surge:
		if err := r.surge(ctx, p, e); err != nil {
			return nil, err
		}
		logger.Info("Surge set", "replicaSet", klog.KRef(p.Namespace, e.Name), "deployment", klog.KRef(p.Namespace, e.Deployment), "replicas", e.Replicas, "deleted", e.Delete)
		return nil, nil
	case policy.NodeTaint:
		n := obs.Nodes[e.Node]
		done, err := r.taint(ctx, cs, n, e.Key, func() error {
			written, err := taintNode(ctx, r.client, n, e, obs.Now)
			if err == nil {
				obs.Nodes[e.Node] = written // a fence after a quarantine starts from it
			}
			return err
		})
		if err != nil || !done {
			return nil, err
		}
		if e.Key != holdfastv1alpha1.OutOfServiceTaintKey {
			logger.Info(tainted[e.Key], "node", klog.KRef("", e.Node))
			return nil, nil
		}
		logger.Info("Lost node fenced", "node", klog.KRef("", e.Node), "proof", e.Proof)
		ev := announce.Warning(EventFenced, fmt.Sprintf("node %s tainted %s: %s", e.Node, e.Key, e.Proof)).
			About(&corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: e.Node})
		return &ev, nil
	}
	return nil, fmt.Errorf("no way to make effect %T", e)
}
