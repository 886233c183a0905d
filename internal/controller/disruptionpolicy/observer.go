package disruptionpolicy

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// observer is the reconciler as policy.Observe reads it (policy.Source): the shared cache
// for what it holds, the API server for pods and the objects of custom kinds.
type observer reconciler

// Policies lists the namespace's DisruptionPolicies from the cache.
func (r *observer) Policies(ctx context.Context, namespace string) ([]holdfastv1alpha1.DisruptionPolicy, error) {
	policies := &holdfastv1alpha1.DisruptionPolicyList{}
	if err := r.client.List(ctx, policies, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing DisruptionPolicies: %w", err)
	}
	return policies.Items, nil
}

// Workloads lists one kind of workload from the cache.
func (r *observer) Workloads(ctx context.Context, namespace, kind string, sel labels.Selector) ([]policy.Workload, error) {
	return r.list(ctx, kind, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel})
}

// SurgeSets lists the namespace's surge sets from the cache, which holds no other
// ReplicaSets.
func (r *observer) SurgeSets(ctx context.Context, namespace string) ([]appsv1.ReplicaSet, error) {
	sets := &appsv1.ReplicaSetList{}
	if err := r.client.List(ctx, sets, client.InNamespace(namespace), client.HasLabels{holdfastv1alpha1.SurgeOfLabel}); err != nil {
		return nil, fmt.Errorf("listing surge sets: %w", err)
	}
	return sets.Items, nil
}

// Budgets lists the namespace's PodDisruptionBudgets from the cache.
func (r *observer) Budgets(ctx context.Context, namespace string) ([]policyv1.PodDisruptionBudget, error) {
	budgets := &policyv1.PodDisruptionBudgetList{}
	if err := r.client.List(ctx, budgets, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing PodDisruptionBudgets: %w", err)
	}
	return budgets.Items, nil
}

// PodMeta reads the labels of the namespace's live pods: a pod carries labels its
// template does not (pod-template-hash, statefulset.kubernetes.io/pod-name) that a
// user's budget may select; and which pods carry holdfast's marks, by policy.
// Metadata only, from the apiserver, since the shared cache holds only companion pods.
func (r *observer) PodMeta(ctx context.Context, namespace string) ([]map[string]string, policy.Marks, error) {
	pods, err := r.podMetadata(ctx, namespace)
	if err != nil {
		return nil, nil, err
	}
	out := make([]map[string]string, 0, len(pods))
	marked := policy.Marks{}
	for i := range pods {
		// The Eviction API asks no budget about a pod being deleted.
		if pods[i].DeletionTimestamp == nil {
			out = append(out, pods[i].Labels)
		}
		marked.Read(pods[i].Name, pods[i].Annotations)
	}
	return out, marked, nil
}

// nodeLists bounds the pod lists by node LostPodLabels makes: with more suspects (a
// zone, or every node under a stale cache) one list of the namespace costs less.
const nodeLists = 4

// LostPodLabels reads the labels of namespace's pods on the suspect nodes, being
// deleted too: a StatefulSet's pod stays so on a dead node until it is fenced. It
// makes one list by node for a few suspects, one list of the namespace for more.
func (r *observer) LostPodLabels(ctx context.Context, namespace string, h policy.NodeHealth) ([]map[string]string, error) {
	var out []map[string]string
	if len(h.Suspects) > nodeLists {
		pods := &corev1.PodList{}
		if err := r.live.List(ctx, pods, client.InNamespace(namespace)); err != nil {
			return nil, fmt.Errorf("listing pods of namespace %s: %w", namespace, err)
		}
		for i := range pods.Items {
			if _, suspect := h.Suspects[pods.Items[i].Spec.NodeName]; suspect {
				out = append(out, pods.Items[i].Labels)
			}
		}
		return out, nil
	}
	for node := range h.Suspects {
		pods, err := r.podMetadata(ctx, namespace, client.MatchingFields{podNodeField: node})
		if err != nil {
			return nil, err
		}
		for i := range pods {
			out = append(out, pods[i].Labels)
		}
	}
	return out, nil
}

// podMetadata lists the metadata of namespace's pods from the API server.
func (r *observer) podMetadata(ctx context.Context, namespace string, opts ...client.ListOption) ([]metav1.PartialObjectMetadata, error) {
	pods := &metav1.PartialObjectMetadataList{}
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := r.live.List(ctx, pods, append(opts, client.InNamespace(namespace))...); err != nil {
		return nil, fmt.Errorf("listing pods of namespace %s: %w", namespace, err)
	}
	return pods.Items, nil
}

// Pods lists the pods sel selects from the API server.
func (r *observer) Pods(ctx context.Context, namespace string, sel labels.Selector) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := r.live.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing pods of namespace %s matching %s: %w", namespace, sel, err)
	}
	return pods.Items, nil
}

// Owner reads a pod's owner: a Deployment or a StatefulSet from the cache, a
// ReplicaSet's metadata from the API server (the cache holds only surge sets, and a
// metadata read of the cache would start an informer of every ReplicaSet). Other kinds
// are not read (nil).
func (r *observer) Owner(ctx context.Context, namespace, kind, name string) (metav1.Object, error) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	var err error
	switch kind {
	case holdfastv1alpha1.KindDeployment:
		d := &appsv1.Deployment{}
		if err = r.client.Get(ctx, key, d); err == nil {
			return d, nil
		}
	case holdfastv1alpha1.KindStatefulSet:
		s := &appsv1.StatefulSet{}
		if err = r.client.Get(ctx, key, s); err == nil {
			return s, nil
		}
	case "ReplicaSet":
		rs := &metav1.PartialObjectMetadata{}
		rs.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
		if err = r.live.Get(ctx, key, rs); err == nil {
			return rs, nil
		}
	default:
		return nil, nil
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return nil, fmt.Errorf("getting %s %s: %w", kind, key, err)
}

