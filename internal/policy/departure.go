package policy

import (
	"context"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// A node's load falls under cluster-autoscaler's threshold when pods leave it, and a
// pod's leaving is no event a policy is woken by: holdfast watches no pods, since a
// cluster's pods are the largest set it could cache. What wakes a policy is the change
// that makes the pods leave: a Deployment or StatefulSet deleted or scaled down, of the
// policy's namespace, or of another namespace when the policy awaits it
// (Observed.Awaited: the operator wakes the policy for those). That wake-up comes before
// the pods go: the garbage collector deletes a deleted Deployment's ReplicaSet, then its
// pods, and a ReplicaSet scaled down deletes the pods it keeps no more, each a moment
// later. Judged on the pods still there, the node is above the threshold, and the next
// look would be caCandidateRecheck later, while cluster-autoscaler, which scans every few
// seconds, finds the node under the threshold at its first scan after the pods are gone
// and, before holdfast's mark, unremovable for its budget, for its recheck timeout.
//
// So a hand-off weighs a node's pods by what is known of their going, from their owners
// (departureOf): a pod whose owner the garbage collector is deleting, or of a
// StatefulSet's ordinal it keeps no more, is leaving for sure, and is not counted, as a
// pod being deleted is not (cluster-autoscaler counts both until they are gone: holdfast
// acts first, so that its mark is in place when cluster-autoscaler first finds the node
// under the threshold). A pod of a Deployment scaled down, that runs more pods than it
// wants, may be leaving, or another of its pods may: counted, but the node is looked at
// again after caDepartureRecheck, not caCandidateRecheck, while it would be handed over
// without them (awaitsDeparture). The owners are read only for a node above the
// threshold, and from the cache but for a deleted Deployment's ReplicaSet, which only the
// API server holds: holdfast caches no other ReplicaSets than its own.
//
// Why not a short look alone, whenever pods may be leaving: the wake-up and the garbage
// collector race, and a look a few seconds later comes after the pods are gone, which
// cluster-autoscaler's scan, every few seconds, may see first. Counting the leaving pods
// out at the wake-up puts the mark before the pods go.

// departure is what is known of a pod's going.
type departure int

const (
	// staying: nothing says the pod goes.
	staying departure = iota
	// mayLeave: the pod's Deployment, scaled down, runs more pods than it wants: some of
	// them go soon, maybe this one.
	mayLeave
	// leaving: the pod is about to be deleted: the garbage collector deletes its owner, or
	// it is a StatefulSet's of an ordinal the StatefulSet keeps no more.
	leaving
)

// Owner kinds Observe reads of a pod (Source.Owner).
const (
	kindReplicaSet  = "ReplicaSet"
	kindDeployment  = holdfastv1alpha1.KindDeployment
	kindStatefulSet = holdfastv1alpha1.KindStatefulSet
)

// collected reports whether the garbage collector deletes the dependents that name their
// owner by ref, owner being what is read of that name: it is gone (nil) or another object
// of the same name (a new UID), or it is being deleted in the foreground. An owner being
// deleted otherwise keeps its dependents until it is gone (and then, orphaning them, for
// good).
func collected(ref metav1.OwnerReference, owner metav1.Object) bool {
	if owner == nil || ref.UID != "" && owner.GetUID() != ref.UID {
		return true
	}
	return owner.GetDeletionTimestamp() != nil && slices.Contains(owner.GetFinalizers(), metav1.FinalizerDeleteDependents)
}

// statefulDeparture is what is known of the going of pod, whose controller ref names a
// StatefulSet, read as set (nil when gone): leaving when the garbage collector deletes
// it, or its ordinal is outside those the StatefulSet keeps (from spec.ordinals.start,
// spec.replicas of them).
func statefulDeparture(pod *corev1.Pod, ref metav1.OwnerReference, set *appsv1.StatefulSet) departure {
	if set == nil {
		return leaving
	}
	if collected(ref, set) {
		return leaving
	}
	ordinal, err := strconv.Atoi(strings.TrimPrefix(pod.Name, set.Name+"-"))
	if err != nil || !strings.HasPrefix(pod.Name, set.Name+"-") {
		return staying
	}
	start, replicas := 0, 1
	if set.Spec.Ordinals != nil {
		start = int(set.Spec.Ordinals.Start)
	}
	if set.Spec.Replicas != nil {
		replicas = int(*set.Spec.Replicas)
	}
	if ordinal < start || ordinal >= start+replicas {
		return leaving
	}
	return staying
}

// deploymentOf names the Deployment of a pod whose controller ref names a ReplicaSet: a
// Deployment's ReplicaSet is named after it and the pod template's hash, which the pod
// carries; "" for a pod of a ReplicaSet of no Deployment.
func deploymentOf(pod *corev1.Pod, ref metav1.OwnerReference) string {
	hash := pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	name, ok := strings.CutSuffix(ref.Name, "-"+hash)
	if hash == "" || !ok || name == "" {
		return ""
	}
	return name
}

// shrinking reports whether Deployment d, there and not deleted in the foreground, runs
// more pods than it wants, all of its current template: scaled down, some of them go
// soon. Not in a rollout, whose old pods go as new ones come, and which may stay stuck
// for long: the node would be looked at every caDepartureRecheck meanwhile.
func shrinking(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return d.Status.Replicas > want && d.Status.UpdatedReplicas == d.Status.Replicas
}

// replicaSetDeparture is what is known of the going of a pod whose controller ref
// (podRef) names ReplicaSet rs (nil when gone), once its Deployment, named deployment and
// read as d (nil when gone), is known to be gone or deleted in the foreground: leaving
// when the garbage collector deletes the ReplicaSet, or the ReplicaSet's own controller,
// the Deployment; staying when the Deployment orphaned it.
func replicaSetDeparture(podRef metav1.OwnerReference, rs metav1.Object, deployment string, d *appsv1.Deployment) departure {
	if rs == nil || collected(podRef, rs) {
		return leaving
	}
	ref := metav1.GetControllerOfNoCopy(rs)
	if ref == nil || ref.Kind != kindDeployment || ref.Name != deployment {
		return staying // orphaned, or not the Deployment's
	}
	var owner metav1.Object
	if d != nil {
		owner = d
	}
	if collected(*ref, owner) {
		return leaving
	}
	return staying
}

// departures reads what is known of the going of each of pods from their owners
// (Source.Owner), by index; nil when none may go. Only pods that count in a node's load
// are looked at, and each owner is read once.
func departures(ctx context.Context, src Source, pods []corev1.Pod) ([]departure, error) {
	read := map[string]metav1.Object{}
	owner := func(namespace, kind, name string) (metav1.Object, error) {
		key := OwnerKey(kind, namespace, name)
		if o, ok := read[key]; ok {
			return o, nil
		}
		o, err := src.Owner(ctx, namespace, kind, name)
		if err != nil {
			return nil, err
		}
		read[key] = o
		return o, nil
	}
	var out []departure
	for i := range pods {
		p := &pods[i]
		if !counted(p) {
			continue
		}
		d, err := departureOf(p, owner)
		if err != nil {
			return nil, err
		}
		if d == staying {
			continue
		}
		if out == nil {
			out = make([]departure, len(pods))
		}
		out[i] = d
	}
	return out, nil
}

// departureOf is what is known of pod's going, its owners read with owner (nil when
// gone): its controller, and for a Deployment's ReplicaSet the Deployment, from which a
// ReplicaSet is read only when the Deployment is gone or deleted in the foreground.
func departureOf(pod *corev1.Pod, owner func(namespace, kind, name string) (metav1.Object, error)) (departure, error) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.APIVersion != appsv1.SchemeGroupVersion.String() {
		return staying, nil
	}
	switch ref.Kind {
	case kindStatefulSet:
		o, err := owner(pod.Namespace, kindStatefulSet, ref.Name)
		if err != nil {
			return staying, err
		}
		set, _ := o.(*appsv1.StatefulSet)
		return statefulDeparture(pod, *ref, set), nil
	case kindReplicaSet:
		name := deploymentOf(pod, *ref)
		if name == "" {
			return staying, nil
		}
		o, err := owner(pod.Namespace, kindDeployment, name)
		if err != nil {
			return staying, err
		}
		d, _ := o.(*appsv1.Deployment)
		if d != nil && !slices.Contains(d.Finalizers, metav1.FinalizerDeleteDependents) {
			if shrinking(d) {
				return mayLeave, nil
			}
			return staying, nil
		}
		rs, err := owner(pod.Namespace, kindReplicaSet, ref.Name)
		if err != nil {
			return staying, err
		}
		return replicaSetDeparture(*ref, rs, name, d), nil
	}
	return staying, nil
}

// OwnerKey names a workload whose deletion or scale-down makes pods leave a node: kind
// (Deployment or StatefulSet), namespace and name.
func OwnerKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// ownerKeyOf is OwnerKey of pod's Deployment or StatefulSet; "" when it has neither.
func ownerKeyOf(pod *corev1.Pod) string {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.APIVersion != appsv1.SchemeGroupVersion.String() {
		return ""
	}
	switch ref.Kind {
	case kindStatefulSet:
		return OwnerKey(kindStatefulSet, pod.Namespace, ref.Name)
	case kindReplicaSet:
		if name := deploymentOf(pod, *ref); name != "" {
			return OwnerKey(kindDeployment, pod.Namespace, name)
		}
	}
	return ""
}

// ownerKeys are OwnerKey of the Deployments and StatefulSets of pods that count in their
// node's load, DaemonSets' aside, and are not known to be leaving (deps, by index; nil:
// none).
func ownerKeys(pods []corev1.Pod, deps []departure) []string {
	var out []string
	for i := range pods {
		if !counted(&pods[i]) || deps != nil && deps[i] == leaving {
			continue
		}
		if key := ownerKeyOf(&pods[i]); key != "" && !slices.Contains(out, key) {
			out = append(out, key)
		}
	}
	return out
}
