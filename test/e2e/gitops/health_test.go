//go:build e2e

package gitops_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// healthSettle bounds the operator's first status of an object.
const healthSettle = 60 * time.Second

// The health checks of docs/gitops.md read the status as a GitOps tool does, as JSON:
// status.observedGeneration and a Ready condition whose observedGeneration is the
// object's generation once the operator has read it (Flux's kstatus and the CEL
// expressions), Ready's status and reason (Argo CD's scripts), and for a NodeCompanion
// its Degraded condition. This test holds the three kinds to those shapes: working,
// after a change of spec, and not working.
func TestHealthCheckStatus(t *testing.T) {
	f := framework.New(t)
	c := f.Holdfast(&holdfastv1alpha1.DisruptionPolicyList{}, &holdfastv1alpha1.ClusterDisruptionPolicyList{}, &holdfastv1alpha1.NodeCompanionList{})
	f.StartOperator()

	f.Create(f.Deployment("web", 2))
	dp := &holdfastv1alpha1.DisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.Namespace},
		Spec: holdfastv1alpha1.DisruptionPolicySpec{
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		},
	}
	cdp := &holdfastv1alpha1.ClusterDisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "health-" + f.Namespace},
		Spec: holdfastv1alpha1.ClusterDisruptionPolicySpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": f.Namespace}},
			Template: holdfastv1alpha1.DisruptionPolicySpec{
				Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
				MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			},
		},
	}
	nc := &holdfastv1alpha1.NodeCompanion{
		ObjectMeta: metav1.ObjectMeta{Name: "guard", Namespace: f.Namespace},
		Spec: holdfastv1alpha1.NodeCompanionSpec{
			NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
			Template:     podTemplate(),
		},
	}
	for _, obj := range []client.Object{dp, cdp, nc} {
		if err := c.Create(f.Ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), cdp) })

	kinds := map[client.Object]string{dp: "DisruptionPolicy", cdp: "ClusterDisruptionPolicy", nc: "NodeCompanion"}
	for obj, kind := range kinds {
		waitHealth(f, c, kind, client.ObjectKeyFromObject(obj), "True", "")
	}
	// A change of spec: the generation moves, and so must both observedGenerations.
	for obj, kind := range kinds {
		patch := []byte(`{"spec":{"maxUnavailable":2}}`)
		if kind == "ClusterDisruptionPolicy" {
			patch = []byte(`{"spec":{"template":{"maxUnavailable":2}}}`)
		}
		if err := c.Patch(f.Ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
		waitHealth(f, c, kind, client.ObjectKeyFromObject(obj), "True", "")
	}
	// Not working: a NodeCompanion whose DaemonSet is gone is Ready False and Degraded
	// True, each with its reason, at the current generation.
	lost := &holdfastv1alpha1.NodeCompanion{
		ObjectMeta: metav1.ObjectMeta{Name: "lost", Namespace: f.Namespace},
		Spec: holdfastv1alpha1.NodeCompanionSpec{
			DaemonSet: &holdfastv1alpha1.DaemonSetReference{Name: "gone"},
			Template:  podTemplate(),
		},
	}
	if err := c.Create(f.Ctx, lost); err != nil {
		t.Fatal(err)
	}
	u := waitHealth(f, c, "NodeCompanion", client.ObjectKeyFromObject(lost), "False", policy.ReasonTargetNotFound)
	if d := condition(u, holdfastv1alpha1.ConditionDegraded); d == nil || d["status"] != "True" || d["reason"] != policy.ReasonTargetNotFound || d["observedGeneration"] != u.GetGeneration() {
		t.Errorf("NodeCompanion lost: Degraded %v, want True with reason %s at generation %d", d, policy.ReasonTargetNotFound, u.GetGeneration())
	}
}

func podTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](0),
		Containers:                    []corev1.Container{{Name: "guard", Image: "registry.example/guard:1"}},
	}}
}

// waitHealth waits until the object's status has the shape the health checks read, at
// its current generation, with Ready of status (and reason, unless empty); it returns
// the object as JSON.
func waitHealth(f *framework.Framework, c client.Client, kind string, key client.ObjectKey, status, reason string) *unstructured.Unstructured {
	f.T.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(holdfastv1alpha1.GroupVersion.WithKind(kind))
	f.Eventually(healthSettle, fmt.Sprintf("%s %s Ready=%s %s at its generation", kind, key, status, reason), func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, u); err != nil {
			return false, err
		}
		gen := u.GetGeneration()
		observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		ready := condition(u, holdfastv1alpha1.ConditionReady)
		switch {
		case observed != gen:
			return false, fmt.Errorf("status.observedGeneration %d, generation %d", observed, gen)
		case ready == nil:
			return false, fmt.Errorf("no Ready condition: %v", u.Object["status"])
		case ready["observedGeneration"] != gen:
			return false, fmt.Errorf("Ready at generation %v, generation %d", ready["observedGeneration"], gen)
		case ready["status"] != status || (reason != "" && ready["reason"] != reason):
			return false, fmt.Errorf("Ready %v", ready)
		}
		return true, nil
	})
	return u
}

// condition returns the condition of type t of u's status, as JSON.
func condition(u *unstructured.Unstructured, t string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == t {
			return m
		}
	}
	return nil
}
