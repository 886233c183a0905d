package disruptionpolicy

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

func TestMetricsCountPacingAndDegraded(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "shop", Name: "web"}
	m.set(key, holdfastv1alpha1.DisruptionPolicyStatus{Selected: 3, Budgeted: 3, Degraded: 1, Workloads: []holdfastv1alpha1.WorkloadStatus{
		{Name: "a", State: holdfastv1alpha1.WorkloadDegraded},
		{Name: "b", State: holdfastv1alpha1.WorkloadPacing},
		{Name: "c", State: holdfastv1alpha1.WorkloadBudgeted},
	}})
	for state, want := range map[string]float64{"degraded": 1, "pacing": 1, "budgeted": 3, "surging": 0} {
		if got := testutil.ToFloat64(m.workloads.WithLabelValues("shop", "web", state)); got != want {
			t.Errorf("%s = %v, want %v", state, got, want)
		}
	}
	m.forget(key)
	if got := testutil.CollectAndCount(m.workloads); got != 0 {
		t.Errorf("%d series after forget, want 0", got)
	}
}
