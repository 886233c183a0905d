package policy

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

const ns = "shop"

// policy builds a policy over tier=web with maxUnavailable 1, created at now minus age.
func policy(name string, age time.Duration, mod func(*holdfastv1alpha1.DisruptionPolicySpec)) holdfastv1alpha1.DisruptionPolicy {
	p := holdfastv1alpha1.DisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Generation: 1, CreationTimestamp: metav1.NewTime(now.Add(-age))},
		Spec: holdfastv1alpha1.DisruptionPolicySpec{
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}},
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			SingleReplica:  holdfastv1alpha1.SingleReplicaSkip,
		},
	}
	if mod != nil {
		mod(&p.Spec)
	}
	return p
}

// workload builds a selected workload whose pods carry app=name.
func workload(kind, name string, replicas int32) Workload {
	return Workload{
		Kind: kind, Name: name, UID: types.UID("uid-" + name), Replicas: replicas,
		Labels:         map[string]string{"tier": "web"},
		Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		TemplateLabels: map[string]string{"app": name, "version": "1"},
	}
}

// surged gives w the surge set of policy p running extra pods, those of pods.
func surged(w Workload, extra int32, pods ...Pod) Workload {
	w.Surge = &SurgeSet{Name: SurgeSetName(w.Name), Policy: "p", Deployment: w.Name, DeploymentUID: w.UID, Replicas: extra, Pods: pods,
		Since: now.Add(-surgeAge)}
	return w
}

// surgeAge is how long ago the surge sets of surged were made: after the pods of a
// minute, before those of seconds.
const surgeAge = 30 * time.Second

// surgePod marks p a surge set's.
func surgePod(p Pod) Pod {
	p.Surge = true
	return p
}

// surgeTo is the change that sets the surge set of the Deployment name to extra pods.
func surgeTo(name string, extra int32) Surge {
	return Surge{Name: SurgeSetName(name), Deployment: name, DeploymentUID: types.UID("uid-" + name), Replicas: extra}
}

// surgeEnd is the change that removes the surge set of the Deployment name.
func surgeEnd(name string) Surge {
	s := surgeTo(name, 0)
	s.Delete = true
	return s
}

func userBudget(name string, sel map[string]string) policyv1.PodDisruptionBudget {
	return policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}, MinAvailable: ptr.To(intstr.FromInt32(1))},
	}
}

func node(name string, cordoned bool, taints ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Unschedulable: cordoned}}
	for _, t := range taints {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: t, Effect: corev1.TaintEffectNoSchedule})
	}
	return n
}

// budget is the managed budget Decide builds for w under policy p.
func budget(p string, w Workload, spec policyv1.PodDisruptionBudgetSpec, annotations map[string]string) *policyv1.PodDisruptionBudget {
	spec.Selector = w.Selector
	spec.UnhealthyPodEvictionPolicy = ptr.To(policyv1.AlwaysAllow)
	apiVersion := "apps/v1"
	if w.APIVersion != "" {
		apiVersion = w.APIVersion
	}
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{
			Name: BudgetName(w.Kind, w.Name), Namespace: ns, Annotations: annotations,
			Labels:          map[string]string{holdfastv1alpha1.PolicyLabel: p, managedByLabel: managedByValue},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: w.Kind, Name: w.Name, UID: w.UID}},
		},
		Spec: spec,
	}
}

// opened is b with the single-replica strategy Decide records on it (availability.Opening),
// escape being Protect's escapeAfter, 0 for none.
func opened(b *policyv1.PodDisruptionBudget, strategy holdfastv1alpha1.SingleReplicaStrategy, escape time.Duration) *policyv1.PodDisruptionBudget {
	o := availability.Opening{Strategy: strategy}
	if escape > 0 {
		o.EscapeAfter = &escape
	}
	b = b.DeepCopy()
	o.Record(b)
	return b
}

func maxUnavailable(v intstr.IntOrString) policyv1.PodDisruptionBudgetSpec {
	return policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &v}
}

func minAvailable(v intstr.IntOrString) policyv1.PodDisruptionBudgetSpec {
	return policyv1.PodDisruptionBudgetSpec{MinAvailable: &v}
}

// result is the part of a Decision a case states; Status is checked through Workloads.
type result struct {
	Apply          []*policyv1.PodDisruptionBudget
	Delete         []string
	Surges         []Surge
	PodAnnotations []PodAnnotation
	Quarantine     []string
	HandOffTaints  []string
	Workloads      []holdfastv1alpha1.WorkloadStatus
	RequeueAfter   time.Duration
}

