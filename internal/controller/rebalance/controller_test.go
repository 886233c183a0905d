package rebalance

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// The predicate on every workload change passes those a policy that rebalances
// selects, or that carry the annotation, and no other: in the other namespace the
// policy that selects the workload does not rebalance.
func TestOptedInChanged(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, holdfastv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	selecting := func(ns string, rb *holdfastv1alpha1.RebalanceSpec) *holdfastv1alpha1.DisruptionPolicy {
		return &holdfastv1alpha1.DisruptionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
			Spec:       holdfastv1alpha1.DisruptionPolicySpec{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}, Rebalance: rb},
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(selecting("spread", &holdfastv1alpha1.RebalanceSpec{}), selecting("budgets", nil)).
		WithIndex(&holdfastv1alpha1.DisruptionPolicy{}, rebalancingIndex, rebalances).
		Build()
	r := &reconciler{kind: kinds[0], client: c}
	deployment := func(ns string, labels, annotations map[string]string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: labels, Annotations: annotations}}
	}
	web := map[string]string{"tier": "web"}
	tests := map[string]struct {
		obj  *appsv1.Deployment
		want bool
	}{
		"selected by a policy that rebalances":       {obj: deployment("spread", web, nil), want: true},
		"not selected by it":                         {obj: deployment("spread", map[string]string{"tier": "db"}, nil)},
		"selected by a policy that does not":         {obj: deployment("budgets", web, nil)},
		"the annotation, with no policy":             {obj: deployment("budgets", nil, map[string]string{holdfastv1alpha1.RebalanceAnnotation: "true"}), want: true},
		"the annotation that opts out, still passed": {obj: deployment("spread", web, map[string]string{holdfastv1alpha1.RebalanceAnnotation: "false"}), want: true},
	}
	p := r.optedInChanged()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := p.Update(event.UpdateEvent{ObjectOld: tc.obj, ObjectNew: tc.obj}); got != tc.want {
				t.Errorf("passed = %t, want %t", got, tc.want)
			}
		})
	}
}
