//go:build e2e

package drain_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/cli"
	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// Issue 33: holdfast drain reads the DisruptionPolicies plan drain reads. A single
// replica under singleReplica: Surge is not blocked by its budget: plan drain and the dry
// run, run as the drainer role, put its node in a wave, and the drain takes it there
// while the operator surges the replica, which is never down.
func TestDrainSurgesTheSingleReplicaAsPlanned(t *testing.T) {
	f := framework.New(t)
	hc := f.HoldfastClient()
	f.InstallCRDs(hc, &holdfastv1alpha1.DisruptionPolicyList{}, &holdfastv1alpha1.NodeCompanionList{})
	f.StartOperator()
	p := &holdfastv1alpha1.DisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: "defaults"},
		Spec:       holdfastv1alpha1.DisruptionPolicySpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), SingleReplica: holdfastv1alpha1.SingleReplicaSurge},
	}
	if err := hc.Create(f.Ctx, p); err != nil {
		t.Fatalf("creating DisruptionPolicy: %v", err)
	}
	d := f.Deployment("single", 1)
	f.Create(d)
	f.WaitReady(d)
	f.WaitBudget(policy.BudgetName(holdfastv1alpha1.KindDeployment, "single"), 0)
	node := podsOf(t, f, d)[0].Spec.NodeName
	other := f.Nodes[0]
	if other == node {
		other = f.Nodes[1]
	}
	nodes := []string{node, other}
	uncordonAtEnd(f, nodes...)

	// Both put the replica's node in a wave. Other tests' namespaces may still be going
	// away meanwhile, so the waves themselves are compared by the unit test
	// (TestDrainFollowsPlanDrain), on clusters that hold still.
	planned := holdfast(f.Ctx, f, append([]string{"plan", "drain", "--max-concurrent", "1", "-o", "json"}, nodes...)...)
	planned.wait(t, time.Minute)
	var r struct {
		Waves   [][]string     `json:"waves"`
		Blocked []plan.Blocker `json:"blocked"`
	}
	if err := json.Unmarshal([]byte(planned.out.String()), &r); err != nil || planned.code != cli.ExitOK || !slices.Contains(slices.Concat(r.Waves...), node) {
		t.Fatalf("plan drain exited %d (%v) with waves %v, blocked %+v; want 0 and %s in a wave:\n%s", planned.code, err, r.Waves, r.Blocked, node, planned.output())
	}

	kubeconfig, _ := drainerKubeconfig(t, f)
	args := append([]string{"drain", "--max-concurrent", "1", "--slot-namespace", f.Namespace, "--timeout", "2m"}, nodes...)
	dry := holdfastAs(f.Ctx, kubeconfig, append(args, "--dry-run")...)
	dry.wait(t, time.Minute)
	t.Logf("dry run, exit %d:\n%s", dry.code, dry.output())
	if dry.code != cli.ExitOK || strings.Contains(dry.out.String(), "Cannot drain "+node) {
		t.Errorf("the dry run exited %d; want 0 and %s in a wave, as plan drain has it", dry.code, node)
	}
	if !hasRow(dry.out.String(), f.Namespace+"/"+podsOf(t, f, d)[0].Name, "surge") {
		t.Errorf("the dry run does not say the single replica is surged")
	}

	watch := f.WatchReady(framework.SelectorOf(d), 200*time.Millisecond)
	run := holdfastAs(f.Ctx, kubeconfig, args...)
	run.wait(t, 3*time.Minute)
	samples, zero, _ := watch.Stop()
	t.Logf("exit %d:\n%s", run.code, run.output())
	if run.code != cli.ExitOK {
		t.Errorf("exit code %d, want 0", run.code)
	}
	if zero != 0 {
		t.Errorf("%d samples (of %d) saw the single replica with no Ready pod", zero, samples)
	}
	assertSlotsFree(t, f)
}
