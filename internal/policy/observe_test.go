package policy

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// oneNodeGroup is a Source of one Surge single replica on node n1 of a cluster-autoscaler
// node group, 60% of its CPU requested.
type oneNodeGroup struct {
	Source // the methods Observe does not call here
	policy holdfastv1alpha1.DisruptionPolicy
	scale  Autoscalers
}

func (s *oneNodeGroup) Policies(context.Context, string) ([]holdfastv1alpha1.DisruptionPolicy, error) {
	return []holdfastv1alpha1.DisruptionPolicy{s.policy}, nil
}

func (s *oneNodeGroup) Workloads(_ context.Context, _, kind string, _ labels.Selector) ([]Workload, error) {
	if kind != holdfastv1alpha1.KindDeployment {
		return nil, nil
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "single"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "single"}}}, Status: appsv1.DeploymentStatus{ReadyReplicas: 1, AvailableReplicas: 1, UpdatedReplicas: 1, Replicas: 1}}
	return []Workload{WorkloadOf(d)}, nil
}
func (s *oneNodeGroup) Budgets(context.Context, string) ([]policyv1.PodDisruptionBudget, error) {
	return nil, nil
}
func (s *oneNodeGroup) SurgeSets(context.Context, string) ([]appsv1.ReplicaSet, error) {
	return nil, nil
}
func (s *oneNodeGroup) LostPodLabels(context.Context, string, NodeHealth) ([]map[string]string, error) {
	return nil, nil
}
func (s *oneNodeGroup) PodMeta(context.Context, string) ([]map[string]string, Marks, error) {
	return nil, nil, nil
}
func (s *oneNodeGroup) Autoscalers(context.Context, string) ([]autoscalingv2.HorizontalPodAutoscaler, error) {
	return nil, nil
}
func (s *oneNodeGroup) Pods(context.Context, string, labels.Selector) ([]corev1.Pod, error) {
	return []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "single-a", Labels: map[string]string{"app": "single"}}, Spec: corev1.PodSpec{NodeName: "n1"}}}, nil
}
func (s *oneNodeGroup) Node(_ context.Context, name string) (*corev1.Node, error) {
	n := sized(name)
	n.Labels = map[string]string{"group": "general"}
	return n, nil
}
func (s *oneNodeGroup) NodeClaims(context.Context) ([]unstructured.Unstructured, error) {
	return nil, nil
}
func (s *oneNodeGroup) NodePods(_ context.Context, node string) ([]corev1.Pod, error) {
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "single-a", Namespace: s.policy.Namespace, Labels: map[string]string{"app": "single"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "single-rs", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2400m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	return []corev1.Pod{pod}, nil
}
func (s *oneNodeGroup) Health() NodeHealth { return NodeHealth{} }
func (s *oneNodeGroup) Settings() Settings { return Settings{Autoscalers: s.scale} }
func (s *oneNodeGroup) ClusterPolicy(context.Context, string) (*holdfastv1alpha1.ClusterDisruptionPolicy, error) {
	return nil, nil
}

// Room is wanted with the operator's threshold, as Decide judges the node: under a
// threshold of 0.7 the node at 60% is handed over only if its pods fit elsewhere, so its
// room is read (and found wanting: no surge); under the default 0.5 it is not read.
func TestRoomWantedWithTheOperatorsThreshold(t *testing.T) {
	surge := policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge })
	for _, tc := range []struct {
		threshold float64
		asked     []string
	}{{0.7, []string{"n1"}}, {0, nil}} {
		src := &oneNodeGroup{policy: surge, scale: Autoscalers{Threshold: tc.threshold, NodeGroupLabel: "group"}}
		o, err := Observe(context.Background(), src, &surge, now)
		if err != nil {
			t.Fatal(err)
		}
		asked := o.RoomWanted()
		for _, node := range asked {
			o.SetRoom(node, "pod shop/single-a: its replacement fits on no other node")
		}
		if !slices.Equal(asked, tc.asked) {
			t.Errorf("threshold %v: room wanted for %v, want %v", tc.threshold, asked, tc.asked)
		}
		if d := Decide(o); len(resultOf(d).Surges) > 0 {
			t.Errorf("threshold %v: surges %+v, want none", tc.threshold, resultOf(d).Surges)
		}
	}
}
