package availability_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
)

func pdb(name string, sel *metav1.LabelSelector) policyv1.PodDisruptionBudget {
	return policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 1},
		Spec: policyv1.PodDisruptionBudgetSpec{Selector: sel}, Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1}}
}

// The DisruptionPolicy controller's coveringBudget skipped empty selectors; the Eviction
// API and the disruption controller (policy/v1) let an empty selector cover every pod of
// the namespace, and a nil one none.
func TestCovers(t *testing.T) {
	tests := map[string]struct {
		sel       *metav1.LabelSelector
		namespace string
		want      bool
	}{
		"matching labels":                       {sel: &metav1.LabelSelector{MatchLabels: web}, namespace: "ns", want: true},
		"other labels":                          {sel: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, namespace: "ns"},
		"empty selector: every pod (policy/v1)": {sel: &metav1.LabelSelector{}, namespace: "ns", want: true},
		"nil selector: no pod":                  {sel: nil, namespace: "ns"},
		"invalid selector: no pod": {sel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: "Bogus"}}}, namespace: "ns"},
		"another namespace": {sel: &metav1.LabelSelector{}, namespace: "other"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := pdb("b", tc.sel)
			if got := availability.Covers(&p, tc.namespace, web); got != tc.want {
				t.Errorf("Covers = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFloor(t *testing.T) {
	i, s := intstr.FromInt32, intstr.FromString
	tests := map[string]struct {
		spec                   policyv1.PodDisruptionBudgetSpec
		pods, scale            int32
		expected, desired      int32
		neverAllows, usesScale bool
	}{
		"integer minAvailable counts pods":           {spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(i(2))}, pods: 3, scale: 5, expected: 3, desired: 2},
		"minAvailable 50% of 3 rounds up":            {spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(s("50%"))}, pods: 2, scale: 3, expected: 3, desired: 2, usesScale: true},
		"minAvailable 50% of 1 rounds up":            {spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(s("50%"))}, pods: 1, scale: 1, expected: 1, desired: 1, neverAllows: true, usesScale: true},
		"maxUnavailable 25% of 3 rounds up to 1":     {spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(s("25%"))}, pods: 3, scale: 3, expected: 3, desired: 2, usesScale: true},
		"maxUnavailable above the scale floors at 0": {spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(i(5))}, pods: 3, scale: 3, expected: 3, desired: 0, usesScale: true},
		"maxUnavailable 0":                           {spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(i(0))}, pods: 3, scale: 3, expected: 3, desired: 3, neverAllows: true, usesScale: true},
		"minAvailable 1 on one replica":              {spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(i(1))}, pods: 1, scale: 1, expected: 1, desired: 1, neverAllows: true},
		"no pod expected is not never":               {spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(i(1))}, expected: 0, desired: 1},
		"neither field":                              {pods: 3, scale: 3},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			expected := availability.ExpectedPods(tc.spec, tc.pods, tc.scale)
			desired, err := availability.DesiredHealthy(tc.spec, expected)
			if err != nil {
				t.Fatal(err)
			}
			got := []any{expected, desired, availability.NeverAllows(expected, desired), availability.UsesScale(tc.spec)}
			want := []any{tc.expected, tc.desired, tc.neverAllows, tc.usesScale}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("expected, desired, never, usesScale (-want +got):\n%s", diff)
			}
			if tc.spec.MaxUnavailable != nil || tc.spec.MinAvailable != nil {
				if f := availability.Floor(tc.spec, tc.scale); tc.usesScale && f != tc.desired {
					t.Errorf("Floor = %d, want %d", f, tc.desired)
				}
			}
		})
	}
}

