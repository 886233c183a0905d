package disruptionpolicy

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// cluster-autoscaler's annotations that keep it off a node whatever the budgets allow.
const (
	caScaleDownDisabled = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
	caSafeToEvict       = "cluster-autoscaler.kubernetes.io/safe-to-evict"
	// mirrorPod marks a static pod's mirror, which cluster-autoscaler ignores.
	mirrorPod = "kubernetes.io/config.mirror"
)

// NodeGroups reads which of nodes are in cluster-autoscaler's node groups (the
// operator's --cluster-autoscaler-node-group-label), Karpenter's (claims) aside, and,
// for those, what runs on them; nil where cluster-autoscaler is not configured.
func (r *observer) NodeGroups(ctx context.Context, nodes map[string]*corev1.Node, claims map[string]policy.NodeClaim, p *holdfastv1alpha1.DisruptionPolicy) (map[string]policy.NodeGroupMember, error) {
	label := r.autoscalers.NodeGroupLabel
	if label == "" {
		return nil, nil
	}
	out := map[string]policy.NodeGroupMember{}
	for name, node := range nodes {
		group := node.Labels[label]
		if _, karpenter := claims[name]; group == "" || karpenter {
			continue
		}
		load, err := r.load(ctx, node, r.caBlocker(node, p))
		if err != nil {
			return nil, err
		}
		out[name] = policy.NodeGroupMember{Group: group, Load: load}
	}
	return out, nil
}

// caBlocker is what makes cluster-autoscaler's scale-down simulation drop a node before
// it looks at the budgets of the single replicas holdfast hands over: scale-down
// disabled on the node, a pod that is not safe to evict or that no controller would
// make again, a pod whose budget (other than the hand-off's own policy's) allows no
// eviction.
func (r *observer) caBlocker(node *corev1.Node, own *holdfastv1alpha1.DisruptionPolicy) blocker {
	return func(ctx context.Context, p *corev1.Pod) (string, error) {
		if node.Annotations[caScaleDownDisabled] == "true" {
			return fmt.Sprintf("node %s has %s", node.Name, caScaleDownDisabled), nil
		}
		if _, mirror := p.Annotations[mirrorPod]; mirror {
			return "", nil
		}
		if p.Annotations[caSafeToEvict] == "false" {
			return fmt.Sprintf("pod %s has %s: \"false\"", klog.KObj(p), caSafeToEvict), nil
		}
		if p.Annotations[caSafeToEvict] != "true" && metav1.GetControllerOf(p) == nil {
			return fmt.Sprintf("pod %s has no controller", klog.KObj(p)), nil
		}
		budgets := &policyv1.PodDisruptionBudgetList{}
		if err := r.client.List(ctx, budgets, client.InNamespace(p.Namespace)); err != nil {
			return "", fmt.Errorf("listing the budgets of namespace %s: %w", p.Namespace, err)
		}
		for i := range budgets.Items {
			b := &budgets.Items[i]
			if b.Namespace == own.Namespace && b.Labels[holdfastv1alpha1.PolicyLabel] == own.Name || b.Status.DisruptionsAllowed > 0 {
				continue
			}
			if sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector); err == nil && !sel.Empty() && sel.Matches(labels.Set(p.Labels)) {
				return fmt.Sprintf("pod %s's budget %s allows no eviction", klog.KObj(p), b.Name), nil
			}
		}
		return "", nil
	}
}
