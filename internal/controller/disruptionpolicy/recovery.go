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

const recoverySecondsHelp = "Seconds from a node's failure (its Lease's last renewal) to a workload with pods on it being at full strength again on the other nodes, for the last such failure of each workload a DisruptionPolicy selects."

// recoveries measures how long workloads take to be at full strength again after a node
// failure: from the last renewal of the earliest lost node a workload has pods on, as
// the operator saw it when the workload became Recovering, to the first reconcile that
// finds as many of its pods Ready on other nodes as it wants (policy.FullStrength). An
// operator restarted meanwhile measures from the renewal it then sees.
type recoveries struct {
	seconds   *prometheus.GaugeVec
	histogram *prometheus.HistogramVec
	mu        sync.Mutex
	episodes  map[recoveryKey]episode
}

type recoveryKey struct {
	policy     types.NamespacedName
	kind, name string
}

// episode is one workload's recovery from a failure.
type episode struct {
	failed   time.Time
	measured bool
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
	return &recoveries{seconds: seconds, histogram: histogram, episodes: map[recoveryKey]episode{}}, nil
}

// observe follows the Recovering workloads of st, as decided from obs: a recovery
// starts when a workload becomes Recovering, is measured once it is at full strength,
// and is forgotten when it is Recovering no more.
func (r *recoveries) observe(key types.NamespacedName, st holdfastv1alpha1.DisruptionPolicyStatus, obs policy.Observed) {
	failed := obs.Now
	for _, n := range st.LostNodes {
		if s, ok := obs.Health.Suspects[n]; ok && !s.Renewed.IsZero() && s.Renewed.Before(failed) {
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
		e, ok := r.episodes[k]
		if !ok {
			e = episode{failed: failed}
		}
		if !e.measured && policy.FullStrength(obs, w.Kind, w.Name) {
			s := obs.Now.Sub(e.failed).Seconds()
			r.seconds.WithLabelValues(key.Namespace, key.Name, w.Kind, w.Name).Set(s)
			r.histogram.WithLabelValues(key.Namespace, key.Name).Observe(s)
			e.measured = true
		}
		r.episodes[k] = e
	}
	for k := range r.episodes {
		if k.policy == key && !recovering[k] {
			delete(r.episodes, k)
		}
	}
}

// forget drops a deleted policy's series and the recoveries it was following.
func (r *recoveries) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.episodes {
		if k.policy == key {
			delete(r.episodes, k)
		}
	}
	labels := prometheus.Labels{collectors.LabelNamespace: key.Namespace, collectors.LabelPolicy: key.Name}
	r.seconds.DeletePartialMatch(labels)
	r.histogram.DeletePartialMatch(labels)
}