func TestDecide(t *testing.T) {
	web := workload(holdfastv1alpha1.KindDeployment, "web", 3)
	single := workload(holdfastv1alpha1.KindDeployment, "single", 1)
	agent := workload(holdfastv1alpha1.KindDaemonSet, "agent", 5)
	db := workload(holdfastv1alpha1.KindStatefulSet, "db", 1)
	surge := func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge }
	protect := func(escape time.Duration) func(*holdfastv1alpha1.DisruptionPolicySpec) {
		return func(s *holdfastv1alpha1.DisruptionPolicySpec) {
			s.SingleReplica = holdfastv1alpha1.SingleReplicaProtect
			if escape > 0 {
				s.EscapeAfter = &metav1.Duration{Duration: escape}
			}
		}
	}
	minAvail := func(v intstr.IntOrString) func(*holdfastv1alpha1.DisruptionPolicySpec) {
		return func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.MaxUnavailable, s.MinAvailable = nil, &v }
	}
	cordoned := map[string]*corev1.Node{"n1": node("n1", true), "n2": node("n2", false)}
	onN1 := map[string][]Pod{"Deployment/single": {{Name: "single-a", Node: "n1", Ready: true}}}
	singleBudget := []*policyv1.PodDisruptionBudget{opened(budget("p", single, minAvailable(intstr.FromInt32(1)), nil), holdfastv1alpha1.SingleReplicaSurge, 0)}
	surgeReady := []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadBudgeted, Budget: "holdfast-deploy-single",
		Message: "single replica under Surge: a drain of its node first starts an extra pod elsewhere, then lets the eviction through once that pod is Ready"}}
	surgedForN1 := []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadSurging, Budget: "holdfast-deploy-single",
		Message: "1 extra pod beside the 1 replica for the drain of node n1: 0 of them Ready elsewhere"}}

	tests := map[string]decideCase{
		"deployment gets the policy's budget as is": {
			policy: policy("p", time.Hour, nil),
			work:   []Workload{web, {Kind: holdfastv1alpha1.KindDeployment, Name: "other", Labels: map[string]string{"tier": "db"}, Replicas: 3}},
			want: result{
				Apply:     []*policyv1.PodDisruptionBudget{budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadBudgeted, Budget: "holdfast-deploy-web", Message: "1 of 3 pods may be disrupted at once"}},
			},
			wantCond: map[string]string{holdfastv1alpha1.ConditionBudgetsReady: holdfastv1alpha1.ReasonAllBudgetsManaged, holdfastv1alpha1.ConditionConflicted: holdfastv1alpha1.ReasonNoConflicts},
		},
		"kinds not listed are not selected": {
			policy: policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
				s.Kinds = []holdfastv1alpha1.WorkloadKind{holdfastv1alpha1.KindStatefulSet}
			}),
			work:     []Workload{web},
			wantCond: map[string]string{holdfastv1alpha1.ConditionBudgetsReady: holdfastv1alpha1.ReasonNoWorkloads},
		},
		"percentage minAvailable kept as a percentage": {
			policy: policy("p", time.Hour, minAvail(intstr.FromString("60%"))),
			work:   []Workload{web},
			want: result{
				Apply:     []*policyv1.PodDisruptionBudget{budget("p", web, minAvailable(intstr.FromString("60%")), nil)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadBudgeted, Budget: "holdfast-deploy-web", Message: "1 of 3 pods may be disrupted at once"}},
			},
		},
		"a budget that allows no disruption is not created": {
			policy: policy("p", time.Hour, minAvail(intstr.FromString("100%"))),
			work:   []Workload{web},
			want: result{Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadNoDisruption,
				Message: "the policy's budget keeps 3 of 3 pods available, which allows no disruption: no budget is created, since it would block every drain; lower minAvailable or add replicas"}}},
			wantCond: map[string]string{holdfastv1alpha1.ConditionBudgetsReady: holdfastv1alpha1.ReasonSomeWithoutBudget},
		},
		"daemonset: maxUnavailable becomes an integer minAvailable": {
			policy: policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.MaxUnavailable = ptr.To(intstr.FromString("20%")) }),
			work:   []Workload{agent},
			want: result{
				Apply:     []*policyv1.PodDisruptionBudget{budget("p", agent, minAvailable(intstr.FromInt32(4)), nil)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "DaemonSet", Name: "agent", Replicas: 5, State: holdfastv1alpha1.WorkloadBudgeted, Budget: "holdfast-ds-agent", Message: "1 of 5 pods may be disrupted at once"}},
			},
		},
		"daemonset: percentage minAvailable rounds up like the disruption controller": {
			policy: policy("p", time.Hour, minAvail(intstr.FromString("50%"))),
			work:   []Workload{agent},
			want: result{
				Apply:     []*policyv1.PodDisruptionBudget{budget("p", agent, minAvailable(intstr.FromInt32(3)), nil)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "DaemonSet", Name: "agent", Replicas: 5, State: holdfastv1alpha1.WorkloadBudgeted, Budget: "holdfast-ds-agent", Message: "2 of 5 pods may be disrupted at once"}},
			},
		},
		"user budget over the pods: conflict, no second budget, ours deleted": {
			policy:  policy("p", time.Hour, nil),
			work:    []Workload{web},
			budgets: []policyv1.PodDisruptionBudget{userBudget("web-by-hand", map[string]string{"version": "1"}), *budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil)},
			want: result{
				Delete: []string{"holdfast-deploy-web"},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadConflict,
					Message: "PodDisruptionBudget web-by-hand, which holdfast does not manage, already covers its pods: two budgets over one pod make every eviction fail, so holdfast adds none; delete web-by-hand or unselect the workload"}},
			},
			wantCond: map[string]string{holdfastv1alpha1.ConditionConflicted: holdfastv1alpha1.ReasonConflictingBudgets, holdfastv1alpha1.ConditionBudgetsReady: holdfastv1alpha1.ReasonSomeWithoutBudget},
		},
		"user budget matching by expression is a conflict too": {
			policy: policy("p", time.Hour, nil),
			work:   []Workload{web},
			budgets: []policyv1.PodDisruptionBudget{{
				ObjectMeta: metav1.ObjectMeta{Name: "by-expr", Namespace: ns},
				Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}},
				}}},
			}},
			want: result{Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadConflict,
				Message: "PodDisruptionBudget by-expr, which holdfast does not manage, already covers its pods: two budgets over one pod make every eviction fail, so holdfast adds none; delete by-expr or unselect the workload"}}},
		},
		// policy/v1: the Eviction API and the disruption controller let an empty selector
		// cover every pod of the namespace, so a second budget would make each eviction a 500.
		"user budget with an empty selector covers every pod: conflict": {
			policy:  policy("p", time.Hour, nil),
			work:    []Workload{web},
			budgets: []policyv1.PodDisruptionBudget{userBudget("everything", nil)},
			want: result{Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadConflict,
				Message: "PodDisruptionBudget everything, which holdfast does not manage, already covers its pods: two budgets over one pod make every eviction fail, so holdfast adds none; delete everything or unselect the workload"}}},
			wantCond: map[string]string{holdfastv1alpha1.ConditionConflicted: holdfastv1alpha1.ReasonConflictingBudgets, holdfastv1alpha1.ConditionBudgetsReady: holdfastv1alpha1.ReasonSomeWithoutBudget},
		},
		"user budget over other pods, another namespace's, or with no selector, is no conflict": {
			policy: policy("p", time.Hour, nil),
			work:   []Workload{web},
			budgets: []policyv1.PodDisruptionBudget{userBudget("api", map[string]string{"app": "api"}), func() policyv1.PodDisruptionBudget {
				b := userBudget("elsewhere", nil)
				b.Namespace = "other"
				return b
			}(), func() policyv1.PodDisruptionBudget {
				b := userBudget("nil-selector", nil)
				b.Spec.Selector = nil
				return b
			}()},
			want: result{
				Apply:     []*policyv1.PodDisruptionBudget{budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadBudgeted, Budget: "holdfast-deploy-web", Message: "1 of 3 pods may be disrupted at once"}},
			},
		},
		"older policy wins; the younger reports it and leaves the budget alone": {
			policy:  policy("young", time.Minute, nil),
			others:  []holdfastv1alpha1.DisruptionPolicy{policy("old", time.Hour, nil)},
			work:    []Workload{web},
			budgets: []policyv1.PodDisruptionBudget{*budget("old", web, maxUnavailable(intstr.FromInt32(1)), nil)},
			want: result{Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadOverridden,
				Message: "DisruptionPolicy old is older and also selects it: that policy manages its budget"}}},
			wantCond: map[string]string{holdfastv1alpha1.ConditionConflicted: holdfastv1alpha1.ReasonOverriddenByPolicy, holdfastv1alpha1.ConditionBudgetsReady: holdfastv1alpha1.ReasonAllBudgetsManaged},
		},
		"same age: the first name wins and takes over the budget": {
			policy:  policy("a", time.Hour, nil),
			others:  []holdfastv1alpha1.DisruptionPolicy{policy("b", time.Hour, nil)},
			work:    []Workload{web},
			budgets: []policyv1.PodDisruptionBudget{*budget("b", web, maxUnavailable(intstr.FromInt32(1)), nil)},
			want: result{
				Apply:     []*policyv1.PodDisruptionBudget{budget("a", web, maxUnavailable(intstr.FromInt32(1)), nil)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadBudgeted, Budget: "holdfast-deploy-web", Message: "1 of 3 pods may be disrupted at once"}},
			},
		},
		"budget of a workload no longer selected is deleted": {
			policy:  policy("p", time.Hour, nil),
			budgets: []policyv1.PodDisruptionBudget{*budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil), *budget("other", agent, maxUnavailable(intstr.FromInt32(1)), nil)},
			want:    result{Delete: []string{"holdfast-deploy-web"}},
		},
		// Issue 30 item 10: the policy's label alone does not make a budget holdfast's.
		"a user's budget with the policy's labels copied is not deleted": {
			policy: policy("p", time.Hour, nil),
			budgets: func() []policyv1.PodDisruptionBudget {
				copied := userBudget("copied", map[string]string{"app": "x"})
				copied.Labels = map[string]string{holdfastv1alpha1.PolicyLabel: "p", managedByLabel: managedByValue}
				return []policyv1.PodDisruptionBudget{copied}
			}(),
		},
		"single replica under Skip: no budget, a warning": {
			policy: policy("p", time.Hour, nil),
			work:   []Workload{single},
			want: result{Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadSkipped,
				Message: "single replica: any budget would block every drain, so it gets none (singleReplica: Skip); add replicas, or choose Surge or Protect"}}},
			wantCond: map[string]string{holdfastv1alpha1.ConditionBudgetsReady: holdfastv1alpha1.ReasonSomeWithoutBudget},
		},
		"zero replicas: nothing to budget": {
			policy: policy("p", time.Hour, nil),
			work:   []Workload{workload(holdfastv1alpha1.KindDeployment, "idle", 0)},
			want:   result{Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "idle", State: holdfastv1alpha1.WorkloadSkipped, Message: "no replicas: nothing to budget"}}},
		},
		"surge: quiet node, minAvailable 1 and nothing else": {
			policy: policy("p", time.Hour, surge),
			work:   []Workload{single},
			pods:   map[string][]Pod{"Deployment/single": {{Name: "single-a", Node: "n2", Ready: true}}},
			nodes:  cordoned,
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{opened(budget("p", single, minAvailable(intstr.FromInt32(1)), nil), holdfastv1alpha1.SingleReplicaSurge, 0)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadBudgeted, Budget: "holdfast-deploy-single",
					Message: "single replica under Surge: a drain of its node first starts an extra pod elsewhere, then lets the eviction through once that pod is Ready"}},
			},
		},
		"surge: node cordoned, one extra pod": {
			policy: policy("p", time.Hour, surge),
			work:   []Workload{single},
			pods:   onN1,
			nodes:  cordoned,
			want: result{
				Apply:  []*policyv1.PodDisruptionBudget{opened(budget("p", single, minAvailable(intstr.FromInt32(1)), nil), holdfastv1alpha1.SingleReplicaSurge, 0)},
				Surges: []Surge{surgeTo("single", 1)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadSurging, Budget: "holdfast-deploy-single",
					Message: "node n1 is being drained: 1 extra pod added beside the 1 replica; the eviction waits until it is Ready on another node"}},
				RequeueAfter: surgePoll,
			},
		},
		"surge: karpenter's taint starts it too": {
			policy: policy("p", time.Hour, surge),
			work:   []Workload{single},
			pods:   onN1,
			nodes:  map[string]*corev1.Node{"n1": node("n1", false, "karpenter.sh/disrupted")},
			want: result{
				Apply:  []*policyv1.PodDisruptionBudget{opened(budget("p", single, minAvailable(intstr.FromInt32(1)), nil), holdfastv1alpha1.SingleReplicaSurge, 0)},
				Surges: []Surge{surgeTo("single", 1)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadSurging, Budget: "holdfast-deploy-single",
					Message: "node n1 is being drained: 1 extra pod added beside the 1 replica; the eviction waits until it is Ready on another node"}},
				RequeueAfter: surgePoll,
			},
		},
		"surge in progress: old pod still on the drained node, hold": {
			policy: policy("p", time.Hour, surge),
			work:   []Workload{surged(single, 1, Pod{Name: "single-s", Node: "n2", Ready: true, Surge: true})},
			pods:   onN1,
			nodes:  cordoned,
			want:   result{Apply: singleBudget, Workloads: surgedForN1, RequeueAfter: surgePoll},
		},
		"surge in progress: evicted, replacement not Ready yet, hold": {
			policy: policy("p", time.Hour, surge),
			work:   []Workload{surged(single, 1, Pod{Name: "single-s", Node: "n2", Ready: true, Surge: true})},
			pods:   map[string][]Pod{"Deployment/single": {pod("single-c", "n3", false, time.Second)}},
			nodes:  cordoned,
			want: result{
				Apply: singleBudget,
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadSurging, Budget: "holdfast-deploy-single",
					Message: "1 extra pod beside the 1 replica: waiting for 1 of them Ready before removing the extra (0 now)"}},
				RequeueAfter: surgePoll,
			},
		},
		// The eviction seen before the ReplicaSet's replacement: removing the extra pod now
		// would leave none Ready.
		"surge in progress: evicted, replacement not made yet, hold": {
			policy: policy("p", time.Hour, surge),
			work:   []Workload{surged(single, 1, Pod{Name: "single-s", Node: "n2", Ready: true, Surge: true})},
			pods:   map[string][]Pod{},
			nodes:  cordoned,
			want: result{
				Apply: singleBudget,
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadSurging, Budget: "holdfast-deploy-single",
					Message: "1 extra pod beside the 1 replica: waiting for 1 of them Ready before removing the extra (0 now)"}},
				RequeueAfter: surgePoll,
			},
		},
		// However long the replacement takes: the extra pod is the one serving.
		"surge in progress: the replacement slow to start, past the start-up grace, hold": {
			policy: policy("p", time.Hour, surge),
			work: []Workload{func() Workload {
				w := surged(single, 1, Pod{Name: "single-s", Node: "n2", Ready: true, Surge: true})
				w.Surge.Since = now.Add(-2 * startGrace)
				return w
			}()},
			pods:  map[string][]Pod{"Deployment/single": {pod("single-c", "n3", false, startGrace+time.Second)}},
			nodes: cordoned,
			want: result{
				Apply: singleBudget,
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadSurging, Budget: "holdfast-deploy-single",
					Message: "1 extra pod beside the 1 replica: waiting for 1 of them Ready before removing the extra (0 now)"}},
				RequeueAfter: surgePoll,
			},
		},
		"surge done: nothing on the drained node and the Deployment's own pod Ready elsewhere, set removed": {
			policy: policy("p", time.Hour, surge),
			work:   []Workload{surged(single, 1, Pod{Name: "single-s", Node: "n2", Ready: true, Surge: true})},
			pods:   map[string][]Pod{"Deployment/single": {{Name: "single-c", Node: "n3", Ready: true}}},
			nodes:  cordoned,
			want:   result{Apply: singleBudget, Surges: []Surge{surgeEnd("single")}, Workloads: surgeReady},
		},
		// The Deployment's owner (an autoscaler, a GitOps tool) changes its size during a
		// surge: the surge neither sees it as its own nor undoes it.
		"surge: the Deployment scaled meanwhile, the surge goes on at its size": {
			policy: policy("p", time.Hour, surge),
			work:   []Workload{surged(ready(workload(holdfastv1alpha1.KindDeployment, "single", 3), 3), 1, Pod{Name: "single-s", Node: "n2", Ready: true, Surge: true})},
			pods: map[string][]Pod{"Deployment/single": {{Name: "single-a", Node: "n1", Ready: true}, {Name: "single-b", Node: "n3", Ready: true},
				{Name: "single-c", Node: "n3", Ready: true}}},
			nodes: cordoned,
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{budget("p", single, minAvailable(intstr.FromInt32(2)), nil)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "single", Replicas: 3, State: holdfastv1alpha1.WorkloadSurging, Budget: "holdfast-deploy-single",
					Message: "1 extra pod beside the 3 replicas for the drain of node n1: 2 of them Ready elsewhere"}},
				RequeueAfter: surgePoll,
			},
		},
		// The set young made while it won the workload: old, which wins it now, ends the
		// surge, whatever its own strategy.
		"surge is finished by the policy that now wins the workload": {
			policy: policy("old", time.Hour, nil),
			others: []holdfastv1alpha1.DisruptionPolicy{policy("young", time.Minute, surge)},
			work: []Workload{func() Workload {
				w := surged(single, 1)
				w.Surge.Policy = "young"
				return w
			}()},
			pods:  map[string][]Pod{"Deployment/single": {{Name: "single-b", Node: "n2", Ready: true}}},
			nodes: cordoned,
			want: result{
				Surges: []Surge{surgeEnd("single")},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadSkipped,
					Message: "single replica: any budget would block every drain, so it gets none (singleReplica: Skip); add replicas, or choose Surge or Protect"}},
			},
		},
		// Another policy made the set (it won the workload then): this one takes it over,
		// with the same values, so that the set goes with the policy that moves it.
		"surge set of another policy: taken over as it is": {
			policy: policy("p", time.Hour, surge),
			work: []Workload{func() Workload {
				w := surged(single, 1)
				w.Surge.Policy = "gone"
				return w
			}()},
			pods:  onN1,
			nodes: cordoned,
			want:  result{Apply: singleBudget, Surges: []Surge{surgeTo("single", 1)}, Workloads: surgedForN1, RequeueAfter: surgePoll},
		},
		"surge on a StatefulSet: no second identity, no budget": {
			policy: policy("p", time.Hour, surge),
			work:   []Workload{db},
			want: result{Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "StatefulSet", Name: "db", Replicas: 1, State: holdfastv1alpha1.WorkloadSkipped,
				Message: "single-replica StatefulSet under Surge: a second copy of the same identity cannot run, so it gets no budget and a drain restarts its pod on another node"}}},
		},
		"protect: minAvailable 1 and the pod annotated": {
			policy: policy("p", time.Hour, protect(time.Minute)),
			work:   []Workload{db},
			pods:   map[string][]Pod{"StatefulSet/db": {{Name: "db-0", Node: "n2", Ready: true}}},
			nodes:  cordoned,
			want: result{
				Apply:          []*policyv1.PodDisruptionBudget{opened(budget("p", db, minAvailable(intstr.FromInt32(1)), nil), holdfastv1alpha1.SingleReplicaProtect, time.Minute)},
				PodAnnotations: []PodAnnotation{{Pod: "db-0", Mark: DoNotDisrupt, Set: true}},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "StatefulSet", Name: "db", Replicas: 1, State: holdfastv1alpha1.WorkloadProtected, Budget: "holdfast-sts-db",
					Message: "single replica under Protect: minAvailable 1 and karpenter.sh/do-not-disrupt on its pod"}},
			},
		},
		"protect: drain seen, blocked since now, requeued for escapeAfter": {
			policy: policy("p", time.Hour, protect(time.Minute)),
			work:   []Workload{db},
			pods:   map[string][]Pod{"StatefulSet/db": {{Name: "db-0", Node: "n1", Ready: true, DoNotDisrupt: true}}},
			nodes:  cordoned,
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{opened(budget("p", db, minAvailable(intstr.FromInt32(1)), map[string]string{holdfastv1alpha1.BlockedSinceAnnotation: "2026-11-22T12:00:00Z"}), holdfastv1alpha1.SingleReplicaProtect, time.Minute)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "StatefulSet", Name: "db", Replicas: 1, State: holdfastv1alpha1.WorkloadProtected, Budget: "holdfast-sts-db",
					Message: "blocks the drain of node n1 since 2026-11-22T12:00:00Z; lets it through at 2026-11-22T12:01:00Z"}},
				RequeueAfter: time.Minute,
			},
		},
		"protect: blocked for escapeAfter, budget relaxed and annotation removed": {
			policy: policy("p", time.Hour, protect(time.Minute)),
			work:   []Workload{db},
			budgets: []policyv1.PodDisruptionBudget{*budget("p", db, minAvailable(intstr.FromInt32(1)),
				map[string]string{holdfastv1alpha1.BlockedSinceAnnotation: "2026-11-22T11:58:30.5Z"})},
			pods:   map[string][]Pod{"StatefulSet/db": {{Name: "db-0", Node: "n1", Ready: true, DoNotDisrupt: true}}},
			marked: Marks{DoNotDisrupt: {"db-0": "p"}},
			nodes:  cordoned,
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{opened(budget("p", db, maxUnavailable(intstr.FromInt32(1)),
					map[string]string{holdfastv1alpha1.BlockedSinceAnnotation: "2026-11-22T11:58:30.5Z"}), holdfastv1alpha1.SingleReplicaProtect, time.Minute)},
				PodAnnotations: []PodAnnotation{{Pod: "db-0", Mark: DoNotDisrupt}},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "StatefulSet", Name: "db", Replicas: 1, State: holdfastv1alpha1.WorkloadEscaped, Budget: "holdfast-sts-db",
					Message: "the drain of node n1 was blocked for escapeAfter (1m0s): its budget now lets the eviction through"}},
			},
			wantCond: map[string]string{holdfastv1alpha1.ConditionBudgetsReady: holdfastv1alpha1.ReasonSomeWithoutBudget},
		},
		// Issue 30 item 7: the annotation goes with Protect, whatever ends it, but only
		// the policy's own: a user's (unmarked) and another policy's stay.
		"protect's annotation removed once its workload has two replicas, or is not selected": {
			policy: policy("p", time.Hour, protect(time.Minute)),
			work:   []Workload{ready(workload(holdfastv1alpha1.KindStatefulSet, "db", 2), 2)},
			pods: map[string][]Pod{"StatefulSet/db": {
				{Name: "db-0", Node: "n1", Ready: true, DoNotDisrupt: true}, {Name: "db-1", Node: "n2", Ready: true, DoNotDisrupt: true}}},
			marked: Marks{DoNotDisrupt: {"db-0": "p", "gone-0": "p", "other-0": "q"}},
			want: result{
				Apply:          []*policyv1.PodDisruptionBudget{budget("p", ready(workload(holdfastv1alpha1.KindStatefulSet, "db", 2), 2), maxUnavailable(intstr.FromInt32(1)), nil)},
				PodAnnotations: []PodAnnotation{{Pod: "db-0", Mark: DoNotDisrupt}, {Pod: "gone-0", Mark: DoNotDisrupt}},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "StatefulSet", Name: "db", Replicas: 2, State: holdfastv1alpha1.WorkloadBudgeted, Budget: "holdfast-sts-db",
					Message: "1 of 2 pods may be disrupted at once"}},
			},
		},
		"protect keeps its annotation while protecting": {
			policy: policy("p", time.Hour, protect(time.Minute)),
			work:   []Workload{db},
			pods:   map[string][]Pod{"StatefulSet/db": {{Name: "db-0", Node: "n2", Ready: true, DoNotDisrupt: true}}},
			marked: Marks{DoNotDisrupt: {"db-0": "p"}},
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{opened(budget("p", db, minAvailable(intstr.FromInt32(1)), nil), holdfastv1alpha1.SingleReplicaProtect, time.Minute)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "StatefulSet", Name: "db", Replicas: 1, State: holdfastv1alpha1.WorkloadProtected, Budget: "holdfast-sts-db",
					Message: "single replica under Protect: minAvailable 1 and karpenter.sh/do-not-disrupt on its pod"}},
			},
		},
		"protect without escapeAfter blocks for good": {
			policy: policy("p", time.Hour, protect(0)),
			work:   []Workload{db},
			pods:   map[string][]Pod{"StatefulSet/db": {{Name: "db-0", Node: "n1", Ready: true, DoNotDisrupt: true}}},
			nodes:  cordoned,
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{opened(budget("p", db, minAvailable(intstr.FromInt32(1)), map[string]string{holdfastv1alpha1.BlockedSinceAnnotation: "2026-11-22T12:00:00Z"}), holdfastv1alpha1.SingleReplicaProtect, 0)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "StatefulSet", Name: "db", Replicas: 1, State: holdfastv1alpha1.WorkloadProtected, Budget: "holdfast-sts-db",
					Message: "blocks the drain of node n1 (no escapeAfter)"}},
			},
		},
		"surge in progress under an older policy: moved on, budget left to the winner": {
			policy: policy("young", time.Minute, surge),
			others: []holdfastv1alpha1.DisruptionPolicy{policy("old", time.Hour, surge)},
			work:   []Workload{surged(single, 1, Pod{Name: "single-s", Node: "n2", Ready: true, Surge: true})},
			pods:   onN1,
			nodes:  cordoned,
			want: result{
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadOverridden,
					Message: "DisruptionPolicy old is older and also selects it: that policy manages its budget"}},
				RequeueAfter: surgePoll,
			},
		},
		"surge in progress when a user's budget appears: no second budget": {
			policy:  policy("p", time.Hour, surge),
			work:    []Workload{surged(single, 1, Pod{Name: "single-s", Node: "n2", Ready: true, Surge: true})},
			budgets: []policyv1.PodDisruptionBudget{userBudget("mine", map[string]string{"app": "single"}), *budget("p", single, minAvailable(intstr.FromInt32(1)), nil)},
			pods:    onN1,
			nodes:   cordoned,
			want: result{
				Delete: []string{"holdfast-deploy-single"},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadSurging,
					Message: "1 extra pod beside the 1 replica for the drain of node n1: 0 of them Ready elsewhere; PodDisruptionBudget mine now covers its pods, so holdfast keeps none"}},
				RequeueAfter: surgePoll,
			},
		},
		"the policy's surge sets no policy claims any more are removed at once": {
			policy: policy("p", time.Hour, surge),
			surges: []SurgeSet{
				{Name: SurgeSetName("orphan"), Policy: "p", Deployment: "orphan", DeploymentUID: "uid-orphan", Replicas: 1, Unclaimed: true},
				{Name: SurgeSetName("theirs"), Policy: "q", Deployment: "theirs", DeploymentUID: "uid-theirs", Replicas: 1, Unclaimed: true},
				{Name: SurgeSetName("claimed"), Policy: "p", Deployment: "claimed", DeploymentUID: "uid-claimed", Replicas: 1},
			},
			want: result{Surges: []Surge{surgeEnd("orphan")}},
		},
		"invalid selector: nothing selected, nothing deleted": {
			policy: policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
				s.Selector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}
			}),
			work:     []Workload{web},
			budgets:  []policyv1.PodDisruptionBudget{*budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil)},
			wantCond: map[string]string{holdfastv1alpha1.ConditionBudgetsReady: holdfastv1alpha1.ReasonInvalidSelector},
		},
	}
	runDecide(t, tests)
}

