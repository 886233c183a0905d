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
// first reconcile that finds as many of its pods Ready elsewhere as it wants, its surge
// set's counted; it is measured once per failure, and not for a workload still short.
func TestRecoverySeconds(t *testing.T) {
	r, err := newRecoveries(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "shop", Name: "defaults"}
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	lost := policy.NodeHealth{Suspects: map[string]policy.Suspect{"n1": {Renewed: t0}}}
	recovering := holdfastv1alpha1.DisruptionPolicyStatus{LostNodes: []string{"n1"}, Workloads: []holdfastv1alpha1.WorkloadStatus{
		{Kind: holdfastv1alpha1.KindDeployment, Name: "web", State: holdfastv1alpha1.WorkloadRecovering},
	}}
	// web wants 2: one pod on the lost node, one elsewhere, and the surge's extra pod.
	observed := func(at time.Duration, extraReady bool) policy.Observed {
		return policy.Observed{Now: t0.Add(at), Health: lost,
			Workloads: []policy.Workload{{Kind: holdfastv1alpha1.KindDeployment, Name: "web", Replicas: 2,
				Surge: &policy.SurgeSet{Replicas: 1, Pods: []policy.Pod{{Name: "web-x", Node: "n3", Ready: extraReady, Surge: true}}}}},
			Pods: map[string][]policy.Pod{"Deployment/web": {{Name: "web-a", Node: "n1", Ready: true}, {Name: "web-b", Node: "n2", Ready: true}}},
		}
	}
	web := r.seconds.WithLabelValues("shop", "defaults", holdfastv1alpha1.KindDeployment, "web")
	r.observe(key, recovering, observed(31*time.Second, false))
	if n := testutil.CollectAndCount(r.histogram); n != 0 {
		t.Errorf("measured while web is short of a Ready pod: %d series", n)
	}
	r.observe(key, recovering, observed(37*time.Second, true))
	r.observe(key, recovering, observed(45*time.Second, true))
	if got := testutil.ToFloat64(web); got != 37 {
		t.Errorf("web at full strength after %v s, want 37, measured once", got)
	}
	r.forget(key)
	if n := testutil.CollectAndCount(r.seconds); n != 0 {
		t.Errorf("%d series after the policy went, want none", n)
	}
}
