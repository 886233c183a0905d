package disruptionpolicy

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

func TestMetricsCountPacingAndDegraded(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry(), fake.NewFakeClient())
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "shop", Name: "web"}
	m.set(key, holdfastv1alpha1.DisruptionPolicyStatus{Selected: 3, Budgeted: 3, Degraded: 1, Workloads: []holdfastv1alpha1.WorkloadStatus{
		{Name: "a", State: holdfastv1alpha1.WorkloadDegraded},
		{Name: "b", State: holdfastv1alpha1.WorkloadPacing},
		{Name: "c", State: holdfastv1alpha1.WorkloadBudgeted},
	}})
	for state, want := range map[string]float64{"degraded": 1, "pacing": 1, "budgeted": 3, "surging": 0} {
		if got := testutil.ToFloat64(m.workloads.WithLabelValues("shop", "web", state)); got != want {
			t.Errorf("%s = %v, want %v", state, got, want)
		}
	}
	m.forget(key)
	if got := testutil.CollectAndCount(m.workloads); got != 0 {
		t.Errorf("%d series after forget, want 0", got)
	}
}

func TestMetricsWindowOpen(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry(), fake.NewFakeClient())
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "shop", Name: "web"}
	for _, open := range []bool{true, false} {
		m.set(key, holdfastv1alpha1.DisruptionPolicyStatus{Window: &holdfastv1alpha1.WindowStatus{Open: open}})
		want := map[bool]float64{true: 1, false: 0}[open]
		if got := testutil.ToFloat64(m.windowOpen.WithLabelValues("shop", "web")); got != want {
			t.Errorf("window open %v: gauge %v, want %v", open, got, want)
		}
	}
	m.set(key, holdfastv1alpha1.DisruptionPolicyStatus{})
	if got := testutil.CollectAndCount(m.windowOpen); got != 0 {
		t.Errorf("%d window series for a policy without windows, want 0", got)
	}
}

func TestMetricsBudgetsReadAtScrape(t *testing.T) {
	managed := func(name, policy, owner string, allowed int32) *policyv1.PodDisruptionBudget {
		b := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
			Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
		}
		if policy != "" {
			b.Labels = map[string]string{holdfastv1alpha1.PolicyLabel: policy}
			b.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: owner}}
		}
		return b
	}
	c := fake.NewClientBuilder().WithObjects(
		managed("holdfast-deploy-web", "defaults", "web", 1),
		managed("holdfast-deploy-db", "defaults", "db", 0),
		managed("users-own", "", "", 3), // not holdfast's: not exported
	).Build()
	reg := prometheus.NewRegistry()
	if _, err := newMetrics(reg, c); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP holdfast_disruptionpolicy_budget_disruptions_allowed ` + budgetsAllowedHelp + `
# TYPE holdfast_disruptionpolicy_budget_disruptions_allowed gauge
holdfast_disruptionpolicy_budget_disruptions_allowed{budget="holdfast-deploy-db",kind="Deployment",namespace="shop",policy="defaults",workload="db"} 0
holdfast_disruptionpolicy_budget_disruptions_allowed{budget="holdfast-deploy-web",kind="Deployment",namespace="shop",policy="defaults",workload="web"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "holdfast_disruptionpolicy_budget_disruptions_allowed"); err != nil {
		t.Error(err)
	}
}

// holdfast_disruptionpolicy_condition has one series per condition the policy has now,
// in snake_case, and none left over from a reason it no longer has.
func TestMetricsConditions(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry(), fake.NewFakeClient())
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "shop", Name: "web"}
	invalid := metav1.Condition{Type: holdfastv1alpha1.ConditionWindowOpen, Status: metav1.ConditionFalse, Reason: holdfastv1alpha1.ReasonInvalidWindow}
	m.set(key, holdfastv1alpha1.DisruptionPolicyStatus{Conditions: []metav1.Condition{invalid}})
	if got := testutil.ToFloat64(m.conditions.WithLabelValues("shop", "web", "window_open", "false", "invalid_window")); got != 1 {
		t.Errorf("the invalid window's series = %v, want 1", got)
	}
	invalid.Reason = holdfastv1alpha1.ReasonOutsideWindows
	m.set(key, holdfastv1alpha1.DisruptionPolicyStatus{Conditions: []metav1.Condition{invalid}})
	if got := testutil.CollectAndCount(m.conditions); got != 1 {
		t.Errorf("%d condition series after the reason changed, want 1", got)
	}
	m.forget(key)
	if got := testutil.CollectAndCount(m.conditions); got != 0 {
		t.Errorf("%d condition series after forget, want 0", got)
	}
}
