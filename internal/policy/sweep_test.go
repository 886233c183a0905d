package policy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// Issue 17 item 4: a policy deleted while the operator was down leaves budgets that the
// sweep finds without it (its surge sets go with it, by garbage collection).
func TestSweepNamespace(t *testing.T) {
	web := ready(workload(holdfastv1alpha1.KindDeployment, "web", 3), 3)
	single := workload(holdfastv1alpha1.KindDeployment, "single", 2)
	other := workload(holdfastv1alpha1.KindDeployment, "other", 3)
	other.Labels = map[string]string{"tier": "db"}
	kept := policy("kept", time.Hour, nil)
	deleting := policy("deleting", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
		s.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"tier": "db"}}
	})
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	held := *budget("gone", other, maxUnavailable(intstr.FromInt32(0)), nil)
	// Issue 30 item 10: a user's budgets with holdfast's labels copied, but not made by
	// holdfast (no owner, or not the owner its name is made from).
	copied := userBudget("copied", map[string]string{"app": "x"})
	copied.Labels = held.Labels
	unowned := *held.DeepCopy()
	unowned.Name, unowned.OwnerReferences = "mine-too", nil
	misnamed := *held.DeepCopy()
	misnamed.Name = "mine-three"
	unlabelled := *budget("gone", web, maxUnavailable(intstr.FromInt32(1)), nil)
	delete(unlabelled.Labels, managedByLabel)
	tests := map[string]struct {
		policies []holdfastv1alpha1.DisruptionPolicy
		budgets  []policyv1.PodDisruptionBudget
		delete   []string
		marked   Marks
		unmarked []PodAnnotation
	}{
		"a gone policy's budget is deleted; a live one's, a deleting one's and a user's stay": {
			policies: []holdfastv1alpha1.DisruptionPolicy{kept, deleting},
			budgets: []policyv1.PodDisruptionBudget{
				held, *budget("kept", web, maxUnavailable(intstr.FromInt32(1)), nil),
				*budget("deleting", other, maxUnavailable(intstr.FromInt32(1)), nil), userBudget("mine", map[string]string{"app": "x"}),
			},
			delete: []string{"holdfast-deploy-other"},
		},
		"no policy left: every managed budget goes": {
			budgets: []policyv1.PodDisruptionBudget{held, *budget("gone", single, minAvailable(intstr.FromInt32(1)), nil)},
			delete:  []string{"holdfast-deploy-other", "holdfast-deploy-single"},
		},
		"a budget with a gone policy's label is deleted only with holdfast's managed-by label and its workload as owner": {
			budgets: []policyv1.PodDisruptionBudget{held, copied, unowned, misnamed, unlabelled},
			delete:  []string{"holdfast-deploy-other"},
		},
		// Issue 30 item 7: Protect's do-not-disrupt goes with its policy.
		"a gone policy's do-not-disrupt is removed; a live one's stays": {
			policies: []holdfastv1alpha1.DisruptionPolicy{kept, deleting},
			marked:   Marks{DoNotDisrupt: {"a-0": "gone", "b-0": "kept", "c-0": "deleting", "d-0": "gone"}},
			unmarked: []PodAnnotation{{Pod: "a-0", Mark: DoNotDisrupt}, {Pod: "d-0", Mark: DoNotDisrupt}},
		},
		"a gone policy's safe-to-evict is removed; a live one's stays": {
			policies: []holdfastv1alpha1.DisruptionPolicy{kept},
			marked:   Marks{SafeToEvict: {"a-0": "gone", "b-0": "kept"}, DoNotDisrupt: {"c-0": "gone"}},
			unmarked: []PodAnnotation{{Pod: "c-0", Mark: DoNotDisrupt}, {Pod: "a-0", Mark: SafeToEvict}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var before []policyv1.PodDisruptionBudget
			for i := range tc.budgets {
				before = append(before, *tc.budgets[i].DeepCopy())
			}
			got := SweepNamespace(tc.policies, tc.budgets, tc.marked)
			var deleted []string
			for _, b := range got.Delete {
				deleted = append(deleted, b.Name)
			}
			if diff := cmp.Diff(tc.delete, deleted, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("deleted (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.unmarked, got.PodAnnotations, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("do-not-disrupt removed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.budgets, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("SweepNamespace modified the budgets:\n%s", diff)
			}
		})
	}
}
