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

// fillerLeaves is oneNodeGroup where n1 also runs a filler of 2.9 CPUs, whose Deployment
// is in the state deployment gives it (nil: deleted, its ReplicaSet not collected yet).
type fillerLeaves struct {
	oneNodeGroup
	deployment *appsv1.Deployment
	reads      []string
}

// Workloads is oneNodeGroup's single, selected by the policy.
func (s *fillerLeaves) Workloads(ctx context.Context, ns, kind string, sel labels.Selector) ([]Workload, error) {
	ws, _ := s.oneNodeGroup.Workloads(ctx, ns, kind, sel)
	for i := range ws {
		ws[i].Labels, ws[i].TemplateLabels = map[string]string{"tier": "web"}, map[string]string{"app": "single"}
	}
	return ws, nil
}

// Pods is single's pod on n1, Ready for an hour.
func (s *fillerLeaves) Pods(ctx context.Context, ns string, sel labels.Selector) ([]corev1.Pod, error) {
	pods, _ := s.oneNodeGroup.Pods(ctx, ns, sel)
	for i := range pods {
		pods[i].Namespace = ns
		pods[i].CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
		pods[i].Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}}
	}
	return pods, nil
}

func (s *fillerLeaves) NodePods(ctx context.Context, node string) ([]corev1.Pod, error) {
	pods, _ := s.oneNodeGroup.NodePods(ctx, node)
	pods[0].Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
	filler := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "filler-7c9d-x", Namespace: "batch", Labels: map[string]string{"pod-template-hash": "7c9d"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "filler-7c9d", UID: "rs-uid", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2900m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}}}}
	return append(pods, filler), nil
}

func (s *fillerLeaves) Owner(_ context.Context, ns, kind, name string) (metav1.Object, error) {
	s.reads = append(s.reads, kind+" "+ns+"/"+name)
	switch kind {
	case "Deployment":
		if s.deployment != nil {
			return s.deployment, nil
		}
	case "ReplicaSet":
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: "rs-uid",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "filler", UID: "filler-uid", Controller: ptr.To(true)}}}}, nil
	}
	return nil, nil
}

// The filler's Deployment deleted (another namespace's: its pods are read by node): the
// policy woken, its pod still there, not yet deleted by the garbage collector, does not
// count, and the hand-off starts at once; scaled down, the filler may leave, and the
// node is looked at again soon; at rest, it stays, and the ReplicaSet is not read. Until
// the hand-off starts, the policy awaits the filler's Deployment: its deletion or
// scale-down, another namespace's, is to wake the policy.
func TestObserveLeavingPods(t *testing.T) {
	surge := policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge })
	filler := func(want, running int32) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "filler", Namespace: "batch", UID: "filler-uid"},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(want)}, Status: appsv1.DeploymentStatus{Replicas: running, UpdatedReplicas: running}}
	}
	for name, tc := range map[string]struct {
		deployment *appsv1.Deployment
		cpu        string
		surges     bool
		requeue    time.Duration
		reads      []string
		// awaited is what the operator wakes the policy for.
		awaited []string
	}{
		"deleted": {cpu: "1", surges: true, requeue: surgePoll, reads: []string{"Deployment batch/filler", "ReplicaSet batch/filler-7c9d"}},
		"scaled down": {deployment: filler(0, 1), cpu: "3900m", requeue: caDepartureRecheck, reads: []string{"Deployment batch/filler"},
			awaited: []string{"Deployment/batch/filler"}},
		"at rest": {deployment: filler(1, 1), cpu: "3900m", requeue: caCandidateRecheck, reads: []string{"Deployment batch/filler"},
			awaited: []string{"Deployment/batch/filler"}},
	} {
		t.Run(name, func(t *testing.T) {
			src := &fillerLeaves{oneNodeGroup: oneNodeGroup{policy: surge, scale: Autoscalers{NodeGroupLabel: "group"}}, deployment: tc.deployment}
			o, err := Observe(context.Background(), src, &surge, now)
			if err != nil {
				t.Fatal(err)
			}
			if got := o.NodeGroups["n1"].Requested[corev1.ResourceCPU]; got.Cmp(resource.MustParse(tc.cpu)) != 0 {
				t.Errorf("n1's CPU requested: %s, want %s", got.String(), tc.cpu)
			}
			if !slices.Equal(src.reads, tc.reads) {
				t.Errorf("owners read: %v, want %v", src.reads, tc.reads)
			}
			if got := o.Awaited(); !slices.Equal(got, tc.awaited) {
				t.Errorf("Awaited = %v, want %v", got, tc.awaited)
			}
			for _, node := range o.RoomWanted() {
				o.SetRoom(node, "")
			}
			r := resultOf(Decide(o))
			if surged := len(r.Surges) > 0; surged != tc.surges {
				t.Errorf("surges %+v, want a surge: %t", r.Surges, tc.surges)
			}
			if r.RequeueAfter != tc.requeue {
				t.Errorf("requeued after %s, want %s", r.RequeueAfter, tc.requeue)
			}
		})
	}
}
