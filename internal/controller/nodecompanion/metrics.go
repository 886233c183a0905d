package nodecompanion

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/collectors"
)

// nodeStates are the values of the state label of holdfast_nodecompanion_nodes.
var nodeStates = []string{"desired", "covered", "missing", "drained", "excluded", "guarded"}

// metrics exports each NodeCompanion's node counts, so that an alert can fire on a node
// holding the budget for hours, which an Event alone would not do.
type metrics struct {
	nodes *prometheus.GaugeVec
}

// newMetrics registers the collectors with reg.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	nodes, err := collectors.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "holdfast_nodecompanion_nodes",
		Help: "Nodes of a NodeCompanion by state: desired, covered (Ready companion), missing (holding the budget), drained (cordoned after an eviction), excluded (cordoned without a companion), guarded.",
	}, []string{collectors.LabelNamespace, collectors.LabelCompanion, collectors.LabelState}))
	if err != nil {
		return nil, fmt.Errorf("registering NodeCompanion metrics: %w", err)
	}
	return &metrics{nodes: nodes}, nil
}

func (m *metrics) set(key types.NamespacedName, st holdfastv1alpha1.NodeCompanionStatus) {
	for state, v := range map[string]int{
		"desired":  int(st.Desired),
		"covered":  int(st.NodesCovered),
		"missing":  int(st.NodesMissing),
		"drained":  len(st.Drained),
		"excluded": len(st.Excluded),
		"guarded":  len(st.Guarded),
	} {
		m.nodes.WithLabelValues(key.Namespace, key.Name, state).Set(float64(v))
	}
}

func (m *metrics) forget(key types.NamespacedName) {
	for _, state := range nodeStates {
		m.nodes.DeleteLabelValues(key.Namespace, key.Name, state)
	}
}
