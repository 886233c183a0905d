package disruptionpolicy

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/collectors"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

const recoverySecondsHelp = "Seconds from a node's failure (its Lease's last renewal) to a workload with pods on it being at full strength again (no longer Recovering), for the last such failure of each workload a DisruptionPolicy selects."

// recoveries measures how long workloads take to be whole again after a node failure:
// from the last renewal of the earliest lost node a workload had pods on, as the
// operator saw it when the workload became Recovering, to the reconcile that finds it
// no longer so. An operator restarted meanwhile measures nothing for that failure.
type recoveries struct {
	seconds   *prometheus.GaugeVec
	histogram *prometheus.HistogramVec
	mu        sync.Mutex
	since     map[recoveryKey]time.Time
}

type recoveryKey struct {
	policy     types.NamespacedName
	kind, name string
}

func newRecoveries(reg prometheus.Registerer) (*recoveries, error) {
	seconds, err := collectors.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "holdfast_disruptionpolicy_recovery_seconds",
		Help: recoverySecondsHelp,
	}, []string{collectors.LabelNamespace, collectors.LabelPolicy, collectors.LabelKind, collectors.LabelWorkload}))
	if err != nil {
		return nil, fmt.Errorf("registering DisruptionPolicy metrics: %w", err)
	}
	histogram, err := collectors.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "holdfast_disruptionpolicy_recovery_duration_seconds",
		Help:    "Seconds from a node's failure to full strength, per workload recovered, by DisruptionPolicy (see holdfast_disruptionpolicy_recovery_seconds).",
		Buckets: []float64{15, 30, 45, 60, 90, 120, 180, 300, 600},
	}, []string{collectors.LabelNamespace, collectors.LabelPolicy}))
	if err != nil {
		return nil, fmt.Errorf("registering DisruptionPolicy metrics: %w", err)
	}
	return &recoveries{seconds: seconds, histogram: histogram, since: map[recoveryKey]time.Time{}}, nil
}

// observe notes the workloads of st that start or end Recovering at now; h gives when
// the lost nodes in st last renewed their Leases.
func (r *recoveries) observe(key types.NamespacedName, st holdfastv1alpha1.DisruptionPolicyStatus, h policy.NodeHealth, now time.Time) {
	failed := now
	for _, n := range st.LostNodes {
		if s, ok := h.Suspects[n]; ok && !s.Renewed.IsZero() && s.Renewed.Before(failed) {
			failed = s.Renewed
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	recovering := map[recoveryKey]bool{}
	for _, w := range st.Workloads {
		if w.State != holdfastv1alpha1.WorkloadRecovering {
			continue
		}
		k := recoveryKey{policy: key, kind: w.Kind, name: w.Name}
		recovering[k] = true
		if _, ok := r.since[k]; !ok {
			r.since[k] = failed
		}
	}
	for k, since := range r.since {
		if k.policy != key || recovering[k] {
			continue
		}
		delete(r.since, k)
		s := now.Sub(since).Seconds()
		r.seconds.WithLabelValues(key.Namespace, key.Name, k.kind, k.name).Set(s)
		r.histogram.WithLabelValues(key.Namespace, key.Name).Observe(s)
	}
}

// forget drops a deleted policy's series and the recoveries it was timing.
func (r *recoveries) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.since {
		if k.policy == key {
			delete(r.since, k)
		}
	}
	labels := prometheus.Labels{collectors.LabelNamespace: key.Namespace, collectors.LabelPolicy: key.Name}
	r.seconds.DeletePartialMatch(labels)
	r.histogram.DeletePartialMatch(labels)
}