// decideCase is one Decide case: what is observed and the result expected.
type decideCase struct {
	policy  holdfastv1alpha1.DisruptionPolicy
	others  []holdfastv1alpha1.DisruptionPolicy
	work    []Workload
	budgets []policyv1.PodDisruptionBudget
	pods    map[string][]Pod
	// podLabels are the namespace's live pods' labels; nil for unknown.
	podLabels []map[string]string
	// marked are the pods a Protect annotated, to the policy.
	marked  Marks
	nodes   map[string]*corev1.Node
	claims  map[string]NodeClaim
	groups  map[string]NodeGroupMember
	scalers Autoscalers
	surges  []SurgeSet
	// unreadable are the scale targets gather could not read.
	unreadable []Unreadable
	health     NodeHealth
	stuck      map[string][]Pod
	lostRoom   map[string]string
	// failure are the operator's settings; nil for those that allow every fence.
	failure  *FailureSettings
	want     result
	wantCond map[string]string // condition type -> reason
}

// runDecide runs each case and checks that Decide leaves its input alone.
func runDecide(t *testing.T, tests map[string]decideCase) {
	t.Helper()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := tc.policy
			failure := FailureSettings{NamespacedFencing: true, FenceAfter: true}
			if tc.failure != nil {
				failure = *tc.failure
			}
			obs := Observed{
				Failure:     failure,
				Consent:     ConsentOf(&p, failure, nil),
				Policy:      &p,
				Policies:    append([]holdfastv1alpha1.DisruptionPolicy{p}, tc.others...),
				Workloads:   tc.work,
				Budgets:     tc.budgets,
				Pods:        tc.pods,
				PodLabels:   tc.podLabels,
				Marked:      tc.marked,
				Nodes:       tc.nodes,
				Claims:      tc.claims,
				NodeGroups:  tc.groups,
				Autoscalers: tc.scalers,
				Surges:      tc.surges,
				Unreadable:  tc.unreadable,
				Health:      tc.health,
				Stuck:       tc.stuck,
				LostRoom:    tc.lostRoom,
				Now:         now,
			}
			policyBefore := p.DeepCopy()
			var budgetsBefore []policyv1.PodDisruptionBudget
			for i := range tc.budgets {
				budgetsBefore = append(budgetsBefore, *tc.budgets[i].DeepCopy())
			}
			d := Decide(obs)
			if diff := cmp.Diff(policyBefore, obs.Policy); diff != "" {
				t.Errorf("Decide modified the policy:\n%s", diff)
			}
			if diff := cmp.Diff(budgetsBefore, obs.Budgets); diff != "" {
				t.Errorf("Decide modified the budgets:\n%s", diff)
			}
			got := resultOf(d)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
			for typ, reason := range tc.wantCond {
				c := meta.FindStatusCondition(d.Status.Conditions, typ)
				if c == nil || c.Reason != reason || c.ObservedGeneration != 1 {
					t.Errorf("condition %s = %+v, want reason %s", typ, c, reason)
				}
			}
		})
	}
}

