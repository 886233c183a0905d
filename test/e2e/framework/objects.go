package framework

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// Events lists the Events (events.k8s.io) of the given reason regarding obj, oldest
// first.
func (f *Framework) Events(ctx context.Context, obj client.Object, reason string) ([]eventsv1.Event, error) {
	ns := obj.GetNamespace()
	if ns == "" {
		// Where the events.k8s.io recorder files the Events of cluster-scoped objects.
		ns = metav1.NamespaceDefault
	}
	list, err := f.Clientset.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	evs := slices.DeleteFunc(list.Items, func(ev eventsv1.Event) bool {
		return ev.Regarding.UID != obj.GetUID() || ev.Reason != reason
	})
	slices.SortFunc(evs, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
	return evs, nil
}

// WaitEvents waits until obj has at least n Events of the given reason and returns
// them, oldest first. The operator records Events after the writes they explain, and
// the recorder sends them in the background: a test that has seen the write has not
// necessarily been able to see the Event yet.
func (f *Framework) WaitEvents(obj client.Object, reason string, n int) []eventsv1.Event {
	f.T.Helper()
	var evs []eventsv1.Event
	f.Eventually(defaultTimeout, fmt.Sprintf("%d Event(s) %s on %s", n, reason, obj.GetName()), func(ctx context.Context) (bool, error) {
		var err error
		evs, err = f.Events(ctx, obj, reason)
		return len(evs) >= n, err
	})
	return evs
}

// defaultTimeout bounds waits for things the control plane does within seconds.
const defaultTimeout = time.Minute

// Deployment returns a Deployment of the test's namespace whose pods carry
// app=name, ready for the caller to adjust before creating it.
func (f *Framework) Deployment(name string, replicas int32) *appsv1.Deployment {
	meta, selector, template := f.workload(name)
	return &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(replicas), Selector: selector, Template: template,
	}}
}

// Sized returns a Deployment as Deployment does, labelled tier=name, whose pods request
// cpu and 128Mi of memory, stop at once and run on the nodes nodeSelector selects (nil
// for any): autoscalers size and remove nodes by their pods' requests.
func (f *Framework) Sized(name string, replicas int32, cpu string, nodeSelector map[string]string) *appsv1.Deployment {
	d := f.Deployment(name, replicas)
	d.Labels["tier"] = name
	spec := &d.Spec.Template.Spec
	spec.NodeSelector = nodeSelector
	spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("128Mi")}
	return d
}

// TierPolicy returns a DisruptionPolicy named tier over the workloads labelled
// tier=tier: maxUnavailable 1, and single for their single replicas.
func (f *Framework) TierPolicy(tier string, single holdfastv1alpha1.SingleReplicaStrategy) *holdfastv1alpha1.DisruptionPolicy {
	return &holdfastv1alpha1.DisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: tier, Namespace: f.Namespace},
		Spec: holdfastv1alpha1.DisruptionPolicySpec{
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"tier": tier}},
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			SingleReplica:  single,
		},
	}
}

// StatefulSet returns a StatefulSet of the test's namespace whose pods carry app=name,
// started all at once (Parallel) rather than one after another, ready for the caller to
// adjust before creating it. Its governing Service is not created: nothing resolves the
// pods' names.
func (f *Framework) StatefulSet(name string, replicas int32) *appsv1.StatefulSet {
	meta, selector, template := f.workload(name)
	return &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To(replicas), Selector: selector, Template: template,
		ServiceName: name, PodManagementPolicy: appsv1.ParallelPodManagement,
	}}
}

// workload returns the metadata of a workload of the test's namespace, and the selector
// and template of its pods, which carry app=name.
func (f *Framework) workload(name string) (metav1.ObjectMeta, *metav1.LabelSelector, corev1.PodTemplateSpec) {
	lbls := map[string]string{"app": name}
	return metav1.ObjectMeta{Name: name, Namespace: f.Namespace, Labels: lbls},
		&metav1.LabelSelector{MatchLabels: lbls},
		corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: lbls},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Image: "registry.example/app:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}},
			}}},
		}
}

// WorkloadSpec is what a Deployment's or a StatefulSet's pods come from.
type WorkloadSpec struct {
	Kind     string
	Replicas int32
	Selector *metav1.LabelSelector
	// Template is the workload's own: changing it changes the workload.
	Template *corev1.PodTemplateSpec
}

// SpecOf returns the pod-making part of a Deployment or a StatefulSet. Any other
// object is a mistake of the test, and panics.
func SpecOf(obj client.Object) WorkloadSpec {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return WorkloadSpec{Kind: "Deployment", Replicas: ptr.Deref(o.Spec.Replicas, 1), Selector: o.Spec.Selector, Template: &o.Spec.Template}
	case *appsv1.StatefulSet:
		return WorkloadSpec{Kind: "StatefulSet", Replicas: ptr.Deref(o.Spec.Replicas, 1), Selector: o.Spec.Selector, Template: &o.Spec.Template}
	}
	panic(fmt.Sprintf("%T %s is neither a Deployment nor a StatefulSet", obj, obj.GetName()))
}

// HostnameAntiAffinity makes the pods of d refuse to share a node.
func HostnameAntiAffinity(d *appsv1.Deployment) {
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: d.Spec.Selector,
			TopologyKey:   corev1.LabelHostname,
		}},
	}}
}

// PreferNodes makes the pods of spec prefer the nodes labelled key=value; they may run
// anywhere, as the pods that replace them must. A pod anti-affinity stays.
func PreferNodes(spec *corev1.PodSpec, key, value string) {
	var anti *corev1.PodAntiAffinity
	if spec.Affinity != nil {
		anti = spec.Affinity.PodAntiAffinity
	}
	spec.Affinity = &corev1.Affinity{PodAntiAffinity: anti, NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight: 100,
			Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value},
			}}},
		}},
	}}
}

