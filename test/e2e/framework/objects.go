package framework

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// defaultTimeout bounds waits for things the control plane does within seconds.
const defaultTimeout = time.Minute

// Deployment returns a Deployment of the test's namespace whose pods carry
// app=name, ready for the caller to adjust before creating it.
func (f *Framework) Deployment(name string, replicas int32) *appsv1.Deployment {
	lbls := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace, Labels: lbls},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: lbls},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbls},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.example/app:1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}},
				}}},
			},
		},
	}
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

// WaitReady waits until the Deployment has all its replicas updated and Ready.
func (f *Framework) WaitReady(d *appsv1.Deployment) {
	f.T.Helper()
	f.Eventually(defaultTimeout, fmt.Sprintf("Deployment %s to be Ready", d.Name), func(ctx context.Context) (bool, error) {
		var got appsv1.Deployment
		if err := f.Client.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: d.Name}, &got); err != nil {
			return false, err
		}
		want := ptr.Deref(got.Spec.Replicas, 1)
		return got.Status.ObservedGeneration == got.Generation && got.Status.ReadyReplicas == want && got.Status.UpdatedReplicas == want && got.Status.Replicas == want, nil
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
	if _, err := f.Clientset.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		f.T.Errorf("setting node %s unschedulable=%t: %v", node, on, err)
	}
}

// SelectorOf renders a Deployment's selector for Pods.
func SelectorOf(d *appsv1.Deployment) string {
	return labels.Set(d.Spec.Selector.MatchLabels).String()
}