func TestStatusCountsAndConditionsStayPut(t *testing.T) {
	p := policy("p", time.Hour, nil)
	budgeted := workload(holdfastv1alpha1.KindDeployment, "web", 3)
	lone := workload(holdfastv1alpha1.KindDeployment, "lone", 1)
	obs := Observed{Policy: &p, Policies: []holdfastv1alpha1.DisruptionPolicy{p}, Workloads: []Workload{budgeted, lone}, Now: now}
	first := Decide(obs).Status
	want := holdfastv1alpha1.DisruptionPolicyStatus{ObservedGeneration: 1, Selected: 2, Budgeted: 1, Unprotected: 1}
	if diff := cmp.Diff(want, first, cmpopts.IgnoreFields(holdfastv1alpha1.DisruptionPolicyStatus{}, "Workloads", "Conditions")); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if first.Workloads[0].Name != "lone" {
		t.Errorf("workloads %v: the one without a budget should come first", first.Workloads)
	}
	// A later pass with the same facts keeps the conditions' transition times: no
	// status write, so no hot loop.
	p.Status = first
	obs.Now = now.Add(time.Hour)
	if diff := cmp.Diff(first, Decide(obs).Status); diff != "" {
		t.Errorf("second pass changed status (-first +second):\n%s", diff)
	}
}

