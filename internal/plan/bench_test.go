package plan_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
	"github.com/holdfast-dev/holdfast/test/bench"
)

// BenchmarkRollingDrain plans a rolling drain (drained nodes come back) of every node of
// a generated cluster at Kubernetes' published limits: 5,000 nodes of 110 pods each and
// 150,000 pods in 10,000 workloads, each under a budget allowing one to three
// disruptions. It reports the waves planned against the lower bound the budgets impose.
func BenchmarkRollingDrain(b *testing.B) {
	benchmarkRollingDrain(b, generated())
}

// BenchmarkRollingDrainSpread is BenchmarkRollingDrain with every workload spread by
// DoNotSchedule constraints over hostnames and zones: a replacement must stay in its
// zone and off nodes holding its workload, so the simulation checks more and can keep
// fewer replicas together.
func BenchmarkRollingDrainSpread(b *testing.B) {
	s := generated()
	for i := range s.Deployments {
		d := &s.Deployments[i]
		d.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: d.Spec.Selector},
			{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: d.Spec.Selector},
		}
	}
	benchmarkRollingDrain(b, s)
}

func generated() *snapshot.Snapshot {
	s := snapshottest.Generate(snapshottest.ScaleFor(150_000))
	for i := range s.Nodes {
		s.Nodes[i].Status.Allocatable = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"),
			corev1.ResourcePods: resource.MustParse("110"),
		}
	}
	return s
}

func benchmarkRollingDrain(b *testing.B, raw *snapshot.Snapshot) {
	s := predicted(raw)
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
	bench.Go(b, "go test -run '^$' -bench RollingDrain -benchmem -cpu 1 ./internal/plan/", "s", 0,
		bench.Of("waves / lower bound", float64(len(p.Waves))/float64(max(p.LowerBound.Waves, 1)), "x").AtMost(waveRatio).
			With(fmt.Sprintf("%d waves, lower bound %d, %d nodes blocked", len(p.Waves), p.LowerBound.Waves, len(p.Blocked))))
}

// waveRatio is the most waves a plan may take per wave of its lower bound (the target of
// the issue on plans that reach their bound).
const waveRatio = 1.2

// BenchmarkBenchScalePlan plans `holdfast plan drain --all` on the cluster make
// bench-scale builds (1,000 nodes, about 30,000 pods, see benchScaleShape) and reports
// the waves against the lower bound and their ratio.
func BenchmarkBenchScalePlan(b *testing.B) {
	s := predicted(benchScaleShape(1000).Snapshot)
	var p *plan.Plan
	b.ReportAllocs()
	for b.Loop() {
		var err error
		opts := plan.Options{DrainFilter: availability.DrainFilter{IgnoreDaemonSets: true}}
		if p, err = plan.DrainWaves(s, now, plan.Targets{All: true}, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(p.Waves)), "waves")
	b.ReportMetric(float64(p.LowerBound.Waves), "lower-bound")
	b.ReportMetric(float64(len(p.Waves))/float64(p.LowerBound.Waves), "waves/bound")
	b.ReportMetric(float64(len(p.Blocked)), "blocked")
	bench.Go(b, "go test -run '^$' -bench BenchScalePlan -benchmem ./internal/plan/", "s", 0,
		bench.Of("waves / lower bound", float64(len(p.Waves))/float64(max(p.LowerBound.Waves, 1)), "x").AtMost(waveRatio).
			With(fmt.Sprintf("%d waves, lower bound %d, %d nodes blocked", len(p.Waves), p.LowerBound.Waves, len(p.Blocked))))
}
