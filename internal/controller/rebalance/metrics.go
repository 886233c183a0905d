package rebalance

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/plan"
)

// metrics counts evictions per workload, so that an alert can fire on a workload that
// keeps being moved, and decisions per outcome, so that refusals show.
type metrics struct {
	evictions *prometheus.CounterVec
	decisions *prometheus.CounterVec
}

// newMetrics registers the collectors with reg. A process that builds the operator more
// than once (tests restart it) reuses the collectors registered the first time.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	evictions, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "holdfast_rebalance_evictions_total",
		Help: "Pods evicted to spread a workload's replicas again, by workload.",
	}, []string{"namespace", "kind", "name"}))
	if err != nil {
		return nil, err
	}
	decisions, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "holdfast_rebalance_decisions_total",
		Help: "Rebalancing decisions by outcome: Evict, Balanced, Settling, Cooldown, NoBetterPlace, BudgetExhausted, SingleReplica, Unsupported.",
	}, []string{"outcome"}))
	if err != nil {
		return nil, err
	}
	return &metrics{evictions: evictions, decisions: decisions}, nil
}

func register(reg prometheus.Registerer, c *prometheus.CounterVec) (*prometheus.CounterVec, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(*prometheus.CounterVec); ok {
			return existing, nil
		}
	}
	return nil, fmt.Errorf("registering rebalance metrics: %w", err)
}

func (m *metrics) evicted(w availability.WorkloadRef) {
	m.evictions.WithLabelValues(w.Namespace, w.Kind, w.Name).Inc()
}

func (m *metrics) decided(o plan.RebalanceOutcome) {
	m.decisions.WithLabelValues(string(o)).Inc()
}
