package disruptionpolicy

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// workloadCounts are the values of the state label of holdfast_disruptionpolicy_workloads.
var workloadCounts = []string{"selected", "budgeted", "conflicting", "unprotected", "surging", "pacing", "degraded"}

// metrics exports each policy's workload counts, so that an alert can fire on a
// workload left without a budget, or a surge that does not end.
type metrics struct {
	workloads *prometheus.GaugeVec
}

// newMetrics registers the collectors with reg. A process that builds the operator more
// than once (tests restart it) reuses the collectors registered the first time.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	workloads := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "holdfast_disruptionpolicy_workloads",
		Help: "Workloads of a DisruptionPolicy by state: selected, budgeted (holdfast manages the budget), conflicting (another budget or an older policy), unprotected (no budget), surging, pacing (a pod Ready for less than minReadySeconds), degraded (fewer Ready pods than wanted, not for a drain or a rollout).",
	}, []string{"namespace", "name", "state"})
	if err := reg.Register(workloads); err != nil {
		var already prometheus.AlreadyRegisteredError
		if !errors.As(err, &already) {
			return nil, fmt.Errorf("registering DisruptionPolicy metrics: %w", err)
		}
		existing, ok := already.ExistingCollector.(*prometheus.GaugeVec)
		if !ok {
			return nil, fmt.Errorf("registering DisruptionPolicy metrics: %w", err)
		}
		workloads = existing
	}
	return &metrics{workloads: workloads}, nil
}

func (m *metrics) set(key types.NamespacedName, st holdfastv1alpha1.DisruptionPolicyStatus) {
	// status.workloads is capped at maxListed, but lists problems first: surges and
	// pacing are counted from it, degraded workloads from the exact count.
	var surging, pacing int
	for _, w := range st.Workloads {
		switch w.State {
		case holdfastv1alpha1.WorkloadSurging:
			surging++
		case holdfastv1alpha1.WorkloadPacing:
			pacing++
		}
	}
	for state, v := range map[string]int{
		"selected":    int(st.Selected),
		"budgeted":    int(st.Budgeted),
		"conflicting": int(st.Conflicting),
		"unprotected": int(st.Unprotected),
		"surging":     surging,
		"pacing":      pacing,
		"degraded":    int(st.Degraded),
	} {
		m.workloads.WithLabelValues(key.Namespace, key.Name, state).Set(float64(v))
	}
}

func (m *metrics) forget(key types.NamespacedName) {
	for _, state := range workloadCounts {
		m.workloads.DeleteLabelValues(key.Namespace, key.Name, state)
	}
}
