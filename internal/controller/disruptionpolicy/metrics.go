package disruptionpolicy

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/controller/collectors"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// workloadCounts are the values of the state label of holdfast_disruptionpolicy_workloads.
var workloadCounts = []string{"selected", "budgeted", "conflicting", "unprotected", "surging", "pacing", "degraded", "blocked", "recovering"}

// metrics exports each policy's workload counts, so that an alert can fire on a
// workload left without a budget, or a surge that does not end; whether its maintenance
// windows are open; the zone each of its zone-aware workloads has disrupted; the
// disruptions each of its budgets allows; and how long its workloads took to be whole
// again after a node failure.
type metrics struct {
	workloads     *prometheus.GaugeVec
	windowOpen    *prometheus.GaugeVec
	conditions    *prometheus.GaugeVec
	zoneDisrupted *prometheus.GaugeVec
	budgets       *budgetCollector
	recoveries    *recoveries
	handOffs      *prometheus.HistogramVec
}

// newMetrics registers the collectors with reg; at each scrape, cache gives the managed
// budgets and the nodes, live the pods of the nodes being drained.
func newMetrics(reg prometheus.Registerer, cache, live client.Reader) (*metrics, error) {
	workloads, err := collectors.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "holdfast_disruptionpolicy_workloads",
		Help: "Workloads of a DisruptionPolicy by state: selected, budgeted (holdfast manages the budget), conflicting (another budget or an older policy), unprotected (no budget), surging, pacing (a pod Ready for less than minReadySeconds), degraded (fewer Ready pods than wanted, not for a drain or a rollout), blocked (the budget allows no disruption now), recovering (pods on a lost node).",
	}, []string{collectors.LabelNamespace, collectors.LabelPolicy, collectors.LabelState}))
	if err != nil {
		return nil, fmt.Errorf("registering DisruptionPolicy metrics: %w", err)
	}
	windowOpen, err := collectors.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "holdfast_disruptionpolicy_window_open",
		Help: "1 while one of a DisruptionPolicy's maintenance windows is open, 0 while all are closed (its budgets then allow no disruption); absent for a policy without windows.",
	}, []string{collectors.LabelNamespace, collectors.LabelPolicy}))
	if err != nil {
		return nil, fmt.Errorf("registering DisruptionPolicy metrics: %w", err)
	}
	conditions, err := collectors.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "holdfast_disruptionpolicy_condition",
		Help: "1 for each condition a DisruptionPolicy has now, by type, status and reason (in snake_case: ready, budgets_ready, window_open with reason invalid_window, ...), so that alerts read what kubectl shows.",
	}, []string{collectors.LabelNamespace, collectors.LabelPolicy, collectors.LabelType, collectors.LabelStatus, collectors.LabelReason}))
	if err != nil {
		return nil, fmt.Errorf("registering DisruptionPolicy metrics: %w", err)
	}
	zoneDisrupted, err := collectors.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "holdfast_disruptionpolicy_zone_disrupted",
		Help: zoneDisruptedHelp,
	}, []string{collectors.LabelNamespace, collectors.LabelPolicy, collectors.LabelKind, collectors.LabelWorkload, collectors.LabelZone}))
	if err != nil {
		return nil, fmt.Errorf("registering DisruptionPolicy metrics: %w", err)
	}
	bc, err := collectors.Register(reg, &budgetCollector{})
	if err != nil {
		return nil, fmt.Errorf("registering DisruptionPolicy metrics: %w", err)
	}
	bc.readers.Store(&readers{cache: cache, live: live})
	rec, err := newRecoveries(reg)
	if err != nil {
		return nil, err
	}
	handOffs, err := collectors.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "holdfast_disruptionpolicy_handoff_duration_seconds",
		Help:    "Seconds from the start of a hand-off of a Surge single replica's node to its autoscaler (the extra pod started) to its end, by autoscaler and outcome: taken (the node's pod gone) or declined (the deadline passed, or the new pod landed on the node).",
		Buckets: []float64{30, 60, 90, 120, 180, 300, 600, 900, 1800},
	}, []string{collectors.LabelAutoscaler, collectors.LabelOutcome}))
	if err != nil {
		return nil, fmt.Errorf("registering DisruptionPolicy metrics: %w", err)
	}
	return &metrics{workloads: workloads, windowOpen: windowOpen, conditions: conditions, zoneDisrupted: zoneDisrupted, budgets: bc, recoveries: rec, handOffs: handOffs}, nil
}

