package policy

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
)

// WorkloadOf reduces a Deployment, StatefulSet or DaemonSet to a Workload.
func WorkloadOf(obj metav1.Object) Workload {
	w := Workload{Name: obj.GetName(), UID: obj.GetUID(), Labels: obj.GetLabels(), Annotations: obj.GetAnnotations()}
	var stale bool
	switch o := obj.(type) {
	case *appsv1.Deployment:
		w.Kind, w.Selector, w.TemplateLabels = holdfastv1alpha1.KindDeployment, o.Spec.Selector, o.Spec.Template.Labels
		w.Replicas, w.Ready, w.Available, w.MinReadySeconds = Replicas(o.Spec.Replicas), o.Status.ReadyReplicas, o.Status.AvailableReplicas, o.Spec.MinReadySeconds
		stale = o.Status.ObservedGeneration < o.Generation
		// Pods of an older template left, or not all of the new one made yet.
		w.RollingOut = o.Status.UpdatedReplicas < w.Replicas || o.Status.Replicas > o.Status.UpdatedReplicas
	case *appsv1.StatefulSet:
		w.Kind, w.Selector, w.TemplateLabels = holdfastv1alpha1.KindStatefulSet, o.Spec.Selector, o.Spec.Template.Labels
		w.Replicas, w.Ready, w.Available, w.MinReadySeconds = Replicas(o.Spec.Replicas), o.Status.ReadyReplicas, o.Status.AvailableReplicas, o.Spec.MinReadySeconds
		stale = o.Status.ObservedGeneration < o.Generation
		w.RollingOut = o.Status.UpdatedReplicas < w.Replicas || o.Status.UpdateRevision != o.Status.CurrentRevision
	case *appsv1.DaemonSet:
		w.Kind, w.Selector, w.TemplateLabels = holdfastv1alpha1.KindDaemonSet, o.Spec.Selector, o.Spec.Template.Labels
		w.Replicas, w.Ready, w.Available, w.MinReadySeconds = o.Status.DesiredNumberScheduled, o.Status.NumberReady, o.Status.NumberAvailable, o.Spec.MinReadySeconds
		stale = o.Status.ObservedGeneration < o.Generation
		w.RollingOut = o.Status.UpdatedNumberScheduled < w.Replicas
	}
	// A status that has not caught up with the spec may be the start of a rollout.
	w.RollingOut = w.RollingOut || stale
	return w
}

// SurgeSetOf reduces a ReplicaSet to a surge set; false for any ReplicaSet that is not
// one, or is being deleted.
func SurgeSetOf(rs *appsv1.ReplicaSet) (SurgeSet, bool) {
	uid := rs.Labels[holdfastv1alpha1.SurgeOfLabel]
	owner := metav1.GetControllerOf(rs)
	if uid == "" || rs.DeletionTimestamp != nil || owner == nil || owner.Kind != "DisruptionPolicy" {
		return SurgeSet{}, false
	}
	return SurgeSet{Name: rs.Name, Policy: owner.Name, Deployment: rs.Annotations[holdfastv1alpha1.SurgeForAnnotation], DeploymentUID: types.UID(uid),
		Replicas: Replicas(rs.Spec.Replicas), HandOff: rs.Annotations[holdfastv1alpha1.HandOffAnnotation], Since: rs.CreationTimestamp.Time}, true
}

// Replicas defaults an unset spec.replicas to 1, as the apiserver does.
func Replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// PodOf reduces a pod to what Decide reads; false for a pod that is terminating or
// finished, which no budget counts.
func PodOf(pod *corev1.Pod) (Pod, bool) {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return Pod{}, false
	}
	ready, since := availability.Readiness(pod)
	return Pod{
		Name:         pod.Name,
		Node:         pod.Spec.NodeName,
		Ready:        ready,
		Since:        since,
		Created:      pod.CreationTimestamp.Time,
		DoNotDisrupt: pod.Annotations[holdfastv1alpha1.DoNotDisruptAnnotation] == "true",
		SafeToEvict:  pod.Annotations[availability.AnnotationSafeToEvict],
		Unsafe:       caUnsafe(pod),
		Surge:        pod.Labels[holdfastv1alpha1.SurgeOfLabel] != "",
		Zone:         pod.Labels[holdfastv1alpha1.ZoneLabel],
	}, true
}

// StuckOf reduces a StatefulSet's pod being deleted on a suspect node to what fencing
// reads; false for any other pod.
func StuckOf(pod *corev1.Pod, w *Workload, h NodeHealth) (Pod, bool) {
	if w.Kind != holdfastv1alpha1.KindStatefulSet || pod.DeletionTimestamp == nil || pod.Spec.NodeName == "" {
		return Pod{}, false
	}
	if _, suspect := h.Suspects[pod.Spec.NodeName]; !suspect {
		return Pod{}, false
	}
	return Pod{Name: pod.Name, Node: pod.Spec.NodeName}, true
}