// pod builds a live pod whose Ready condition last changed ago before now.
func pod(name, node string, ready bool, ago time.Duration) Pod {
	return Pod{Name: name, Node: node, Ready: ready, Since: now.Add(-ago), Created: now.Add(-ago)}
}

// ready sets how many of w's pods are Ready, and available by its own minReadySeconds.
func ready(w Workload, n int32) Workload {
	w.Ready, w.Available = n, n
	return w
}

func paced(seconds int32) func(*holdfastv1alpha1.DisruptionPolicySpec) {
	return func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.MinReadySeconds = ptr.To(seconds) }
}

var pacing = map[string]string{holdfastv1alpha1.PacingAnnotation: "true"}

func TestDecidePacingAndHealth(t *testing.T) {
	web := ready(workload(holdfastv1alpha1.KindDeployment, "web", 3), 3)
	nodes := map[string]*corev1.Node{"n1": node("n1", true), "n2": node("n2", false), "n3": node("n3", false)}
	settled := []Pod{pod("web-a", "n2", true, time.Hour), pod("web-b", "n3", true, time.Hour)}
	podsOf := func(extra ...Pod) map[string][]Pod {
		return map[string][]Pod{"Deployment/web": append(slices.Clone(settled), extra...)}
	}
	budgeted := holdfastv1alpha1.WorkloadStatus{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadBudgeted, Budget: "holdfast-deploy-web", Message: "1 of 3 pods may be disrupted at once"}
	withState := func(st holdfastv1alpha1.WorkloadStatus, state holdfastv1alpha1.WorkloadState, msg string) holdfastv1alpha1.WorkloadStatus {
		st.State, st.Message = state, msg
		return st
	}
	const youngMsg = "Pacing: pod web-c Ready since 2026-11-22T11:59:57Z, counted available from 2026-11-22T12:00:08Z (minReadySeconds 10): the budget counts each as unavailable until then"

	runDecide(t, map[string]decideCase{
		"a pod Ready for less than minReadySeconds: no disruption until it is proven": {
			policy: policy("p", time.Hour, paced(10)),
			work:   []Workload{web},
			pods:   podsOf(pod("web-c", "n2", true, 3*time.Second)),
			nodes:  nodes,
			want: result{
				Apply:        []*policyv1.PodDisruptionBudget{budget("p", web, maxUnavailable(intstr.FromInt32(0)), pacing)},
				Workloads:    []holdfastv1alpha1.WorkloadStatus{withState(budgeted, holdfastv1alpha1.WorkloadPacing, youngMsg)},
				RequeueAfter: 8 * time.Second, // the gate opens at 12:00:08, counted available from the end of 11:59:57
			},
			wantCond: map[string]string{holdfastv1alpha1.ConditionBudgetsReady: holdfastv1alpha1.ReasonAllBudgetsManaged, holdfastv1alpha1.ConditionDegraded: holdfastv1alpha1.ReasonAllHealthy},
		},
		"the gate opens by the clock: the policy's budget again, the mark removed": {
			policy:  policy("p", time.Hour, paced(10)),
			work:    []Workload{web},
			budgets: []policyv1.PodDisruptionBudget{*budget("p", web, maxUnavailable(intstr.FromInt32(0)), pacing)},
			pods:    podsOf(pod("web-c", "n2", true, 11*time.Second)),
			nodes:   nodes,
			want: result{
				Apply:     []*policyv1.PodDisruptionBudget{budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{budgeted},
			},
		},
		"a replacement not Ready yet: the budget already counts it; the mark says to look again": {
			policy: policy("p", time.Hour, paced(10)),
			work:   []Workload{ready(web, 2)},
			pods:   podsOf(pod("web-c", "n2", false, 2*time.Second)),
			nodes:  nodes,
			want: result{
				Apply:        []*policyv1.PodDisruptionBudget{budget("p", web, maxUnavailable(intstr.FromInt32(1)), pacing)},
				Workloads:    []holdfastv1alpha1.WorkloadStatus{budgeted},
				RequeueAfter: startGrace - 2*time.Second,
			},
		},
		"several young pods each take a disruption off; maxUnavailable stays maxUnavailable": {
			policy: policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
				s.MinReadySeconds, s.MaxUnavailable = ptr.To[int32](10), ptr.To(intstr.FromString("40%"))
			}),
			work:  []Workload{ready(workload(holdfastv1alpha1.KindDeployment, "web", 5), 5)},
			pods:  podsOf(pod("web-c", "n2", true, 3*time.Second), pod("web-d", "n2", true, time.Minute), pod("web-e", "n2", true, 5*time.Second)),
			nodes: nodes,
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{budget("p", web, maxUnavailable(intstr.FromInt32(0)), pacing)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 5, State: holdfastv1alpha1.WorkloadPacing, Budget: "holdfast-deploy-web",
					Message: "Pacing: pod web-c Ready since 2026-11-22T11:59:57Z, counted available from 2026-11-22T12:00:08Z, pod web-e Ready since 2026-11-22T11:59:55Z, counted available from 2026-11-22T12:00:06Z (minReadySeconds 10): the budget counts each as unavailable until then"}},
				RequeueAfter: 6 * time.Second,
			},
		},
		"minAvailable is raised by the young pods, never above the size": {
			policy: policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
				s.MinReadySeconds, s.MaxUnavailable, s.MinAvailable = ptr.To[int32](10), nil, ptr.To(intstr.FromString("60%"))
			}),
			work: []Workload{ready(workload(holdfastv1alpha1.KindDeployment, "web", 5), 5)},
			pods: podsOf(pod("web-c", "n2", true, time.Second), pod("web-d", "n2", true, time.Second), pod("web-e", "n2", true, time.Second)),
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{budget("p", web, minAvailable(intstr.FromInt32(5)), pacing)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 5, State: holdfastv1alpha1.WorkloadPacing, Budget: "holdfast-deploy-web",
					Message: "Pacing: pod web-c Ready since 2026-11-22T11:59:59Z, counted available from 2026-11-22T12:00:10Z, pod web-d Ready since 2026-11-22T11:59:59Z, counted available from 2026-11-22T12:00:10Z, pod web-e Ready since 2026-11-22T11:59:59Z, counted available from 2026-11-22T12:00:10Z (minReadySeconds 10): the budget counts each as unavailable until then"}},
				RequeueAfter: 10 * time.Second,
			},
		},
		"a DaemonSet's integer minAvailable is raised too": {
			policy: policy("p", time.Hour, paced(10)),
			work:   []Workload{ready(workload(holdfastv1alpha1.KindDaemonSet, "agent", 5), 5)},
			pods:   map[string][]Pod{"DaemonSet/agent": {pod("agent-a", "n2", true, time.Second)}},
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{budget("p", workload(holdfastv1alpha1.KindDaemonSet, "agent", 5), minAvailable(intstr.FromInt32(5)), pacing)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "DaemonSet", Name: "agent", Replicas: 5, State: holdfastv1alpha1.WorkloadPacing, Budget: "holdfast-ds-agent",
					Message: "Pacing: pod agent-a Ready since 2026-11-22T11:59:59Z, counted available from 2026-11-22T12:00:10Z (minReadySeconds 10): the budget counts each as unavailable until then"}},
				RequeueAfter: 10 * time.Second,
			},
		},
		"without minReadySeconds in the policy, the workload's own applies": {
			policy: policy("p", time.Hour, nil),
			work:   []Workload{func() Workload { w := web; w.MinReadySeconds = 10; return w }()},
			pods:   podsOf(pod("web-c", "n2", true, 3*time.Second)),
			want: result{
				Apply:        []*policyv1.PodDisruptionBudget{budget("p", web, maxUnavailable(intstr.FromInt32(0)), pacing)},
				Workloads:    []holdfastv1alpha1.WorkloadStatus{withState(budgeted, holdfastv1alpha1.WorkloadPacing, youngMsg)},
				RequeueAfter: 8 * time.Second,
			},
		},
		"minReadySeconds 0 in the policy turns the workload's own off": {
			policy: policy("p", time.Hour, paced(0)),
			work:   []Workload{func() Workload { w := web; w.MinReadySeconds = 10; return w }()},
			pods:   podsOf(pod("web-c", "n2", true, 3*time.Second)),
			want: result{
				Apply:     []*policyv1.PodDisruptionBudget{budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{budgeted},
			},
		},
		"a pod that never becomes Ready is not paced but reported: the budget stays the policy's": {
			policy: policy("p", time.Hour, paced(10)),
			work:   []Workload{ready(web, 2)},
			pods:   podsOf(pod("web-c", "n2", false, time.Minute)),
			nodes:  nodes,
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{budget("p", web, maxUnavailable(intstr.FromInt32(1)), pacing)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{withState(budgeted, holdfastv1alpha1.WorkloadDegraded,
					"2 of 3 Ready: pod web-c not Ready on node n2 since 2026-11-22T11:59:00Z")},
			},
			wantCond: map[string]string{holdfastv1alpha1.ConditionDegraded: holdfastv1alpha1.ReasonWorkloadsDegraded, holdfastv1alpha1.ConditionBudgetsReady: holdfastv1alpha1.ReasonAllBudgetsManaged},
		},
		"degraded without pacing; a pod never scheduled is named as such": {
			policy: policy("p", time.Hour, nil),
			work:   []Workload{ready(web, 2)},
			pods:   podsOf(pod("web-c", "", false, 2*time.Minute)),
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{withState(budgeted, holdfastv1alpha1.WorkloadDegraded,
					"2 of 3 Ready: pod web-c not scheduled since 2026-11-22T11:58:00Z")},
			},
		},
		"degraded and pacing at once: both said": {
			policy: policy("p", time.Hour, paced(10)),
			work:   []Workload{ready(workload(holdfastv1alpha1.KindDeployment, "web", 4), 3)},
			pods:   podsOf(pod("web-c", "n2", true, 3*time.Second), pod("web-d", "n3", false, time.Minute)),
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{budget("p", web, maxUnavailable(intstr.FromInt32(0)), pacing)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 4, State: holdfastv1alpha1.WorkloadDegraded, Budget: "holdfast-deploy-web",
					Message: "3 of 4 Ready: pod web-d not Ready on node n3 since 2026-11-22T11:59:00Z; " + youngMsg}},
				RequeueAfter: 8 * time.Second,
			},
		},
		"not Ready on a node being drained, or during a rollout: not degraded": {
			policy: policy("p", time.Hour, nil),
			work: []Workload{ready(web, 2), func() Workload {
				w := ready(workload(holdfastv1alpha1.KindDeployment, "api", 3), 2)
				w.RollingOut = true
				return w
			}()},
			pods: map[string][]Pod{
				"Deployment/web": append(slices.Clone(settled), pod("web-c", "n1", false, time.Minute)),
				"Deployment/api": {pod("api-a", "n2", true, time.Hour), pod("api-b", "n2", true, time.Hour), pod("api-c", "n3", false, time.Minute)},
			},
			nodes: nodes,
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{
					budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil),
					budget("p", workload(holdfastv1alpha1.KindDeployment, "api", 3), maxUnavailable(intstr.FromInt32(1)), nil),
				},
				Workloads: []holdfastv1alpha1.WorkloadStatus{
					{Kind: "Deployment", Name: "api", Replicas: 3, State: holdfastv1alpha1.WorkloadBudgeted, Budget: "holdfast-deploy-api", Message: "1 of 3 pods may be disrupted at once"},
					budgeted,
				},
			},
			wantCond: map[string]string{holdfastv1alpha1.ConditionDegraded: holdfastv1alpha1.ReasonAllHealthy},
		},
		"a surge waits for its new pod to be proven before the eviction": {
			policy: policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
				s.SingleReplica, s.MinReadySeconds = holdfastv1alpha1.SingleReplicaSurge, ptr.To[int32](10)
			}),
			work:  []Workload{ready(surged(workload(holdfastv1alpha1.KindDeployment, "single", 1), 1, surgePod(pod("single-b", "n2", true, 3*time.Second))), 1)},
			pods:  map[string][]Pod{"Deployment/single": {pod("single-a", "n1", true, time.Hour)}},
			nodes: nodes,
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{opened(budget("p", workload(holdfastv1alpha1.KindDeployment, "single", 1), minAvailable(intstr.FromInt32(2)), pacing), holdfastv1alpha1.SingleReplicaSurge, 0)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadSurging, Budget: "holdfast-deploy-single",
					Message: "1 extra pod beside the 1 replica for the drain of node n1: 0 of them Ready elsewhere; Pacing: pod single-b Ready since 2026-11-22T11:59:57Z, counted available from 2026-11-22T12:00:08Z (minReadySeconds 10): the budget counts each as unavailable until then"}},
				RequeueAfter: surgePoll,
			},
		},
	})
}