// handOffsEnded observes the hand-offs a decision ended, once its writes are made.
func (m *metrics) handOffsEnded(ends []policy.HandOffEnd) {
	for _, e := range ends {
		outcome := "declined"
		if e.Taken {
			outcome = "taken"
		}
		m.handOffs.WithLabelValues(e.Autoscaler, outcome).Observe(e.Duration.Seconds())
	}
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
		"blocked":     int(st.Blocked),
		"recovering":  int(st.Recovering),
	} {
		m.workloads.WithLabelValues(key.Namespace, key.Name, state).Set(float64(v))
	}
	policy := prometheus.Labels{collectors.LabelNamespace: key.Namespace, collectors.LabelPolicy: key.Name}
	m.conditions.DeletePartialMatch(policy)
	for _, c := range st.Conditions {
		m.conditions.WithLabelValues(key.Namespace, key.Name, collectors.LabelValue(c.Type), collectors.LabelValue(string(c.Status)), collectors.LabelValue(c.Reason)).Set(1)
	}
	m.zoneDisrupted.DeletePartialMatch(policy)
	for _, w := range st.Workloads {
		if w.Zone != "" {
			m.zoneDisrupted.WithLabelValues(key.Namespace, key.Name, w.Kind, w.Name, w.Zone).Set(1)
		}
	}
	if st.Window == nil {
		m.windowOpen.DeleteLabelValues(key.Namespace, key.Name)
		return
	}
	open := 0.0
	if st.Window.Open {
		open = 1
	}
	m.windowOpen.WithLabelValues(key.Namespace, key.Name).Set(open)
}

func (m *metrics) forget(key types.NamespacedName) {
	for _, state := range workloadCounts {
		m.workloads.DeleteLabelValues(key.Namespace, key.Name, state)
	}
	m.windowOpen.DeleteLabelValues(key.Namespace, key.Name)
	policy := prometheus.Labels{collectors.LabelNamespace: key.Namespace, collectors.LabelPolicy: key.Name}
	m.conditions.DeletePartialMatch(policy)
	m.zoneDisrupted.DeletePartialMatch(policy)
	m.recoveries.forget(key)
}

const zoneDisruptedHelp = "1 for the zone a workload with zone-aware budgets (spec.zoneAware) has disrupted: its pods there may go, every other zone's are held; absent while no zone is."

const budgetsAllowedHelp = "Disruptions a PodDisruptionBudget that a DisruptionPolicy manages allows now, as the disruption controller last counted them: at 0 the next eviction of the workload is refused."

// budgetsAllowed describes holdfast_disruptionpolicy_budget_disruptions_allowed.
var budgetsAllowed = prometheus.NewDesc("holdfast_disruptionpolicy_budget_disruptions_allowed",
	budgetsAllowedHelp, []string{collectors.LabelNamespace, collectors.LabelPolicy, collectors.LabelBudget, collectors.LabelKind, collectors.LabelWorkload}, nil)

const blockedPodsHelp = "Pods on a node being drained (cordoned, its maintenance planned, or tainted by an autoscaler) that a PodDisruptionBudget a DisruptionPolicy manages keeps there, as it allows no disruption: the drain of that node waits on them. DaemonSet and mirror pods, which drains leave, are not counted."

// blockedPods describes holdfast_disruptionpolicy_drain_blocked_pods.
var blockedPods = prometheus.NewDesc("holdfast_disruptionpolicy_drain_blocked_pods",
	blockedPodsHelp, []string{collectors.LabelNamespace, collectors.LabelPolicy, collectors.LabelBudget, collectors.LabelKind, collectors.LabelWorkload, collectors.LabelNode}, nil)

// budgetCollector reads the managed budgets from the operator's cache at each scrape, so
// that the series follow the disruption controller's every count without a reconcile,
// and, when some allow no disruption, which drains they hold back: the budget alone
// cannot say, since a Surge or Protect single replica allows none on purpose until its
// node is drained.
type budgetCollector struct {
	// readers is swapped when a process builds the operator again (tests restart it).
	readers atomic.Pointer[readers]
}

// readers are where budgetCollector reads.
type readers struct{ cache, live client.Reader }

func (c *budgetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- budgetsAllowed
	ch <- blockedPods
}

func (c *budgetCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.readers.Load()
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &policyv1.PodDisruptionBudgetList{}
	if err := r.cache.List(ctx, list, client.HasLabels{holdfastv1alpha1.PolicyLabel}); err != nil {
		ch <- prometheus.NewInvalidMetric(budgetsAllowed, fmt.Errorf("listing managed PodDisruptionBudgets: %w", err))
		return
	}
	var none []policyv1.PodDisruptionBudget
	for i := range list.Items {
		b := &list.Items[i]
		kind, workload := budgetOwner(b)
		ch <- prometheus.MustNewConstMetric(budgetsAllowed, prometheus.GaugeValue, float64(b.Status.DisruptionsAllowed),
			b.Namespace, b.Labels[holdfastv1alpha1.PolicyLabel], b.Name, kind, workload)
		if availability.AllowsNone(b) {
			none = append(none, *b)
		}
	}
	if len(none) == 0 {
		return
	}
	pods, err := drainingPods(ctx, r.cache, r.live)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(blockedPods, err)
		return
	}
	for _, d := range blockedDrains(none, pods) {
		kind, workload := budgetOwner(d.budget)
		ch <- prometheus.MustNewConstMetric(blockedPods, prometheus.GaugeValue, float64(d.pods),
			d.budget.Namespace, d.budget.Labels[holdfastv1alpha1.PolicyLabel], d.budget.Name, kind, workload, d.node)
	}
}

// budgetOwner is the workload of a managed budget, which holdfast sets as its only owner.
func budgetOwner(b *policyv1.PodDisruptionBudget) (kind, name string) {
	if len(b.OwnerReferences) > 0 {
		return b.OwnerReferences[0].Kind, b.OwnerReferences[0].Name
	}
	return "", ""
}
