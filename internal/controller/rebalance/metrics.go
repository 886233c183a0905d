package rebalance

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/controller/collectors"
	"github.com/holdfast-dev/holdfast/internal/plan"
)

// metrics counts evictions per workload, so that an alert can fire on a workload that
// keeps being moved, and decisions per outcome, so that refusals show.
type metrics struct {
	evictions *prometheus.CounterVec
	decisions *prometheus.CounterVec
}

// newMetrics registers the collectors with reg.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	evictions, err := collectors.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "holdfast_rebalance_evictions_total",
		Help: "Pods evicted to spread a workload's replicas again, by workload.",
	}, []string{collectors.LabelNamespace, collectors.LabelKind, collectors.LabelWorkload}))
	if err != nil {
		return nil, fmt.Errorf("registering rebalance metrics: %w", err)
	}
	decisions, err := collectors.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "holdfast_rebalance_decisions_total",
		Help: "Rebalancing decisions by outcome: evict, balanced, settling, cooldown, no_better_place, budget_exhausted, single_replica, unsupported.",
	}, []string{collectors.LabelOutcome}))
	if err != nil {
		return nil, fmt.Errorf("registering rebalance metrics: %w", err)
	}
	return &metrics{evictions: evictions, decisions: decisions}, nil
}

func (m *metrics) evicted(w availability.WorkloadRef) {
	m.evictions.WithLabelValues(w.Namespace, w.Kind, w.Name).Inc()
}

func (m *metrics) decided(o plan.RebalanceOutcome) {
	m.decisions.WithLabelValues(collectors.LabelValue(string(o))).Inc()
}
