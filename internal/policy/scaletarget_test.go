package policy

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

var databases = holdfastv1alpha1.ScaleTarget{APIVersion: "example.com/v1", Kind: "Database"}

// database builds a selected Database whose scale reports app=name as its selector.
func database(name string, replicas int32) Workload {
	w := workload(databases.Kind, name, replicas)
	w.APIVersion = databases.APIVersion
	w.TemplateLabels = w.Selector.MatchLabels
	return w
}

// selectingDatabases adds the Database scale target to a policy.
func selectingDatabases(mods ...func(*holdfastv1alpha1.DisruptionPolicySpec)) func(*holdfastv1alpha1.DisruptionPolicySpec) {
	return func(s *holdfastv1alpha1.DisruptionPolicySpec) {
		s.ScaleTargets = []holdfastv1alpha1.ScaleTarget{databases}
		for _, mod := range mods {
			mod(s)
		}
	}
}

// A custom workload is one more Workload: the same decisions as a Deployment's, with
// the policy requeued every scaleTargetPoll since custom kinds are not watched.
func TestDecideScaleTargets(t *testing.T) {
	orders := database("orders", 3)
	single := database("single", 1)
	noSelector := database("bare", 3)
	noSelector.Selector, noSelector.TemplateLabels = nil, nil
	web := workload(holdfastv1alpha1.KindDeployment, "web", 3)
	minAvail := func(v string) func(*holdfastv1alpha1.DisruptionPolicySpec) {
		return func(s *holdfastv1alpha1.DisruptionPolicySpec) {
			s.MaxUnavailable, s.MinAvailable = nil, ptr.To(intstr.FromString(v))
		}
	}
	single1 := func(s holdfastv1alpha1.SingleReplicaStrategy) func(*holdfastv1alpha1.DisruptionPolicySpec) {
		return func(spec *holdfastv1alpha1.DisruptionPolicySpec) { spec.SingleReplica = s }
	}
	kept := *budget("p", orders, maxUnavailable(intstr.FromInt32(1)), nil)
	gone := *budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil)

	runDecide(t, map[string]decideCase{
		"custom workload gets the policy's budget as is, owned by it": {
			policy: policy("p", time.Hour, selectingDatabases()),
			work:   []Workload{orders},
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{budget("p", orders, maxUnavailable(intstr.FromInt32(1)), nil)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Database", Name: "orders", Replicas: 3, State: holdfastv1alpha1.WorkloadBudgeted,
					Budget: "holdfast-database-orders", Message: "1 of 3 pods may be disrupted at once"}},
				RequeueAfter: scaleTargetPoll,
			},
		},
		"kind not among the scale targets: not selected": {
			policy: policy("p", time.Hour, nil),
			work:   []Workload{orders},
		},
		"minAvailable percentage written as is": {
			policy: policy("p", time.Hour, selectingDatabases(minAvail("50%"))),
			work:   []Workload{database("orders", 4)},
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{budget("p", database("orders", 4), minAvailable(intstr.FromString("50%")), nil)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Database", Name: "orders", Replicas: 4, State: holdfastv1alpha1.WorkloadBudgeted,
					Budget: "holdfast-database-orders", Message: "2 of 4 pods may be disrupted at once"}},
				RequeueAfter: scaleTargetPoll,
			},
		},
		"a budget that allows nothing is not created": {
			policy: policy("p", time.Hour, selectingDatabases(minAvail("100%"))),
			work:   []Workload{orders},
			want: result{
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Database", Name: "orders", Replicas: 3, State: holdfastv1alpha1.WorkloadNoDisruption,
					Message: "the policy's budget keeps 3 of 3 pods available, which allows no disruption: no budget is created, since it would block every drain; lower minAvailable or add replicas"}},
				RequeueAfter: scaleTargetPoll,
			},
		},
		"scale without a selector: reported, not budgeted": {
			policy: policy("p", time.Hour, selectingDatabases()),
			work:   []Workload{noSelector},
			want: result{
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Database", Name: "bare", Replicas: 3, State: holdfastv1alpha1.WorkloadSkipped,
					Message: "its scale subresource reports no usable status.selector, so holdfast cannot tell its pods: no budget; have its controller set the selector"}},
				RequeueAfter: scaleTargetPoll,
			},
			wantCond: map[string]string{holdfastv1alpha1.ConditionBudgetsReady: holdfastv1alpha1.ReasonSomeWithoutBudget},
		},
		"a user's budget over its pods: conflict, holdfast's budget goes": {
			policy:  policy("p", time.Hour, selectingDatabases()),
			work:    []Workload{orders},
			budgets: []policyv1.PodDisruptionBudget{userBudget("by-hand", map[string]string{"app": "orders"}), kept},
			want: result{
				Delete: []string{"holdfast-database-orders"},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Database", Name: "orders", Replicas: 3, State: holdfastv1alpha1.WorkloadConflict,
					Message: "PodDisruptionBudget by-hand, which holdfast does not manage, already covers its pods: two budgets over one pod make every eviction fail, so holdfast adds none; delete by-hand or unselect the workload"}},
				RequeueAfter: scaleTargetPoll,
			},
			wantCond: map[string]string{holdfastv1alpha1.ConditionConflicted: holdfastv1alpha1.ReasonConflictingBudgets},
		},
		"an older policy selecting it wins": {
			policy: policy("p", time.Minute, selectingDatabases()),
			others: []holdfastv1alpha1.DisruptionPolicy{policy("old", time.Hour, selectingDatabases())},
			work:   []Workload{orders},
			want: result{
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Database", Name: "orders", Replicas: 3, State: holdfastv1alpha1.WorkloadOverridden,
					Message: "DisruptionPolicy old is older and also selects it: that policy manages its budget"}},
				RequeueAfter: scaleTargetPoll,
			},
		},
		"single replica under Skip": {
			policy: policy("p", time.Hour, selectingDatabases()),
			work:   []Workload{ready(single, 1)},
			want: result{
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Database", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadSkipped,
					Message: "single replica: any budget would block every drain, so it gets none (singleReplica: Skip); add replicas, or choose Surge or Protect"}},
				RequeueAfter: scaleTargetPoll,
			},
		},
		"single replica under Surge: holdfast does not scale custom kinds": {
			policy: policy("p", time.Hour, selectingDatabases(single1(holdfastv1alpha1.SingleReplicaSurge))),
			work:   []Workload{ready(single, 1)},
			pods:   map[string][]Pod{"Database/single": {{Name: "single-0", Node: "n1", Ready: true}}},
			nodes:  map[string]*corev1.Node{"n1": node("n1", true)},
			want: result{
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Database", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadSkipped,
					Message: "single-replica Database under Surge: holdfast surges only Deployments, so it gets no budget and a drain restarts its pod on another node; choose Protect to hold the drain instead"}},
				RequeueAfter: scaleTargetPoll,
			},
		},
		"single replica under Protect: minAvailable 1 and the pod annotated": {
			policy: policy("p", time.Hour, selectingDatabases(single1(holdfastv1alpha1.SingleReplicaProtect))),
			work:   []Workload{ready(single, 1)},
			pods:   map[string][]Pod{"Database/single": {{Name: "single-0", Node: "n2", Ready: true}}},
			nodes:  map[string]*corev1.Node{"n2": node("n2", false)},
			want: result{
				Apply:          []*policyv1.PodDisruptionBudget{opened(budget("p", single, minAvailable(intstr.FromInt32(1)), nil), holdfastv1alpha1.SingleReplicaProtect, 0)},
				PodAnnotations: []PodAnnotation{{Pod: "single-0", Mark: DoNotDisrupt, Set: true}},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Database", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadProtected,
					Budget: "holdfast-database-single", Message: "single replica under Protect: minAvailable 1 and karpenter.sh/do-not-disrupt on its pod"}},
				RequeueAfter: scaleTargetPoll,
			},
		},
		"unreadable kind: its budgets kept, others' still deleted, reported": {
			policy:     policy("p", time.Hour, selectingDatabases()),
			budgets:    []policyv1.PodDisruptionBudget{kept, gone},
			unreadable: []Unreadable{{Target: databases, Message: "the operator may not list databases.example.com"}},
			want:       result{Delete: []string{"holdfast-deploy-web"}, RequeueAfter: scaleTargetPoll},
			wantCond:   map[string]string{holdfastv1alpha1.ConditionBudgetsReady: holdfastv1alpha1.ReasonScaleTargetUnreadable},
		},
	})
}