func TestDecideSurgeWhenBlocked(t *testing.T) {
	web := ready(workload(holdfastv1alpha1.KindDeployment, "web", 3), 2)
	whenBlocked := func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.Surge = holdfastv1alpha1.SurgeWhenBlocked }
	nodes := map[string]*corev1.Node{"n1": node("n1", true), "n2": node("n2", false), "n3": node("n3", false)}
	// web-a waits on the drain of n1; web-c has not been Ready for a minute: the budget
	// (maxUnavailable 1) allows nothing.
	blocked := map[string][]Pod{"Deployment/web": {pod("web-a", "n1", true, time.Hour), pod("web-b", "n2", true, time.Hour), pod("web-c", "n3", false, time.Minute)}}
	atZero := func(spec policyv1.PodDisruptionBudgetSpec, allowed int32) policyv1.PodDisruptionBudget {
		b := *budget("p", web, spec, nil)
		b.Generation, b.Status.ObservedGeneration, b.Status.ExpectedPods, b.Status.DisruptionsAllowed = 2, 2, 3, allowed
		return b
	}
	degraded := holdfastv1alpha1.WorkloadStatus{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadDegraded, Budget: "holdfast-deploy-web",
		Message: "2 of 3 Ready: pod web-c not Ready on node n3 since 2026-11-22T11:59:00Z"}
	// notStarted is no surge; blocked says whether the budget, as counted, allows none.
	notStarted := func(blocked bool) result {
		st := degraded
		st.Blocked = blocked
		return result{
			Apply:     []*policyv1.PodDisruptionBudget{budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil)},
			Workloads: []holdfastv1alpha1.WorkloadStatus{st},
		}
	}
	surging := func(extra ...Pod) Workload {
		return surged(ready(workload(holdfastv1alpha1.KindDeployment, "web", 3), 2), 1, extra...)
	}
	scaledUp := result{
		Apply:  []*policyv1.PodDisruptionBudget{budget("p", web, minAvailable(intstr.FromInt32(2)), nil)},
		Surges: []Surge{surgeTo("web", 1)},
		Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadSurging, Budget: "holdfast-deploy-web", Blocked: true,
			Message: "node n1 is being drained: 1 extra pod added beside the 3 replicas; the eviction waits until it is Ready on another node"}},
		RequeueAfter: surgePoll,
	}
	maintenancePlanned := node("n1", false)
	maintenancePlanned.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMaintenancePlanned, Status: corev1.ConditionTrue}}

	runDecide(t, map[string]decideCase{
		"budget at zero and a drain waiting: one extra pod, the floor held": {
			policy:  policy("p", time.Hour, whenBlocked),
			work:    []Workload{web},
			budgets: []policyv1.PodDisruptionBudget{atZero(maxUnavailable(intstr.FromInt32(1)), 0)},
			pods:    blocked,
			nodes:   nodes,
			want:    scaledUp,
		},
		"maintenance planned on the node, not yet cordoned: the surge starts as early": {
			policy:  policy("p", time.Hour, whenBlocked),
			work:    []Workload{web},
			budgets: []policyv1.PodDisruptionBudget{atZero(maxUnavailable(intstr.FromInt32(1)), 0)},
			pods:    blocked,
			nodes:   map[string]*corev1.Node{"n1": maintenancePlanned, "n2": node("n2", false), "n3": node("n3", false)},
			want:    scaledUp,
		},
		"surge: Never (the default) leaves the drain waiting": {
			policy:  policy("p", time.Hour, nil),
			work:    []Workload{web},
			budgets: []policyv1.PodDisruptionBudget{atZero(maxUnavailable(intstr.FromInt32(1)), 0)},
			pods:    blocked,
			nodes:   nodes,
			want:    notStarted(true),
		},
		"a budget that still allows a disruption needs no surge": {
			policy:  policy("p", time.Hour, whenBlocked),
			work:    []Workload{web},
			budgets: []policyv1.PodDisruptionBudget{atZero(maxUnavailable(intstr.FromInt32(1)), 1)},
			pods:    blocked,
			nodes:   nodes,
			want:    notStarted(false),
		},
		"a budget status not caught up with its spec is not trusted": {
			policy: policy("p", time.Hour, whenBlocked),
			work:   []Workload{web},
			budgets: []policyv1.PodDisruptionBudget{func() policyv1.PodDisruptionBudget {
				b := atZero(maxUnavailable(intstr.FromInt32(1)), 0)
				b.Generation = 3
				return b
			}()},
			pods:  blocked,
			nodes: nodes,
			want:  notStarted(false),
		},
		"at zero for a closed window's spec, not the policy's: no surge": {
			policy:  policy("p", time.Hour, whenBlocked),
			work:    []Workload{web},
			budgets: []policyv1.PodDisruptionBudget{atZero(maxUnavailable(intstr.FromInt32(0)), 0)},
			pods:    blocked,
			nodes:   nodes,
			want:    notStarted(true),
		},
		"no pod on a node being drained: no surge": {
			policy:  policy("p", time.Hour, whenBlocked),
			work:    []Workload{web},
			budgets: []policyv1.PodDisruptionBudget{atZero(maxUnavailable(intstr.FromInt32(1)), 0)},
			pods:    blocked,
			nodes:   map[string]*corev1.Node{"n1": node("n1", false)},
			want:    notStarted(true),
		},
		"a pod still starting will free the budget by itself: no surge": {
			policy:  policy("p", time.Hour, whenBlocked),
			work:    []Workload{web},
			budgets: []policyv1.PodDisruptionBudget{atZero(maxUnavailable(intstr.FromInt32(1)), 0)},
			pods:    map[string][]Pod{"Deployment/web": {pod("web-a", "n1", true, time.Hour), pod("web-b", "n2", true, time.Hour), pod("web-c", "n3", false, 5*time.Second)}},
			nodes:   nodes,
			want: result{
				Apply:        []*policyv1.PodDisruptionBudget{budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil)},
				Workloads:    []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadBudgeted, Budget: "holdfast-deploy-web", Blocked: true, Message: "1 of 3 pods may be disrupted at once"}},
				RequeueAfter: startGrace - 5*time.Second,
			},
		},
		"in progress: the pod on the drained node is still there, hold at the original floor": {
			policy:  policy("p", time.Hour, whenBlocked),
			work:    []Workload{surging(surgePod(pod("web-d", "n2", true, time.Minute)))},
			budgets: []policyv1.PodDisruptionBudget{atZero(minAvailable(intstr.FromInt32(2)), 1)},
			pods:    blocked,
			nodes:   nodes,
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{budget("p", web, minAvailable(intstr.FromInt32(2)), nil)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadSurging, Budget: "holdfast-deploy-web",
					Message: "1 extra pod beside the 3 replicas for the drain of node n1: 1 of them Ready elsewhere"}},
				RequeueAfter: surgePoll,
			},
		},
		"the drain is over but the extra pod never became Ready: removed all the same": {
			policy:  policy("p", time.Hour, whenBlocked),
			work:    []Workload{surging(surgePod(pod("web-d", "n2", false, time.Minute)))},
			budgets: []policyv1.PodDisruptionBudget{atZero(minAvailable(intstr.FromInt32(2)), 0)},
			pods: map[string][]Pod{"Deployment/web": {pod("web-a", "n3", true, time.Hour), pod("web-b", "n2", true, time.Hour),
				pod("web-c", "n3", false, time.Minute)}},
			nodes: map[string]*corev1.Node{"n2": node("n2", false), "n3": node("n3", false)},
			want: result{
				Apply:  []*policyv1.PodDisruptionBudget{budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil)},
				Surges: []Surge{surgeEnd("web")},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadDegraded, Budget: "holdfast-deploy-web", Blocked: true,
					Message: "2 of 3 Ready: pod web-c not Ready on node n3 since 2026-11-22T11:59:00Z"}},
			},
		},
		"a new pod still starting after the drain: the surge waits for it": {
			policy:  policy("p", time.Hour, whenBlocked),
			work:    []Workload{surging(surgePod(pod("web-d", "n2", true, time.Minute)))},
			budgets: []policyv1.PodDisruptionBudget{atZero(minAvailable(intstr.FromInt32(2)), 0)},
			pods: map[string][]Pod{"Deployment/web": {pod("web-b", "n2", true, time.Hour), pod("web-c", "n3", false, time.Minute),
				pod("web-e", "n3", false, 2*time.Second)}},
			nodes: nodes,
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{budget("p", web, minAvailable(intstr.FromInt32(2)), nil)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadSurging, Budget: "holdfast-deploy-web", Blocked: true,
					Message: "1 extra pod beside the 3 replicas: waiting for 3 of them Ready before removing the extra (1 now)"}},
				RequeueAfter: surgePoll,
			},
		},
		"done: evicted and replaced elsewhere, the extra pod removed": {
			policy:  policy("p", time.Hour, whenBlocked),
			work:    []Workload{surging(surgePod(pod("web-d", "n2", true, time.Minute)))},
			budgets: []policyv1.PodDisruptionBudget{atZero(minAvailable(intstr.FromInt32(2)), 1)},
			pods: map[string][]Pod{"Deployment/web": {pod("web-b", "n2", true, time.Hour), pod("web-c", "n3", false, time.Minute),
				pod("web-e", "n3", true, time.Minute)}},
			nodes: nodes,
			want: result{
				Apply:  []*policyv1.PodDisruptionBudget{budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil)},
				Surges: []Surge{surgeEnd("web")},
				// web-c, stuck before the drain, stays: the surge was for the drain.
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadDegraded, Budget: "holdfast-deploy-web",
					Message: "2 of 3 Ready: pod web-c not Ready on node n3 since 2026-11-22T11:59:00Z"}},
			},
		},
	})
}

