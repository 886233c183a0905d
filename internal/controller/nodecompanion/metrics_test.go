package nodecompanion

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

func TestMetricsSurviveARestartInProcess(t *testing.T) {
	reg := prometheus.NewRegistry()
	first, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	second, err := newMetrics(reg)
	if err != nil {
		t.Fatalf("registering again: %v", err)
	}
	key := types.NamespacedName{Namespace: "ns", Name: "storage"}
	second.set(key, holdfastv1alpha1.NodeCompanionStatus{Desired: 5, NodesCovered: 4, NodesMissing: 1, Drained: []holdfastv1alpha1.DrainedNode{{Node: "node-1"}}})
	if got := testutil.ToFloat64(first.nodes.WithLabelValues("ns", "storage", "drained")); got != 1 {
		t.Errorf("drained = %v, want 1", got)
	}
	if got := testutil.CollectAndCount(first.nodes); got != len(nodeStates) {
		t.Errorf("%d series, want %d", got, len(nodeStates))
	}
	second.forget(key)
	if got := testutil.CollectAndCount(first.nodes); got != 0 {
		t.Errorf("%d series after forget, want 0", got)
	}
}
