package apply

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestBudget(t *testing.T) {
	want := func() *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", Labels: map[string]string{"holdfast.dev/disruption-policy": "p"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "u1"}}},
			Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1))},
		}
	}
	tests := map[string]struct {
		existing *policyv1.PodDisruptionBudget
		change   func(*policyv1.PodDisruptionBudget)
	}{
		"created when missing": {},
		"spec changed":         {existing: want(), change: func(p *policyv1.PodDisruptionBudget) { p.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(2)) }},
		// The NodeCompanion controller's copy compared neither of these.
		"an annotation removed": {existing: func() *policyv1.PodDisruptionBudget {
			p := want()
			p.Annotations = map[string]string{"holdfast.dev/pacing": "x"}
			return p
		}()},
		"owner changed": {existing: want(), change: func(p *policyv1.PodDisruptionBudget) { p.OwnerReferences[0].UID = "u2" }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithReturnManagedFields().Build()
			if tc.existing != nil {
				// As an older holdfast wrote it, by update under the default manager.
				if err := c.Create(context.Background(), tc.existing, client.FieldOwner(legacyFieldManager())); err != nil {
					t.Fatal(err)
				}
			}
			w := want()
			if tc.change != nil {
				tc.change(w)
			}
			if err := Budget(context.Background(), c, c, w); err != nil {
				t.Fatal(err)
			}
			got := &policyv1.PodDisruptionBudget{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), got); err != nil {
				t.Fatal(err)
			}
			type part struct {
				Labels, Annotations map[string]string
				Owners              []metav1.OwnerReference
				Spec                policyv1.PodDisruptionBudgetSpec
			}
			if diff := cmp.Diff(part{w.Labels, w.Annotations, w.OwnerReferences, w.Spec}, part{got.Labels, got.Annotations, got.OwnerReferences, got.Spec}); diff != "" {
				t.Errorf("budget (-want +got):\n%s", diff)
			}
		})
	}
}

// Issue 30 item 11: the keys others put on a budget holdfast manages stay when holdfast
// changes it; holdfast's own annotation that it no longer wants goes.
func TestBudgetKeepsOthersKeys(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithReturnManagedFields().Build()
	existing := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", Labels: map[string]string{"holdfast.dev/disruption-policy": "p"},
			Annotations: map[string]string{"holdfast.dev/blocked-since": "2026-11-22T12:00:00Z"}},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1))},
	}
	if err := c.Create(ctx, existing, client.FieldOwner(legacyFieldManager())); err != nil {
		t.Fatal(err)
	}
	theirs := []byte(`{"metadata":{"labels":{"team":"storage"},"annotations":{"example.com/note":"keep"}}}`)
	if err := c.Patch(ctx, existing.DeepCopy(), client.RawPatch(types.MergePatchType, theirs), client.FieldOwner("kubectl-annotate")); err != nil {
		t.Fatal(err)
	}
	want := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", Labels: map[string]string{"holdfast.dev/disruption-policy": "p"}},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1))},
	}
	if err := Budget(ctx, c, c, want); err != nil {
		t.Fatal(err)
	}
	got := &policyv1.PodDisruptionBudget{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"holdfast.dev/disruption-policy": "p", "team": "storage"}, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"example.com/note": "keep"}, got.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
}