func TestNeedsPods(t *testing.T) {
	p := policy("p", time.Hour, nil)
	whenBlocked := policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.Surge = holdfastv1alpha1.SurgeWhenBlocked })
	protect := policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
		s.SingleReplica = holdfastv1alpha1.SingleReplicaProtect
	})
	web := ready(workload(holdfastv1alpha1.KindDeployment, "web", 3), 3)
	uncounted := *budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil)
	zero := uncounted
	zero.Status.ExpectedPods = 3
	marked := *budget("p", web, maxUnavailable(intstr.FromInt32(1)), pacing)
	foreign := *budget("other", web, maxUnavailable(intstr.FromInt32(1)), pacing)
	allowing := zero
	allowing.Status.DisruptionsAllowed = 1
	tests := map[string]struct {
		policy  holdfastv1alpha1.DisruptionPolicy
		w       Workload
		budgets []policyv1.PodDisruptionBudget
		want    bool
	}{
		"settled workload: no pods read":             {policy: p, w: web, want: false},
		"short of Ready pods":                        {policy: p, w: ready(web, 2), want: true},
		"Ready, not yet for its own minReadySeconds": {policy: p, w: func() Workload { w := web; w.Available = 2; return w }(), want: true},
		"DaemonSet short of Ready pods":              {policy: p, w: ready(workload(holdfastv1alpha1.KindDaemonSet, "agent", 3), 2), want: true},
		"pacing mark on its budget":                  {policy: p, w: web, budgets: []policyv1.PodDisruptionBudget{marked}, want: true},
		"pacing mark on another policy's budget":     {policy: p, w: web, budgets: []policyv1.PodDisruptionBudget{foreign}, want: false},
		"surge in progress, whatever the policy":     {policy: p, w: surged(web, 1), want: true},
		"single replica under Protect":               {policy: protect, w: ready(workload(holdfastv1alpha1.KindStatefulSet, "db", 1), 1), want: true},
		"single replica under Skip":                  {policy: p, w: ready(workload(holdfastv1alpha1.KindDeployment, "one", 1), 1), want: false},
		"WhenBlocked, budget at zero":                {policy: whenBlocked, w: web, budgets: []policyv1.PodDisruptionBudget{zero}, want: true},
		"WhenBlocked, budget allowing one":           {policy: whenBlocked, w: web, budgets: []policyv1.PodDisruptionBudget{allowing}, want: false},
		// As blocksDrain reads it (availability.AllowsNone): a budget not counted yet blocks nothing.
		"WhenBlocked, budget not counted yet":        {policy: whenBlocked, w: web, budgets: []policyv1.PodDisruptionBudget{uncounted}, want: false},
		"budget at zero without WhenBlocked":         {policy: p, w: web, budgets: []policyv1.PodDisruptionBudget{zero}, want: false},
		"WhenBlocked but a StatefulSet cannot surge": {policy: whenBlocked, w: ready(workload(holdfastv1alpha1.KindStatefulSet, "web", 3), 3), budgets: []policyv1.PodDisruptionBudget{zero}, want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pol := tc.policy
			if got := NeedsPods(&Observed{Policy: &pol, Budgets: tc.budgets}, &tc.w); got != tc.want {
				t.Errorf("NeedsPods = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestDecideDoesNotPaceWhatAllowsNothing(t *testing.T) {
	single := ready(workload(holdfastv1alpha1.KindDeployment, "single", 1), 1)
	runDecide(t, map[string]decideCase{
		"a single replica's minAvailable 1 allows nothing already: not Pacing": {
			policy: policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
				s.SingleReplica, s.MinReadySeconds = holdfastv1alpha1.SingleReplicaSurge, ptr.To[int32](10)
			}),
			work: []Workload{single},
			pods: map[string][]Pod{"Deployment/single": {pod("single-a", "n2", true, 3*time.Second)}},
			want: result{
				Apply: []*policyv1.PodDisruptionBudget{opened(budget("p", single, minAvailable(intstr.FromInt32(1)), pacing), holdfastv1alpha1.SingleReplicaSurge, 0)},
				Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "single", Replicas: 1, State: holdfastv1alpha1.WorkloadBudgeted, Budget: "holdfast-deploy-single",
					Message: "single replica under Surge: a drain of its node first starts an extra pod elsewhere, then lets the eviction through once that pod is Ready"}},
				RequeueAfter: 8 * time.Second,
			},
		},
	})
}

