package disruptionpolicy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
)

func TestMetricsCountPacingAndDegraded(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry(), fake.NewFakeClient(), fake.NewFakeClient())
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
	m, err := newMetrics(prometheus.NewRegistry(), fake.NewFakeClient(), fake.NewFakeClient())
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
	if _, err := newMetrics(reg, c, c); err != nil {
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
	m, err := newMetrics(prometheus.NewRegistry(), fake.NewFakeClient(), fake.NewFakeClient())
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

// holdfast_disruptionpolicy_drain_blocked_pods names the budgets at zero that hold pods on
// a node being drained, and the node: neither a budget at zero elsewhere nor one that
// allows a disruption.
func TestMetricsDrainBlockedPods(t *testing.T) {
	budget := func(name, app string, allowed int32) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{holdfastv1alpha1.PolicyLabel: "defaults"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: app}}},
			Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, ExpectedPods: 1},
		}
	}
	node := func(name string, cordoned bool) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Unschedulable: cordoned}}
	}
	pod := func(name, app string) metav1.PartialObjectMetadata {
		return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"app": app}}}
	}
	cache := fake.NewClientBuilder().WithObjects(
		budget("holdfast-deploy-db", "db", 0), budget("holdfast-deploy-web", "web", 1),
		node("node-1", true), node("node-2", false),
	).Build()
	// The apiserver serves the pods' metadata by spec.nodeName, which a fake client
	// cannot index metadata by.
	pods := map[string][]metav1.PartialObjectMetadata{
		"node-1": {pod("db-0", "db"), pod("web-0", "web")},
		"node-2": {pod("db-1", "db")},
	}
	var listed []string
	live := interceptor.NewClient(fake.NewFakeClient(), interceptor.Funcs{List: func(_ context.Context, _ client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		o := (&client.ListOptions{}).ApplyOptions(opts)
		node, _ := o.FieldSelector.RequiresExactMatch(podNodeField)
		listed = append(listed, node)
		list.(*metav1.PartialObjectMetadataList).Items = pods[node]
		return nil
	}})
	reg := prometheus.NewRegistry()
	if _, err := newMetrics(reg, cache, live); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP holdfast_disruptionpolicy_drain_blocked_pods ` + blockedPodsHelp + `
# TYPE holdfast_disruptionpolicy_drain_blocked_pods gauge
holdfast_disruptionpolicy_drain_blocked_pods{budget="holdfast-deploy-db",kind="Deployment",namespace="shop",node="node-1",policy="defaults",workload="db"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "holdfast_disruptionpolicy_drain_blocked_pods"); err != nil {
		t.Error(err)
	}
	if !cmp.Equal(listed, []string{"node-1"}) {
		t.Errorf("pods listed on nodes %v, want those of the cordoned node-1 only", listed)
	}
}

func TestBlockedDrains(t *testing.T) {
	budget := func(namespace, name string, matchLabels map[string]string) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: matchLabels}}}
	}
	pod := func(namespace, app string, edit ...func(*metav1.PartialObjectMetadata)) metav1.PartialObjectMetadata {
		p := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Labels: map[string]string{"app": app}}}
		for _, e := range edit {
			e(&p)
		}
		return p
	}
	daemon := func(p *metav1.PartialObjectMetadata) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: ptr.To(true)}}
	}
	mirror := func(p *metav1.PartialObjectMetadata) {
		p.Annotations = map[string]string{availability.MirrorPodAnnotation: "hash"}
	}
	deleting := func(p *metav1.PartialObjectMetadata) { p.DeletionTimestamp = ptr.To(metav1.Now()) }
	web, db := budget("shop", "web", map[string]string{"app": "web"}), budget("shop", "db", map[string]string{"app": "db"})
	for name, tc := range map[string]struct {
		budgets []policyv1.PodDisruptionBudget
		pods    map[string][]metav1.PartialObjectMetadata
		want    []string
	}{
		"pods of two budgets on two nodes": {
			budgets: []policyv1.PodDisruptionBudget{*web, *db},
			pods: map[string][]metav1.PartialObjectMetadata{
				"node-2": {pod("shop", "web")},
				"node-1": {pod("shop", "web"), pod("shop", "web"), pod("shop", "db"), pod("shop", "cache")},
			},
			want: []string{"shop/db node-1 1", "shop/web node-1 2", "shop/web node-2 1"},
		},
		"a namesake pod of another namespace": {
			budgets: []policyv1.PodDisruptionBudget{*web},
			pods:    map[string][]metav1.PartialObjectMetadata{"node-1": {pod("blog", "web")}},
		},
		"DaemonSet, mirror and deleted pods, which no drain evicts through the budget": {
			budgets: []policyv1.PodDisruptionBudget{*web},
			pods:    map[string][]metav1.PartialObjectMetadata{"node-1": {pod("shop", "web", daemon), pod("shop", "web", mirror), pod("shop", "web", deleting)}},
		},
		"a budget whose selector cannot be read": {
			budgets: []policyv1.PodDisruptionBudget{*budget("shop", "bad", map[string]string{"app": "web/x"})},
			pods:    map[string][]metav1.PartialObjectMetadata{"node-1": {pod("shop", "web/x")}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, d := range blockedDrains(tc.budgets, tc.pods) {
				got = append(got, fmt.Sprintf("%s/%s %s %d", d.budget.Namespace, d.budget.Name, d.node, d.pods))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("blocked drains (-want +got):\n%s", diff)
			}
		})
	}
}

// The zone a workload has disrupted is 1; the series goes when no zone is, and with the
// policy.
func TestMetricsZoneDisrupted(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry(), fake.NewFakeClient(), fake.NewFakeClient())
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "shop", Name: "quorum"}
	status := func(zone string) holdfastv1alpha1.DisruptionPolicyStatus {
		return holdfastv1alpha1.DisruptionPolicyStatus{Workloads: []holdfastv1alpha1.WorkloadStatus{
			{Kind: "StatefulSet", Name: "db", State: holdfastv1alpha1.WorkloadBudgeted, Zone: zone},
			{Kind: "Deployment", Name: "web", State: holdfastv1alpha1.WorkloadBudgeted},
		}}
	}
	const head = "# HELP holdfast_disruptionpolicy_zone_disrupted " + zoneDisruptedHelp + "\n# TYPE holdfast_disruptionpolicy_zone_disrupted gauge\n"
	for _, zone := range []string{"a", "b", "", "c"} {
		m.set(key, status(zone))
		want := ""
		if zone != "" {
			want = head + `holdfast_disruptionpolicy_zone_disrupted{kind="StatefulSet",namespace="shop",policy="quorum",workload="db",zone="` + zone + `"} 1` + "\n"
		}
		if err := testutil.CollectAndCompare(m.zoneDisrupted, strings.NewReader(want)); err != nil {
			t.Errorf("zone %q: %v", zone, err)
		}
	}
	m.forget(key)
	if got := testutil.CollectAndCount(m.zoneDisrupted); got != 0 {
		t.Errorf("%d series after forget, want 0", got)
	}
}
