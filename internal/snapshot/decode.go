package snapshot

import (
	"maps"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

var namespaced = map[string]bool{
	KindPod: true, KindDeployment: true, KindReplicaSet: true, KindStatefulSet: true,
	KindDaemonSet: true, KindPodDisruptionBudget: true, KindHorizontalPodAutoscaler: true,
	KindNodeCompanion: true, KindDisruptionPolicy: true, KindLease: true,
}

// decodeFunc decodes one object into its place in s (the index in its kind's slice, which
// merge has made long enough), or, when s is nil, into a value of its own, only to know
// whether it decodes; it returns the fields its kind does not have. A decoding that fails
// may leave its place half written.
type decodeFunc func(js []byte, namespace string, gvk schema.GroupVersionKind, s *Snapshot, i int, maps sharedMaps) ([]unknownField, error)

// decodeInto decodes the object into the snapshot's slice. Retired API versions (policy/v1beta1,
// extensions/v1beta1, apps/v1beta2, autoscaling/v1...) share the fields holdfast reads with
// the current ones, so older manifests, written for them, are read into the current
// types rather than rejected.
//
// The object is decoded once, by merge, straight into its place, on every core. Decoding
// it when its file was read, and copying it into its place later, held every object twice:
// a Pod is 1,240 bytes before its fields', where its JSON is a few hundred.
func decodeInto[T any](slice func(*Snapshot) *[]T, meta func(*T) *metav1.ObjectMeta, fix func(*T, schema.GroupVersionKind)) decodeFunc {
	return func(js []byte, namespace string, gvk schema.GroupVersionKind, s *Snapshot, i int, maps sharedMaps) ([]unknownField, error) {
		var obj *T
		if s != nil {
			obj = &(*slice(s))[i]
		} else {
			obj = new(T)
		}
		unknown, err := decodeStrict(js, reflect.ValueOf(obj).Elem(), maps)
		if err != nil {
			return nil, err
		}
		if namespace != "" {
			meta(obj).Namespace = namespace
		}
		if fix != nil {
			fix(obj, gvk)
		}
		return unknown, nil
	}
}

// decodeStrict decodes an object's JSON into v, a zero value, as the API server decodes
// it: field names are case-sensitive, and the fields the kind does not have are listed
// rather than silently dropped. decodeTyped reads nearly every object; the JSON decoder
// is the fallback for what it gives up on, an object with problems to report among them,
// and decodes it from the start again.
func decodeStrict(js []byte, v reflect.Value, maps sharedMaps) ([]unknownField, error) {
	if decodeTyped(js, v, maps) {
		return nil, nil
	}
	v.SetZero()
	strict, err := sigsjson.UnmarshalStrict(js, v.Addr().Interface(), sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, err
	}
	return unknownFields(v.Type(), strict), nil
}

// decodeUnstructured decodes the object, of a kind another project defines (Karpenter's),
// as it is: holdfast reads a few of its fields, and knows no others to warn about.
func decodeUnstructured(slice func(*Snapshot) *[]unstructured.Unstructured) decodeFunc {
	return func(js []byte, _ string, _ schema.GroupVersionKind, s *Snapshot, i int, _ sharedMaps) ([]unknownField, error) {
		var u *unstructured.Unstructured
		if s != nil {
			u = &(*slice(s))[i]
		} else {
			u = new(unstructured.Unstructured)
		}
		return nil, u.UnmarshalJSON(js)
	}
}

// defaultLegacySelector fills a selector from the template labels, as the extensions/v1beta1
// API defaulted it; apps/v1 requires it.
func defaultLegacySelector(sel **metav1.LabelSelector, template *corev1.PodTemplateSpec, gvk schema.GroupVersionKind) {
	if *sel == nil && gvk.Group == "extensions" && len(template.Labels) > 0 {
		*sel = &metav1.LabelSelector{MatchLabels: template.Labels}
	}
}

// assumeRunning gives a pod written without status (a manifest, not a dump) the status
// of a running, Ready pod, which is what its author means. A pod that carries a status
// (a `kubectl get pods -o yaml` dump) keeps it, so that unready, pending and finished
// pods count as the disruption controller counts them.
func assumeRunning(pod *corev1.Pod) {
	if pod.Status.Phase != "" || len(pod.Status.Conditions) > 0 {
		return
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
}

// kindDecoder decodes the objects of one kind and API version. Objects waiting for merge
// point at theirs, rather than each holding its version and function.
type kindDecoder struct {
	gvk    schema.GroupVersionKind
	decode decodeFunc
}

var decoders = map[schema.GroupVersionKind]*kindDecoder{}

func register(d decodeFunc, kind string, apiVersions ...string) {
	for _, v := range apiVersions {
		gvk := schema.FromAPIVersionAndKind(v, kind)
		decoders[gvk] = &kindDecoder{gvk: gvk, decode: d}
	}
}

func init() {
	register(decodeInto(func(s *Snapshot) *[]corev1.Node { return &s.Nodes },
		func(o *corev1.Node) *metav1.ObjectMeta { return &o.ObjectMeta }, nil), KindNode, "v1")
	register(decodeInto(func(s *Snapshot) *[]corev1.Pod { return &s.Pods },
		func(o *corev1.Pod) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(o *corev1.Pod, _ schema.GroupVersionKind) { assumeRunning(o) }), KindPod, "v1")
	register(decodeInto(func(s *Snapshot) *[]appsv1.Deployment { return &s.Deployments },
		func(o *appsv1.Deployment) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(o *appsv1.Deployment, gvk schema.GroupVersionKind) {
			defaultLegacySelector(&o.Spec.Selector, &o.Spec.Template, gvk)
		}), KindDeployment, "apps/v1", "apps/v1beta1", "apps/v1beta2", "extensions/v1beta1")
	register(decodeInto(func(s *Snapshot) *[]appsv1.ReplicaSet { return &s.ReplicaSets },
		func(o *appsv1.ReplicaSet) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(o *appsv1.ReplicaSet, gvk schema.GroupVersionKind) {
			defaultLegacySelector(&o.Spec.Selector, &o.Spec.Template, gvk)
		}), KindReplicaSet, "apps/v1", "apps/v1beta2", "extensions/v1beta1")
	register(decodeInto(func(s *Snapshot) *[]appsv1.StatefulSet { return &s.StatefulSets },
		func(o *appsv1.StatefulSet) *metav1.ObjectMeta { return &o.ObjectMeta }, nil),
		KindStatefulSet, "apps/v1", "apps/v1beta1", "apps/v1beta2")
	register(decodeInto(func(s *Snapshot) *[]appsv1.DaemonSet { return &s.DaemonSets },
		func(o *appsv1.DaemonSet) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(o *appsv1.DaemonSet, gvk schema.GroupVersionKind) {
			defaultLegacySelector(&o.Spec.Selector, &o.Spec.Template, gvk)
		}), KindDaemonSet, "apps/v1", "apps/v1beta2", "extensions/v1beta1")
	register(decodeInto(func(s *Snapshot) *[]policyv1.PodDisruptionBudget { return &s.PodDisruptionBudgets },
		func(o *policyv1.PodDisruptionBudget) *metav1.ObjectMeta { return &o.ObjectMeta }, nil),
		KindPodDisruptionBudget, "policy/v1", "policy/v1beta1")
	register(decodeInto(func(s *Snapshot) *[]autoscalingv2.HorizontalPodAutoscaler { return &s.HorizontalPodAutoscalers },
		func(o *autoscalingv2.HorizontalPodAutoscaler) *metav1.ObjectMeta { return &o.ObjectMeta }, nil),
		KindHorizontalPodAutoscaler, "autoscaling/v2", "autoscaling/v2beta2", "autoscaling/v2beta1", "autoscaling/v1")
	register(decodeInto(func(s *Snapshot) *[]schedulingv1.PriorityClass { return &s.PriorityClasses },
		func(o *schedulingv1.PriorityClass) *metav1.ObjectMeta { return &o.ObjectMeta }, nil),
		KindPriorityClass, "scheduling.k8s.io/v1", "scheduling.k8s.io/v1beta1")
	register(decodeInto(func(s *Snapshot) *[]holdfastv1alpha1.NodeCompanion { return &s.NodeCompanions },
		func(o *holdfastv1alpha1.NodeCompanion) *metav1.ObjectMeta { return &o.ObjectMeta }, nil),
		KindNodeCompanion, holdfastv1alpha1.GroupVersion.String())
	register(decodeInto(func(s *Snapshot) *[]corev1.Namespace { return &s.Namespaces },
		func(o *corev1.Namespace) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(o *corev1.Namespace, _ schema.GroupVersionKind) {
			// The API server labels every namespace with its name, and namespace selectors
			// (a ClusterDisruptionPolicy's among them) are written against that label.
			o.Labels = maps.Clone(o.Labels)
			if o.Labels == nil {
				o.Labels = map[string]string{}
			}
			o.Labels[corev1.LabelMetadataName] = o.Name
		}), KindNamespace, "v1")
	register(decodeInto(func(s *Snapshot) *[]holdfastv1alpha1.DisruptionPolicy { return &s.DisruptionPolicies },
		func(o *holdfastv1alpha1.DisruptionPolicy) *metav1.ObjectMeta { return &o.ObjectMeta }, nil),
		KindDisruptionPolicy, holdfastv1alpha1.GroupVersion.String())
	register(decodeInto(func(s *Snapshot) *[]holdfastv1alpha1.ClusterDisruptionPolicy { return &s.ClusterDisruptionPolicies },
		func(o *holdfastv1alpha1.ClusterDisruptionPolicy) *metav1.ObjectMeta { return &o.ObjectMeta }, nil),
		KindClusterDisruptionPolicy, holdfastv1alpha1.GroupVersion.String())
	register(decodeInto(func(s *Snapshot) *[]coordinationv1.Lease { return &s.Leases },
		func(o *coordinationv1.Lease) *metav1.ObjectMeta { return &o.ObjectMeta }, nil),
		KindLease, "coordination.k8s.io/v1")
	register(decodeUnstructured(func(s *Snapshot) *[]unstructured.Unstructured { return &s.NodeClaims }),
		KindNodeClaim, NodeClaimKind.GroupVersion().String())
	register(decodeUnstructured(func(s *Snapshot) *[]unstructured.Unstructured { return &s.NodePools }),
		KindNodePool, NodePoolKind.GroupVersion().String())
}