func TestDecideNamespacePoliciesComeBeforeClusterCopies(t *testing.T) {
	web := ready(workload(holdfastv1alpha1.KindDeployment, "web", 3), 3)
	clusterCopyOf := func(name string, age time.Duration) holdfastv1alpha1.DisruptionPolicy {
		p := policy(name, age, nil)
		p.Labels = map[string]string{holdfastv1alpha1.ClusterPolicyLabel: name}
		return p
	}
	budgetedBy := func(p string) result {
		return result{
			Apply:     []*policyv1.PodDisruptionBudget{budget(p, web, maxUnavailable(intstr.FromInt32(1)), nil)},
			Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadBudgeted, Budget: "holdfast-deploy-web", Message: "1 of 3 pods may be disrupted at once"}},
		}
	}
	runDecide(t, map[string]decideCase{
		"an older cluster copy loses to the namespace's own": {
			policy: clusterCopyOf("fleet", time.Hour),
			others: []holdfastv1alpha1.DisruptionPolicy{policy("mine", time.Minute, nil)},
			work:   []Workload{web},
			want: result{Workloads: []holdfastv1alpha1.WorkloadStatus{{Kind: "Deployment", Name: "web", Replicas: 3, State: holdfastv1alpha1.WorkloadOverridden,
				Message: "DisruptionPolicy mine, the namespace's own, also selects it and comes before ClusterDisruptionPolicy fleet: that policy manages its budget"}}},
		},
		"the namespace's own wins over an older cluster copy": {
			policy: policy("mine", time.Minute, nil),
			others: []holdfastv1alpha1.DisruptionPolicy{clusterCopyOf("fleet", time.Hour)},
			work:   []Workload{web},
			want:   budgetedBy("mine"),
		},
		"between cluster copies the oldest wins": {
			policy: clusterCopyOf("fleet", time.Hour),
			others: []holdfastv1alpha1.DisruptionPolicy{clusterCopyOf("young", time.Minute)},
			work:   []Workload{web},
			want:   budgetedBy("fleet"),
		},
	})
}

func TestDecideBlocked(t *testing.T) {
	web := workload(holdfastv1alpha1.KindDeployment, "web", 3)
	counted := func(b policyv1.PodDisruptionBudget, generation, observed int64, expected, allowed int32) policyv1.PodDisruptionBudget {
		b.Generation = generation
		b.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: observed, ExpectedPods: expected, DisruptionsAllowed: allowed}
		return b
	}
	ours := *budget("p", web, maxUnavailable(intstr.FromInt32(1)), nil)
	tests := map[string]struct {
		budget policyv1.PodDisruptionBudget
		want   bool
	}{
		"no count yet":                           {budget: ours},
		"allows one":                             {budget: counted(ours, 1, 1, 3, 1)},
		"allows none":                            {budget: counted(ours, 1, 1, 3, 0), want: true},
		"allows none, counted for an older spec": {budget: counted(ours, 2, 1, 3, 0)},
		"allows none, over no pods":              {budget: counted(ours, 1, 1, 0, 0)},
		"a user's budget in conflict allows none": {
			budget: counted(userBudget("web-by-hand", map[string]string{"app": "web"}), 1, 1, 3, 0), want: true,
		},
		"a user's budget in conflict allows one": {
			budget: counted(userBudget("web-by-hand", map[string]string{"app": "web"}), 1, 1, 3, 1),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := policy("p", time.Hour, nil)
			st := Decide(Observed{Policy: &p, Policies: []holdfastv1alpha1.DisruptionPolicy{p}, Workloads: []Workload{web},
				Budgets: []policyv1.PodDisruptionBudget{tc.budget}, Now: now}).Status
			want := int32(0)
			if tc.want {
				want = 1
			}
			if len(st.Workloads) != 1 || st.Workloads[0].Blocked != tc.want || st.Blocked != want {
				t.Errorf("status.blocked = %d, workloads %+v; want blocked %t", st.Blocked, st.Workloads, tc.want)
			}
		})
	}
}

// resultOf sums d up for the table above: its effects by kind, but fences, which a
// test of their own checks.
func resultOf(d Decision) result {
	got := result{Workloads: d.Status.Workloads, RequeueAfter: d.RequeueAfter}
	for _, e := range d.Effects {
		switch e := e.(type) {
		case ApplyBudget:
			got.Apply = append(got.Apply, e.Budget)
		case DeleteBudget:
			got.Delete = append(got.Delete, e.Budget.Name)
		case Surge:
			got.Surges = append(got.Surges, e)
		case PodAnnotation:
			got.PodAnnotations = append(got.PodAnnotations, e)
		case NodeTaint:
			switch e.Key {
			case holdfastv1alpha1.LostTaintKey:
				got.Quarantine = append(got.Quarantine, e.Node)
			case holdfastv1alpha1.HandOffTaintKey:
				got.HandOffTaints = append(got.HandOffTaints, e.Node)
			}
		}
	}
	return got
}
