package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestTighten(t *testing.T) {
	tests := map[string]struct {
		spec     policyv1.PodDisruptionBudgetSpec
		replicas int32
		n        int32
		want     policyv1.PodDisruptionBudgetSpec
	}{
		"maxUnavailable less one":  {spec: maxUnavailable(intstr.FromInt32(2)), replicas: 5, n: 1, want: maxUnavailable(intstr.FromInt32(1))},
		"maxUnavailable never < 0": {spec: maxUnavailable(intstr.FromInt32(1)), replicas: 5, n: 2, want: maxUnavailable(intstr.FromInt32(0))},
		"percentage rounded up":    {spec: maxUnavailable(intstr.FromString("25%")), replicas: 5, n: 1, want: maxUnavailable(intstr.FromInt32(1))},
		// The disruption controller allows at most the replicas: 5 of 3 less one young pod
		// is 2, where taking one off 5 left 4 and paced nothing.
		"maxUnavailable above the replicas": {spec: maxUnavailable(intstr.FromInt32(5)), replicas: 3, n: 1, want: maxUnavailable(intstr.FromInt32(2))},
		"minAvailable plus one":             {spec: minAvailable(intstr.FromString("50%")), replicas: 4, n: 1, want: minAvailable(intstr.FromInt32(3))},
		"minAvailable at most the replicas": {spec: minAvailable(intstr.FromInt32(3)), replicas: 4, n: 2, want: minAvailable(intstr.FromInt32(4))},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := *tc.spec.DeepCopy()
			got := tighten(tc.spec, tc.replicas, tc.n)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("tighten (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(in, tc.spec); diff != "" {
				t.Errorf("tighten changed its input (-before +after):\n%s", diff)
			}
		})
	}
}
