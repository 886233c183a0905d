package disruptionpolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
		msg := fmt.Sprintf("node %s tainted %s: %s", e.Node, e.Key, e.Proof)
		if len(e.Bystanders) > 0 {
			msg += fmt.Sprintf("; the taint releases too StatefulSet pods this policy does not fence for: %s", strings.Join(e.Bystanders, ", "))
		}
		ev := announce.Warning(EventFenced, msg).
			About(&corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: e.Node})
		return &ev, nil
	}
	return nil, fmt.Errorf("no way to make effect %T", e)
}

// annotatePod sets one of holdfast's pod marks (karpenter.sh/do-not-disrupt,
// cluster-autoscaler.kubernetes.io/safe-to-evict) on a pod with the annotation that
// says the policy put it there, or removes both. On the pod, not on its template: a
// template change would roll the very pod it is for. A pod gone meanwhile needs none.
func (r *reconciler) annotatePod(ctx context.Context, namespace, policyName string, a policy.PodAnnotation) error {
	annotations := map[string]any{a.Mark.Key: nil, a.Mark.By: nil}
	if a.Set {
		annotations = map[string]any{a.Mark.Key: "true", a.Mark.By: policyName}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return fmt.Errorf("encoding the annotation %s of pod %s: %w", a.Mark.Key, klog.KRef(namespace, a.Pod), err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: a.Pod}}
	if err := r.client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("annotating pod %s with %s: %w", klog.KRef(namespace, a.Pod), a.Mark.Key, err)
	}
	return nil
}

// labelPod sets a pod's zone label, which zone-aware budgets select it on, or removes
// it (z.Zone ""). A pod gone meanwhile needs none.
func (r *reconciler) labelPod(ctx context.Context, namespace string, z policy.PodZone) error {
	var value any // null removes the label in a merge patch
	if z.Zone != "" {
		value = z.Zone
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{holdfastv1alpha1.ZoneLabel: value}}})
	if err != nil {
		return fmt.Errorf("encoding the zone label of pod %s: %w", klog.KRef(namespace, z.Pod), err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: z.Pod}}
	if err := r.client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("setting the zone label of pod %s: %w", klog.KRef(namespace, z.Pod), err)
	}
	return nil
}

// deleteBudget deletes the budget as the cache saw it. The resourceVersion precondition
// keeps it from deleting a budget that another policy has just taken over; a conflict
// (most often only the disruption controller's status write) is an error, so that the
// reconcile is retried once the cache has caught up.
func (r *reconciler) deleteBudget(ctx context.Context, b *policyv1.PodDisruptionBudget) error {
	if err := r.client.Delete(ctx, b, client.Preconditions{UID: &b.UID, ResourceVersion: &b.ResourceVersion}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting PodDisruptionBudget %s: %w", klog.KObj(b), err)
	}
	return nil
}
