package drain

import (
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

func TestBlockedBySaysWhoHoldsTheBudget(t *testing.T) {
	budget := func(labels, annotations map[string]string) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Labels: labels, Annotations: annotations},
			Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0))},
			Status:     policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 3, ExpectedPods: 3, DesiredHealthy: 3},
		}
	}
	managed := map[string]string{holdfastv1alpha1.PolicyLabel: "defaults"}
	const numbers = "PodDisruptionBudget shop/web (maxUnavailable 0): 3 of 3 healthy, needs 3, allows 0"
	tests := map[string]struct {
		pdb  *policyv1.PodDisruptionBudget
		want string
	}{
		"a user's budget": {pdb: budget(nil, nil), want: numbers},
		"a policy's budget": {pdb: budget(managed, nil),
			want: numbers + "; managed by DisruptionPolicy defaults, which makes room for the drain"},
		"a policy's budget while pacing": {pdb: budget(managed, map[string]string{holdfastv1alpha1.PacingAnnotation: "true"}),
			want: numbers + "; paced by DisruptionPolicy defaults: the next eviction waits until the latest replacement has been Ready for minReadySeconds"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := BlockedBy(tc.pdb); got != tc.want {
				t.Errorf("BlockedBy =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
