package policy

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// Two policies select one single replica under Surge while its node is drained. Each
// decides alone, from the same view, at every step of the surge: only the older one
// (WinnerOf) may start, hold or end the surge set; the younger writes no surge change
// and no budget, whoever's set it sees, so neither undoes what the other did; a set the
// younger made is adopted by the older at its size.
func TestTwoPoliciesOneSurge(t *testing.T) {
	surge := func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge }
	old, young := policy("old", time.Hour, surge), policy("young", time.Minute, surge)
	single := workload(holdfastv1alpha1.KindDeployment, "single", 1)
	cordoned := map[string]*corev1.Node{"n1": node("n1", true), "n2": node("n2", false)}
	onN1 := map[string][]Pod{"Deployment/single": {{Name: "single-a", Node: "n1", Ready: true}}}
	setOf := func(owner string, pods ...Pod) Workload {
		w := surged(single, 1, pods...)
		w.Surge.Policy = owner
		return w
	}
	extra := Pod{Name: "single-s", Node: "n2", Ready: true, Surge: true}
	steps := []struct {
		name string
		work Workload
		pods map[string][]Pod
		// winner is the surge change the older policy makes; nil for none.
		winner *Surge
	}{
		{name: "the drain starts", work: single, pods: onN1, winner: ptrTo(surgeTo("single", 1))},
		{name: "the extra pod is Ready, the old one still on the node", work: setOf("old", extra), pods: onN1},
		// The older policy adopts it at the size it has: its write only relabels the set.
		{name: "a set the younger policy made before the older one existed", work: setOf("young", extra), pods: onN1, winner: ptrTo(surgeTo("single", 1))},
		{name: "the Deployment's own pod is Ready elsewhere", work: setOf("old", extra),
			pods: map[string][]Pod{"Deployment/single": {{Name: "single-c", Node: "n2", Ready: true}}}, winner: ptrTo(surgeEnd("single"))},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			for _, p := range []holdfastv1alpha1.DisruptionPolicy{old, young} {
				d := Decide(Observed{
					Policy: &p, Policies: []holdfastv1alpha1.DisruptionPolicy{old, young},
					Workloads: []Workload{step.work}, Pods: step.pods, Nodes: cordoned, Now: now,
				})
				got := resultOf(d)
				if p.Name == "young" {
					if len(got.Surges) > 0 || len(got.Apply) > 0 || len(got.Delete) > 0 {
						t.Errorf("the younger policy wrote surges %+v, budgets %d, deletions %v: it must leave the workload to the older", got.Surges, len(got.Apply), got.Delete)
					}
					if len(got.Workloads) != 1 || got.Workloads[0].State != holdfastv1alpha1.WorkloadOverridden {
						t.Errorf("the younger policy's status %+v, want Overridden", got.Workloads)
					}
					continue
				}
				switch {
				case step.winner == nil && len(got.Surges) > 0:
					t.Errorf("the older policy changed the surge: %+v", got.Surges)
				case step.winner != nil && (len(got.Surges) != 1 || got.Surges[0] != *step.winner):
					t.Errorf("the older policy's surge changes %+v, want %+v", got.Surges, *step.winner)
				}
			}
		})
	}
}

func ptrTo(s Surge) *Surge { return &s }
