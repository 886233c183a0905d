package disruptionpolicy

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// A workload's time to full strength runs from its lost node's last Lease renewal to the
// reconcile that finds it no longer Recovering; one still Recovering has no figure yet.
func TestRecoverySeconds(t *testing.T) {
	r, err := newRecoveries(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "shop", Name: "defaults"}
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	h := policy.NodeHealth{Suspects: map[string]policy.Suspect{"n1": {Renewed: t0}}}
	status := func(states ...holdfastv1alpha1.WorkloadState) holdfastv1alpha1.DisruptionPolicyStatus {
		st := holdfastv1alpha1.DisruptionPolicyStatus{LostNodes: []string{"n1"}}
		for i, s := range states {
			st.Workloads = append(st.Workloads, holdfastv1alpha1.WorkloadStatus{Kind: holdfastv1alpha1.KindDeployment, Name: []string{"single", "web"}[i], State: s})
		}
		return st
	}
	r.observe(key, status(holdfastv1alpha1.WorkloadRecovering, holdfastv1alpha1.WorkloadRecovering), h, t0.Add(31*time.Second))
	r.observe(key, status(holdfastv1alpha1.WorkloadBudgeted, holdfastv1alpha1.WorkloadRecovering), policy.NodeHealth{}, t0.Add(40*time.Second))
	if got := testutil.ToFloat64(r.seconds.WithLabelValues("shop", "defaults", holdfastv1alpha1.KindDeployment, "single")); got != 40 {
		t.Errorf("single recovered in %v s, want 40", got)
	}
	if n := testutil.CollectAndCount(r.seconds); n != 1 {
		t.Errorf("%d series, want only the recovered workload's", n)
	}
	r.observe(key, status(holdfastv1alpha1.WorkloadBudgeted, holdfastv1alpha1.WorkloadBudgeted), policy.NodeHealth{}, t0.Add(52*time.Second))
	if got := testutil.ToFloat64(r.seconds.WithLabelValues("shop", "defaults", holdfastv1alpha1.KindDeployment, "web")); got != 52 {
		t.Errorf("web recovered in %v s, want 52", got)
	}
	r.forget(key)
	if n := testutil.CollectAndCount(r.seconds); n != 0 {
		t.Errorf("%d series after the policy went, want none", n)
	}
}
