package plan_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
)

// BenchmarkRollingDrain plans a rolling drain (drained nodes come back) of every node of
// a generated cluster at Kubernetes' published limits: 5,000 nodes of 110 pods each and
// 150,000 pods in 10,000 workloads, each under a budget. It reports the waves planned
// against the lower bound the budgets impose.
func BenchmarkRollingDrain(b *testing.B) {
	s := snapshottest.Generate(snapshottest.ScaleFor(150_000))
	for i := range s.Nodes {
		s.Nodes[i].Status.Allocatable = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"),
			corev1.ResourcePods: resource.MustParse("110"),
		}
	}
	var p *plan.Plan
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if p, err = plan.DrainWaves(s, now, plan.Targets{All: true}, plan.Options{Uncordon: true}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(p.Waves)), "waves")
	b.ReportMetric(float64(p.LowerBound.Waves), "lower-bound")
	b.ReportMetric(float64(len(p.Blocked)), "blocked")
}
