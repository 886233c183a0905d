package predict_test

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/predict"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// karpenterCluster is a Surge single replica alone on node-1, a Karpenter node of
// NodePool general whose NodeClaim has been Consolidatable for a minute, and an empty
// node-2 where it would fit.
func karpenterCluster() *snapshot.Snapshot {
	node := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"karpenter.sh/nodepool": "general", "pool": "general"}},
		Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}},
	}
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "checkout-1", Namespace: ns, Labels: map[string]string{"app": "checkout"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "checkout-1", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: ptr.To(metav1.NewTime(now.Add(-time.Hour))), Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}},
	}
	claim := unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
		"metadata": map[string]any{"name": "general-abcde", "labels": map[string]any{"karpenter.sh/nodepool": "general"}},
		"status": map[string]any{"nodeName": "node-1", "conditions": []any{map[string]any{
			"type": "Consolidatable", "status": "True", "lastTransitionTime": now.Add(-time.Minute).Format(time.RFC3339)}}},
	}}
	pool := unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": map[string]any{"name": "general"},
		"spec": map[string]any{"disruption": map[string]any{"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "30s"}},
	}}
	return &snapshot.Snapshot{
		Source:      snapshot.SourceLive,
		Nodes:       []corev1.Node{node, {ObjectMeta: metav1.ObjectMeta{Name: "node-2"}, Status: node.Status}},
		Pods:        []corev1.Pod{pod},
		Deployments: []appsv1.Deployment{deployment("checkout", 1, map[string]string{"tier": "web"})},
		DisruptionPolicies: []holdfastv1alpha1.DisruptionPolicy{disruptionPolicy("web", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
			s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge
		})},
		NodeClaims: []unstructured.Unstructured{claim},
		NodePools:  []unstructured.Unstructured{pool},
	}
}

// The prediction reads the snapshot's NodeClaims and NodePools, and the nodes' pods, with
// the operator's own reductions, so that plan and audit see the hand-off of a Surge
// single replica's node to the autoscaler the operator makes: an extra pod ahead of the
// scale-down, recorded on its surge set; or, when something keeps the autoscaler off
// the node, why holdfast does not surge.
func TestPredictedHandOff(t *testing.T) {
	handOff := "node-1 " + now.Format(time.RFC3339) + " 1"
	tests := map[string]struct {
		mod         func(*snapshot.Snapshot)
		autoscalers policy.Autoscalers
		// handOff is the predicted Scale's HandOff; "" for no surge.
		handOff string
		message string
		// requeue, when set, is when the operator would look again.
		requeue time.Duration
	}{
		"Consolidatable under WhenEmptyOrUnderutilized: handed off to Karpenter": {
			handOff: handOff, message: "1 extra pod ahead of Karpenter's scale-down of node node-1",
		},
		"a pod Karpenter must not disrupt: blocked": {
			mod: func(s *snapshot.Snapshot) {
				s.Pods[0].Annotations = map[string]string{availability.AnnotationKarpenterDoNotDisrupt: "true"}
			},
			message: "Karpenter does not remove node node-1 whatever its budget allows (pod shop/checkout-1 has karpenter.sh/do-not-disrupt)",
		},
		"a NodePool whose budget allows no consolidation now: no hand-off until its window ends": {
			mod: func(s *snapshot.Snapshot) {
				disruption := s.NodePools[0].Object["spec"].(map[string]any)["disruption"].(map[string]any)
				disruption["budgets"] = []any{map[string]any{"nodes": "0", "reasons": []any{"Underutilized"}, "schedule": "0 9 * * 1-5", "duration": "8h"},
					map[string]any{"nodes": "0", "schedule": "0 9 * * 0", "duration": "8h"}}
			},
			message: `Karpenter does not consolidate node node-1 now: NodePool general's spec.disruption.budgets[1] (nodes "0" of 1 node) allows 0 disruptions, so holdfast does not surge ahead of it until 2026-11-22T17:00:00Z`,
			requeue: 5 * time.Hour,
		},
		"a NodePool whose budget cannot be read: no hand-off": {
			mod: func(s *snapshot.Snapshot) {
				disruption := s.NodePools[0].Object["spec"].(map[string]any)["disruption"].(map[string]any)
				disruption["budgets"] = []any{map[string]any{"nodes": "all"}}
			},
			message: `NodePool general's spec.disruption.budgets[0].nodes cannot be read ("all" is neither a number of nodes nor a percentage up to 100%), and Karpenter allows no disruption under it`,
		},
		"a NodePool that consolidates only empty nodes: no hand-off": {
			mod: func(s *snapshot.Snapshot) {
				s.NodePools[0].Object["spec"] = map[string]any{"disruption": map[string]any{"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"}}
			},
		},
		"no Karpenter read: no hand-off": {
			mod: func(s *snapshot.Snapshot) { s.NodeClaims, s.NodePools = nil, nil },
		},
		"a node of a cluster-autoscaler node group, as the operator's flag names it": {
			mod:         func(s *snapshot.Snapshot) { s.NodeClaims, s.NodePools = nil, nil },
			autoscalers: policy.Autoscalers{NodeGroupLabel: "pool"},
			handOff:     handOff, message: "1 extra pod ahead of cluster-autoscaler's scale-down of node node-1",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := karpenterCluster()
			if tc.mod != nil {
				tc.mod(s)
			}
			_, outcomes := predict.Operator(s, now, policy.Settings{Autoscalers: tc.autoscalers})
			if len(outcomes) != 1 {
				t.Fatalf("%d outcomes, want 1", len(outcomes))
			}
			d := outcomes[0].Decision
			var got string
			for _, sc := range policy.EffectsOf[policy.Surge](d.Effects) {
				if sc.Deployment == "checkout" && sc.Replicas > 0 {
					got = sc.HandOff
				}
			}
			if got != tc.handOff {
				t.Errorf("hand-off %q, want %q (effects %+v)", got, tc.handOff, d.Effects)
			}
			var message string
			for _, w := range d.Status.Workloads {
				if w.Name == "checkout" {
					message = w.Message
				}
			}
			if !strings.Contains(message, tc.message) {
				t.Errorf("status %q, want it to say %q", message, tc.message)
			}
			if tc.requeue != 0 && d.RequeueAfter != tc.requeue {
				t.Errorf("requeue after %v, want %v", d.RequeueAfter, tc.requeue)
			}
		})
	}
}

// A node whose kubelet stopped renewing its Lease is lost in the prediction as it is to
// the operator, before Kubernetes taints it.
func TestPredictionReadsNodeLeases(t *testing.T) {
	s := karpenterCluster()
	s.NodeClaims, s.NodePools = nil, nil
	s.Leases = []coordinationv1.Lease{{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: corev1.NamespaceNodeLease},
		Spec:       coordinationv1.LeaseSpec{RenewTime: ptr.To(metav1.NewMicroTime(now.Add(-2 * time.Minute))), LeaseDurationSeconds: ptr.To(int32(40))},
	}}
	_, outcomes := predict.Operator(s, now, policy.Settings{})
	if len(outcomes) != 1 {
		t.Fatalf("%d outcomes, want 1", len(outcomes))
	}
	if got := outcomes[0].Decision.Status.LostNodes; len(got) != 1 || got[0] != "node-1" {
		t.Errorf("lost nodes %v, want [node-1]: its Lease was last renewed 2 minutes ago", got)
	}
}