func TestAllowsNone(t *testing.T) {
	counted := func(gen, observed, expected, allowed int32) *policyv1.PodDisruptionBudget {
		p := pdb("b", &metav1.LabelSelector{})
		p.Generation = int64(gen)
		p.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: int64(observed), ExpectedPods: expected, DisruptionsAllowed: allowed}
		return &p
	}
	tests := map[string]struct {
		pdb  *policyv1.PodDisruptionBudget
		want bool
	}{
		"no budget":                 {},
		"allows none":               {pdb: counted(1, 1, 3, 0), want: true},
		"allows one":                {pdb: counted(1, 1, 3, 1)},
		"counted for an older spec": {pdb: counted(2, 1, 3, 0)},
		"over no pods":              {pdb: counted(1, 1, 0, 0)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := availability.AllowsNone(tc.pdb); got != tc.want {
				t.Errorf("AllowsNone = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCanEvict(t *testing.T) {
	ready := availability.Candidate{Phase: corev1.PodRunning, Ready: true}
	unready := availability.Candidate{Phase: corev1.PodRunning}
	count := func(name string, expected, desired, current int32, mutate ...func(*availability.Count)) availability.Count {
		p := pdb(name, &metav1.LabelSelector{MatchLabels: web})
		p.Spec.MinAvailable = ptr.To(intstr.FromInt32(desired))
		c := availability.Count{PDB: &p, Status: availability.Status{ExpectedPods: expected, DesiredHealthy: desired, CurrentHealthy: current,
			DisruptionsAllowed: availability.DisruptionsAllowed(expected, desired, current)}}
		for _, m := range mutate {
			m(&c)
		}
		return c
	}
	alwaysAllow := func(c *availability.Count) {
		c.PDB.Spec.UnhealthyPodEvictionPolicy = ptr.To(policyv1.AlwaysAllow)
	}
	type verdict struct {
		Allowed   bool
		Code      int
		Reason    availability.Reason
		Permanent bool
	}
	tests := map[string]struct {
		pod     availability.Candidate
		budgets []availability.Count
		want    verdict
	}{
		"no budget": {pod: ready, want: verdict{Allowed: true, Reason: availability.ReasonNoBudget}},
		"a disruption to give": {pod: ready, budgets: []availability.Count{count("b", 3, 2, 3)},
			want: verdict{Allowed: true, Reason: availability.ReasonDisruptionAllowed}},
		"nothing to give": {pod: ready, budgets: []availability.Count{count("b", 3, 2, 2)},
			want: verdict{Code: 429, Reason: availability.ReasonBudgetExhausted}},
		"two budgets: 500 whatever they allow": {pod: ready, budgets: []availability.Count{count("a", 3, 1, 3), count("b", 3, 1, 3)},
			want: verdict{Code: 500, Reason: availability.ReasonOverlappingBudgets, Permanent: true}},
		"two budgets over a pending pod: deleted without asking": {pod: availability.Candidate{Phase: corev1.PodPending},
			budgets: []availability.Count{count("a", 3, 1, 3), count("b", 3, 1, 3)}, want: verdict{Allowed: true, Reason: availability.ReasonNotRunning}},
		"terminating pod under a budget at zero": {pod: availability.Candidate{Phase: corev1.PodRunning, Ready: true, Terminating: true},
			budgets: []availability.Count{count("b", 1, 1, 1)}, want: verdict{Allowed: true, Reason: availability.ReasonTerminating}},
		"succeeded pod": {pod: availability.Candidate{Phase: corev1.PodSucceeded}, budgets: []availability.Count{count("b", 1, 1, 1)},
			want: verdict{Allowed: true, Reason: availability.ReasonNotRunning}},
		// The dry run used to say "blocked" for any pod of a budget that never allows;
		// the Eviction API asks about readiness first.
		"unready pod, AlwaysAllow, budget that never allows": {pod: unready, budgets: []availability.Count{count("b", 1, 1, 0, alwaysAllow)},
			want: verdict{Allowed: true, Reason: availability.ReasonUnhealthyAlwaysAllow}},
		"unready pod, IfHealthyBudget, budget healthy without it": {pod: unready, budgets: []availability.Count{count("b", 3, 2, 2)},
			want: verdict{Allowed: true, Reason: availability.ReasonUnhealthyBudgetHealthy}},
		// The dry run used to evict every unready pod as costing nothing.
		"unready pod, IfHealthyBudget, budget short": {pod: unready, budgets: []availability.Count{count("b", 3, 2, 1)},
			want: verdict{Code: 429, Reason: availability.ReasonUnhealthyPod}},
		"unready pod, IfHealthyBudget, budget wanting none healthy spends a disruption": {pod: unready,
			budgets: []availability.Count{count("b", 3, 0, 0)}, want: verdict{Code: 429, Reason: availability.ReasonBudgetExhausted}},
		"stale status": {pod: ready, budgets: []availability.Count{count("b", 3, 1, 3, func(c *availability.Count) { c.Stale = true })},
			want: verdict{Code: 429, Reason: availability.ReasonBudgetStale}},
		"negative disruptionsAllowed": {pod: ready, budgets: []availability.Count{count("b", 3, 1, 3, func(c *availability.Count) { c.Status.DisruptionsAllowed = -1 })},
			want: verdict{Code: 403, Reason: availability.ReasonBudgetInvalid}},
		"too many disruptedPods": {pod: ready, budgets: []availability.Count{count("b", 3, 1, 3, func(c *availability.Count) {
			c.PDB.Status.DisruptedPods = map[string]metav1.Time{}
			for i := range availability.MaxDisruptedPods + 1 {
				c.PDB.Status.DisruptedPods[fmt.Sprint("p", i)] = metav1.Time{}
			}
		})}, want: verdict{Code: 403, Reason: availability.ReasonBudgetInvalid}},
		"uncomputable": {pod: ready, budgets: []availability.Count{count("b", 0, 0, 0, func(c *availability.Count) { c.SyncError = "daemonsets.apps does not implement the scale subresource" })},
			want: verdict{Code: 429, Reason: availability.ReasonBudgetUncomputable, Permanent: true}},
		"single replica": {pod: ready, budgets: []availability.Count{count("b", 1, 1, 1)},
			want: verdict{Code: 429, Reason: availability.ReasonSingleReplicaBudget, Permanent: true}},
		"minAvailable of every replica": {pod: ready, budgets: []availability.Count{count("b", 3, 3, 3)},
			want: verdict{Code: 429, Reason: availability.ReasonBudgetNeverAllows, Permanent: true}},
		"a policy's single replica: the policy makes room": {pod: ready, budgets: []availability.Count{count("b", 1, 1, 1, func(c *availability.Count) {
			c.PDB.Labels = map[string]string{holdfastv1alpha1.PolicyLabel: "defaults"}
		})}, want: verdict{Code: 429, Reason: availability.ReasonPolicyHeld}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := availability.CanEvict(tc.pod, tc.budgets)
			got := verdict{Allowed: e.Allowed, Code: e.Code, Reason: e.Reason, Permanent: e.Permanent}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CanEvict %q (-want +got):\n%s", e.Message, diff)
			}
			if e.Message == "" {
				t.Error("no message")
			}
			if len(tc.budgets) == 1 && !e.Allowed && !strings.Contains(e.Message, "ns/"+tc.budgets[0].PDB.Name) {
				t.Errorf("message %q does not name the budget", e.Message)
			}
		})
	}
}

// CountOf reads what the Eviction API reads: the numbers, whether they are for the
// current spec, and the controller's SyncFailed condition.
func TestCountOf(t *testing.T) {
	p := pdb("b", &metav1.LabelSelector{})
	p.Generation = 2
	p.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, ExpectedPods: 3, DesiredHealthy: 2, CurrentHealthy: 3, DisruptionsAllowed: 1,
		Conditions: []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse, Reason: policyv1.SyncFailedReason, Message: "boom"}}}
	got := availability.CountOf(&p)
	want := availability.Count{PDB: &p, Status: availability.Status{ExpectedPods: 3, DesiredHealthy: 2, CurrentHealthy: 3, DisruptionsAllowed: 1}, Stale: true, SyncError: "boom"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CountOf (-want +got):\n%s", diff)
	}
}
