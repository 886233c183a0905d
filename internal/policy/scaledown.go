package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
)

// What a hand-off reads of the node autoscalers' objects, reduced from them here once,
// whether they come from the operator's cache or from a snapshot.

// cluster-autoscaler's annotations that keep it off a node whatever the budgets allow,
// or let it evict a pod it would keep.
const (
	caScaleDownDisabled = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
	caSafeToEvict       = availability.AnnotationSafeToEvict
	// caSafeLocalVolumes lists the local volumes of a pod that do not keep
	// cluster-autoscaler off its node.
	caSafeLocalVolumes = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
	// mirrorPod marks a static pod's mirror, which cluster-autoscaler ignores.
	mirrorPod = "kubernetes.io/config.mirror"
	// kubeSystem is the namespace whose pods cluster-autoscaler evicts only when marked
	// safe to evict or covered by a budget.
	kubeSystem = "kube-system"
)

// caUnsafe says what, besides its budgets, cluster-autoscaler's scale-down would find
// against evicting pod, and a safe-to-evict "true" would let it pass: a local volume
// (hostPath, or an emptyDir not in memory) not listed in safe-to-evict-local-volumes,
// or the kube-system namespace. "" when nothing: marking such a pod safe to evict
// changes only that cluster-autoscaler's simulation skips its budgets. (The pod's other
// checks that the mark skips, a controller and no safe-to-evict "false", are the
// hand-off's blockers already.)
func caUnsafe(pod *corev1.Pod) string {
	if pod.Namespace == kubeSystem {
		return "it runs in " + kubeSystem
	}
	listed := strings.Split(pod.Annotations[caSafeLocalVolumes], ",")
	for _, v := range pod.Spec.Volumes {
		local := v.HostPath != nil || v.EmptyDir != nil && v.EmptyDir.Medium != corev1.StorageMediumMemory
		if local && !slices.Contains(listed, v.Name) {
			return fmt.Sprintf("its volume %s is local storage", v.Name)
		}
	}
	return ""
}

// ClaimNode is the node a Karpenter NodeClaim launched; "" before it has one.
func ClaimNode(claim *unstructured.Unstructured) string {
	name, _, _ := unstructured.NestedString(claim.Object, "status", "nodeName")
	return name
}

// ClaimOf reads a NodeClaim and its NodePool (nil when it is gone), without the load of
// its node.
func ClaimOf(claim, pool *unstructured.Unstructured) NodeClaim {
	c := NodeClaim{Name: claim.GetName(), ConsolidatableSince: ConsolidatableSince(claim)}
	c.ConsolidationPolicy, c.ConsolidateAfter = consolidation(pool)
	return c
}

// ConsolidatableSince is when a NodeClaim's Consolidatable condition turned True; zero
// while it is not True.
func ConsolidatableSince(claim *unstructured.Unstructured) time.Time {
	c := condition(claim, "Consolidatable")
	if c == nil || c["status"] != "True" {
		return time.Time{}
	}
	s, _ := c["lastTransitionTime"].(string)
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// consolidation reads a NodePool's consolidationPolicy and consolidateAfter; "" and 0 for
// a NodePool that is gone (nil) or does not consolidate ("Never").
func consolidation(pool *unstructured.Unstructured) (string, time.Duration) {
	if pool == nil {
		return "", 0
	}
	after, _, _ := unstructured.NestedString(pool.Object, "spec", "disruption", "consolidateAfter")
	d, err := time.ParseDuration(after)
	if err != nil {
		return "", 0
	}
	policy, _, _ := unstructured.NestedString(pool.Object, "spec", "disruption", "consolidationPolicy")
	return policy, d
}

// blocker names what on a pod keeps an autoscaler off its node whatever its budget
// allows; "" when nothing does.
type blocker func(*corev1.Pod) string

// counted reports whether pod counts in its node's load: not finished, nor being
// deleted.
func counted(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// loadOf is what runs on a node, its pods, for a hand-off to the autoscaler blocks
// stands for: what keeps it off the node whatever the budgets allow, and what its pods
// but DaemonSets' request. Pods being deleted or finished are not counted, nor those
// that deps, by index (nil: none), says are leaving; what those that may leave request
// is in MayLeave too.
func loadOf(pods []corev1.Pod, blocks blocker, deps []departure) Load {
	l := Load{Requested: corev1.ResourceList{}}
	for i := range pods {
		p := &pods[i]
		dep := staying
		if deps != nil {
			dep = deps[i]
		}
		if !counted(p) || dep == leaving {
			continue
		}
		if l.Blocker == "" {
			l.Blocker = blocks(p)
		}
		if owner := metav1.GetControllerOf(p); owner != nil && owner.Kind == "DaemonSet" {
			continue // it goes with the node, wherever the others go
		}
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			add(l.Requested, name, q)
			if dep == mayLeave {
				if l.MayLeave == nil {
					l.MayLeave = corev1.ResourceList{}
				}
				add(l.MayLeave, name, q)
			}
		}
	}
	return l
}

// add adds q to list's name.
func add(list corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	sum := list[name]
	sum.Add(q)
	list[name] = sum
}

// karpenterBlocker is do-not-disrupt, on the node or active on a pod there: Karpenter's
// own test.
func karpenterBlocker(node *corev1.Node, now time.Time) blocker {
	return func(p *corev1.Pod) string {
		if node.Annotations[availability.AnnotationKarpenterDoNotDisrupt] == "true" {
			return fmt.Sprintf("node %s has %s", node.Name, availability.AnnotationKarpenterDoNotDisrupt)
		}
		if availability.KarpenterDoNotDisrupt(p.Annotations[availability.AnnotationKarpenterDoNotDisrupt], p.Status.StartTime, now) {
			return fmt.Sprintf("pod %s has %s", klog.KObj(p), availability.AnnotationKarpenterDoNotDisrupt)
		}
		return ""
	}
}

// caBlocker is what makes cluster-autoscaler's scale-down simulation drop a node before
// it looks at the budgets of the single replicas holdfast hands over: scale-down
// disabled on the node, a pod that is not safe to evict or that no controller would
// make again, a pod whose budget (other than the hand-off's own policy's) allows no
// eviction. budgets are those of the pods' namespaces, by namespace.
func caBlocker(node *corev1.Node, own *holdfastv1alpha1.DisruptionPolicy, budgets map[string][]policyv1.PodDisruptionBudget) blocker {
	return func(p *corev1.Pod) string {
		if node.Annotations[caScaleDownDisabled] == "true" {
			return fmt.Sprintf("node %s has %s", node.Name, caScaleDownDisabled)
		}
		if _, mirror := p.Annotations[mirrorPod]; mirror {
			return ""
		}
		if p.Annotations[caSafeToEvict] == "false" {
			return fmt.Sprintf("pod %s has %s: \"false\"", klog.KObj(p), caSafeToEvict)
		}
		if p.Annotations[caSafeToEvict] != "true" && metav1.GetControllerOf(p) == nil {
			return fmt.Sprintf("pod %s has no controller", klog.KObj(p))
		}
		for i := range budgets[p.Namespace] {
			b := &budgets[p.Namespace][i]
			if b.Namespace == own.Namespace && b.Labels[holdfastv1alpha1.PolicyLabel] == own.Name || b.Status.DisruptionsAllowed > 0 {
				continue
			}
			if sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector); err == nil && !sel.Empty() && sel.Matches(labels.Set(p.Labels)) {
				return fmt.Sprintf("pod %s's budget %s allows no eviction", klog.KObj(p), b.Name)
			}
		}
		return ""
	}
}