// Node gets a node from the cache.
func (r *observer) Node(ctx context.Context, name string) (*corev1.Node, error) {
	node := &corev1.Node{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: name}, node); apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("getting node %s: %w", name, err)
	}
	return node, nil
}

// Health is the node watcher's latest.
func (r *observer) Health() policy.NodeHealth { return r.nodes.Health() }

// ScaleTarget reads the objects of one scale target that sel selects, and each one's
// scale, straight from the apiserver: the operator cannot know custom kinds in advance,
// so they are neither in the shared cache nor watched (Decide requeues the policy every
// scaleTargetPoll instead). Only object metadata is listed, and only the scale is read
// of each. A kind not served or a permission missing is returned as a message for
// status, not as an error: retrying would not fix it, a human must.
func (r *observer) ScaleTarget(ctx context.Context, namespace string, t holdfastv1alpha1.ScaleTarget, sel labels.Selector) ([]policy.Workload, string, error) {
	gv, err := schema.ParseGroupVersion(t.APIVersion)
	if err != nil {
		return nil, fmt.Sprintf("scale target %s %s: %v", t.APIVersion, t.Kind, err), nil
	}
	mapping, err := r.client.RESTMapper().RESTMapping(gv.WithKind(t.Kind).GroupKind(), gv.Version)
	if meta.IsNoMatchError(err) {
		return nil, fmt.Sprintf("kind %s is not served in %s: is its CustomResourceDefinition installed?", t.Kind, t.APIVersion), nil
	} else if err != nil {
		return nil, "", fmt.Errorf("finding the resource of %s %s: %w", t.APIVersion, t.Kind, err)
	}
	resource := mapping.Resource.GroupResource().String()
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gv.WithKind(t.Kind + "List"))
	if err := r.live.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		if apierrors.IsForbidden(err) {
			return nil, forbidden(t, "list", resource), nil
		}
		return nil, "", fmt.Errorf("listing %s: %w", resource, err)
	}
	var out []policy.Workload
	for i := range list.Items {
		m := &list.Items[i]
		obj, scale := &unstructured.Unstructured{}, &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gv.WithKind(t.Kind))
		obj.SetNamespace(namespace)
		obj.SetName(m.Name)
		if err := r.client.SubResource("scale").Get(ctx, obj, scale); apierrors.IsNotFound(err) {
			continue // deleted since the list
		} else if apierrors.IsForbidden(err) {
			return nil, forbidden(t, "get", resource+"/scale"), nil
		} else if err != nil {
			return nil, "", fmt.Errorf("getting the scale of %s %s: %w", t.Kind, klog.KObj(m), err)
		}
		w := policy.Workload{Kind: t.Kind, APIVersion: t.APIVersion, Name: m.Name, UID: m.UID, Labels: m.Labels, Annotations: m.Annotations}
		n, _, _ := unstructured.NestedInt64(scale.Object, "spec", "replicas")
		w.Replicas = int32(n)
		// The scale's selector is a string, as `kubectl get --selector` takes it.
		if s, _, _ := unstructured.NestedString(scale.Object, "status", "selector"); s != "" {
			if ls, err := metav1.ParseToLabelSelector(s); err == nil {
				w.Selector, w.TemplateLabels = ls, ls.MatchLabels
			}
		}
		out = append(out, w)
	}
	return out, "", nil
}

// list lists one kind of workload from the cache, as Workloads.
func (r *observer) list(ctx context.Context, kind string, opts ...client.ListOption) ([]policy.Workload, error) {
	var list client.ObjectList
	switch kind {
	case holdfastv1alpha1.KindDeployment:
		list = &appsv1.DeploymentList{}
	case holdfastv1alpha1.KindStatefulSet:
		list = &appsv1.StatefulSetList{}
	default:
		list = &appsv1.DaemonSetList{}
	}
	if err := r.client.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing %ss: %w", kind, err)
	}
	var out []policy.Workload
	switch l := list.(type) {
	case *appsv1.DeploymentList:
		for i := range l.Items {
			out = append(out, policy.WorkloadOf(&l.Items[i]))
		}
	case *appsv1.StatefulSetList:
		for i := range l.Items {
			out = append(out, policy.WorkloadOf(&l.Items[i]))
		}
	case *appsv1.DaemonSetList:
		for i := range l.Items {
			out = append(out, policy.WorkloadOf(&l.Items[i]))
		}
	}
	return out, nil
}

// Settings are the operator's flags that bound its decisions.
func (r *observer) Settings() policy.Settings { return r.settings }

// ClusterPolicy is the ClusterDisruptionPolicy of that name from the cache; nil when
// there is none.
func (r *observer) ClusterPolicy(ctx context.Context, name string) (*holdfastv1alpha1.ClusterDisruptionPolicy, error) {
	c := &holdfastv1alpha1.ClusterDisruptionPolicy{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading ClusterDisruptionPolicy %s: %w", name, err)
	}
	return c, nil
}