// PDB returns a PodDisruptionBudget over app=app with maxUnavailable.
func (f *Framework) PDB(name, app string, maxUnavailable int) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(int32(maxUnavailable))),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
	}
}

// Create creates obj and fails the test if it cannot.
func (f *Framework) Create(obj client.Object) {
	f.T.Helper()
	if err := f.Client.Create(f.Ctx, obj); err != nil {
		f.T.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// Pods lists the pods of the test's namespace matching the selector (key=value,...).
func (f *Framework) Pods(ctx context.Context, selector string) ([]corev1.Pod, error) {
	list, err := f.Clientset.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// PodReady reports whether the pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// WaitReady waits until the Deployment or StatefulSet has all its replicas updated and
// Ready.
func (f *Framework) WaitReady(obj client.Object) {
	f.T.Helper()
	f.WaitReadyWithin(defaultTimeout, obj)
}

// WaitReadyWithin is WaitReady with its own timeout, for pods that wait for a node to
// be made.
func (f *Framework) WaitReadyWithin(timeout time.Duration, obj client.Object) {
	f.T.Helper()
	got := obj.DeepCopyObject().(client.Object)
	f.Eventually(timeout, fmt.Sprintf("%s %s to be Ready", SpecOf(obj).Kind, obj.GetName()), func(ctx context.Context) (bool, error) {
		if err := f.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			return false, err
		}
		var observed int64
		var replicas, ready, updated int32
		switch o := got.(type) {
		case *appsv1.Deployment:
			observed, replicas, ready, updated = o.Status.ObservedGeneration, o.Status.Replicas, o.Status.ReadyReplicas, o.Status.UpdatedReplicas
		case *appsv1.StatefulSet:
			observed, replicas, ready, updated = o.Status.ObservedGeneration, o.Status.Replicas, o.Status.ReadyReplicas, o.Status.UpdatedReplicas
		}
		want := SpecOf(got).Replicas
		return observed == got.GetGeneration() && ready == want && updated == want && replicas == want, nil
	})
}

// WaitBudget waits until the disruption controller has processed the PDB and allows
// the given number of disruptions.
func (f *Framework) WaitBudget(name string, allowed int32) {
	f.T.Helper()
	f.Eventually(defaultTimeout, fmt.Sprintf("PDB %s to allow %d disruptions", name, allowed), func(ctx context.Context) (bool, error) {
		pdb, err := f.Clientset.PolicyV1().PodDisruptionBudgets(f.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.DisruptionsAllowed == allowed, nil
	})
}

// Evict asks the policy/v1 Eviction API to evict a pod, as kubectl drain does.
func (f *Framework) Evict(ctx context.Context, pod *corev1.Pod) error {
	return f.Clientset.CoreV1().Pods(pod.Namespace).EvictV1(ctx, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
	})
}

// Cordon marks a node unschedulable and uncordons it when the test ends.
func (f *Framework) Cordon(node string) {
	f.T.Helper()
	f.setUnschedulable(f.Ctx, node, true)
	f.T.Cleanup(func() { f.setUnschedulable(context.Background(), node, false) })
}

func (f *Framework) setUnschedulable(ctx context.Context, node string, on bool) {
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	_, err := f.Clientset.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil && !(apierrors.IsNotFound(err) && !on) { // a node the test deleted has nothing to uncordon
		f.T.Errorf("setting node %s unschedulable=%t: %v", node, on, err)
	}
}

// SelectorOf renders a Deployment's or a StatefulSet's selector for Pods.
func SelectorOf(obj client.Object) string {
	return labels.Set(SpecOf(obj).Selector.MatchLabels).String()
}

// SyncFailed reports whether the disruption controller could not count the budget (its
// DisruptionAllowed condition has reason SyncFailed): it then writes no
// observedGeneration, only disruptionsAllowed 0.
func SyncFailed(p *policyv1.PodDisruptionBudget) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == policyv1.DisruptionAllowedCondition && c.Reason == policyv1.SyncFailedReason {
			return true
		}
	}
	return false
}

// Scale sets the replicas of a Deployment or StatefulSet with a merge patch, as kubectl
// scale does: an update would conflict with the operator's own writes to the object.
func (f *Framework) Scale(obj client.Object, replicas int32) {
	f.T.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if err := f.Client.Patch(f.Ctx, obj.DeepCopyObject().(client.Object), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		f.T.Fatalf("scaling %s to %d: %v", obj.GetName(), replicas, err)
	}
}

// SurgeSet returns the surge set holdfast keeps beside the Deployment d, nil for none.
func (f *Framework) SurgeSet(ctx context.Context, d *appsv1.Deployment) (*appsv1.ReplicaSet, error) {
	rs := &appsv1.ReplicaSet{}
	err := f.Client.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: policy.SurgeSetName(d.Name)}, rs)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the surge set of Deployment %s: %w", d.Name, err)
	}
	return rs, nil
}

// Extra returns how many extra pods the surge set of d asks for, 0 for no set, and
// the set's hand-off record.
func (f *Framework) Extra(ctx context.Context, d *appsv1.Deployment) (int32, string, error) {
	rs, err := f.SurgeSet(ctx, d)
	if rs == nil || err != nil {
		return 0, "", err
	}
	return ptr.Deref(rs.Spec.Replicas, 1), rs.Annotations[holdfastv1alpha1.HandOffAnnotation], nil
}