func TestNeedsPodsOfScaleTargets(t *testing.T) {
	p := policy("p", time.Hour, selectingDatabases())
	noSelector := database("bare", 3)
	noSelector.Selector = nil
	// The scale has no Ready count: the pods are always read, but never without a selector,
	// which would list the whole namespace.
	for w, want := range map[*Workload]bool{ptr.To(ready(database("orders", 3), 3)): true, &noSelector: false} {
		if got := NeedsPods(&Observed{Policy: &p}, w); got != want {
			t.Errorf("NeedsPods(%s) = %t, want %t", w.Name, got, want)
		}
	}
}

func TestBudgetNameOfCustomKinds(t *testing.T) {
	long := strings.Repeat("a", 70)
	a, b := BudgetName("Database", long+"-one"), BudgetName("Database", long+"-two")
	if len(a) > 63 || len(b) > 63 || a == b || !strings.HasPrefix(a, "holdfast-database-aaa") {
		t.Errorf("long names %q and %q: want distinct, at most 63 characters, holdfast-database- first", a, b)
	}
	if got := BudgetName("Database", "orders"); got != "holdfast-database-orders" {
		t.Errorf("BudgetName = %q, want holdfast-database-orders", got)
	}
	// The apps kinds' names do not change on upgrade.
	if got := BudgetName(holdfastv1alpha1.KindDeployment, long); got != "holdfast-deploy-"+long {
		t.Errorf("a long Deployment's budget was renamed to %q", got)
	}
}
