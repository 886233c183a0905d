package predict_test

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/predict"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

const ns = "shop"

func deployment(name string, replicas int32, labels map[string]string) appsv1.Deployment {
	return appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name), Labels: labels, Generation: 1},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas},
	}
}

func statefulSet(name string, replicas int32) appsv1.StatefulSet {
	return appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name), Labels: map[string]string{"tier": "db"}, Generation: 1},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas},
	}
}

func daemonSet(name string, scheduled int32) appsv1.DaemonSet {
	return appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name), Generation: 1},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}}},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: scheduled, UpdatedNumberScheduled: scheduled, NumberReady: scheduled, NumberAvailable: scheduled},
	}
}

func disruptionPolicy(name string, age time.Duration, mod func(*holdfastv1alpha1.DisruptionPolicySpec)) holdfastv1alpha1.DisruptionPolicy {
	p := holdfastv1alpha1.DisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Generation: 1, CreationTimestamp: metav1.NewTime(now.Add(-age))},
		Spec:       holdfastv1alpha1.DisruptionPolicySpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), SingleReplica: holdfastv1alpha1.SingleReplicaSkip},
	}
	if mod != nil {
		mod(&p.Spec)
	}
	return p
}

// workloads is the same set of workloads for every policy of the table.
func workloads() *snapshot.Snapshot {
	return &snapshot.Snapshot{
		Source: snapshot.SourceLive,
		Nodes:  []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}},
		Deployments: []appsv1.Deployment{
			deployment("storefront", 4, map[string]string{"tier": "web"}),
			deployment("checkout", 1, map[string]string{"tier": "web"}),
			deployment("batch", 0, nil),
			deployment("covered", 3, map[string]string{"tier": "web"}),
		},
		StatefulSets: []appsv1.StatefulSet{statefulSet("orders", 3), statefulSet("cache", 1)},
		DaemonSets:   []appsv1.DaemonSet{daemonSet("agent", 5)},
		PodDisruptionBudgets: []policyv1.PodDisruptionBudget{{
			ObjectMeta: metav1.ObjectMeta{Name: "covered-by-hand", Namespace: ns},
			Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "covered"}}},
		}},
	}
}

// controllerBudgets is what the DisruptionPolicy controller applies: its gather lists
// the workloads each policy selects, reduced with policy.WorkloadOf, and the labels of
// the namespace's pods, and it calls policy.Decide per policy.
func controllerBudgets(s *snapshot.Snapshot, policies []holdfastv1alpha1.DisruptionPolicy) []policyv1.PodDisruptionBudget {
	var ws []policy.Workload
	for i := range s.Deployments {
		ws = append(ws, policy.WorkloadOf(&s.Deployments[i]))
	}
	for i := range s.StatefulSets {
		ws = append(ws, policy.WorkloadOf(&s.StatefulSets[i]))
	}
	for i := range s.DaemonSets {
		ws = append(ws, policy.WorkloadOf(&s.DaemonSets[i]))
	}
	var podLabels []map[string]string
	for _, p := range s.Pods {
		podLabels = append(podLabels, p.Labels)
	}
	var out []policyv1.PodDisruptionBudget
	for i := range policies {
		selected := slices.DeleteFunc(slices.Clone(ws), func(w policy.Workload) bool {
			ok, _ := policy.Selects(&policies[i], &w)
			return !ok
		})
		d := policy.Decide(policy.Observed{Policy: &policies[i], Policies: policies, Workloads: selected, Budgets: s.PodDisruptionBudgets,
			PodLabels: podLabels, Pods: map[string][]policy.Pod{}, Nodes: map[string]*corev1.Node{}, Now: now})
		for _, b := range policy.EffectsOf[policy.ApplyBudget](d.Effects) {
			out = append(out, *b.Budget)
		}
	}
	return sorted(out)
}

// predictedBudgets are the budgets of the snapshot as the CLI predicts it, the ones a
// policy keeps.
func predictedBudgets(s *snapshot.Snapshot) []policyv1.PodDisruptionBudget {
	predicted, _ := predict.Operator(s, now, policy.Settings{})
	return sorted(slices.DeleteFunc(slices.Clone(predicted.PodDisruptionBudgets), func(b policyv1.PodDisruptionBudget) bool {
		return b.Labels[holdfastv1alpha1.PolicyLabel] == ""
	}))
}

func sorted(bs []policyv1.PodDisruptionBudget) []policyv1.PodDisruptionBudget {
	slices.SortFunc(bs, func(a, b policyv1.PodDisruptionBudget) int { return cmp.Compare(a.Name, b.Name) })
	return bs
}

// The CLI's prediction and the controller's decision are the same budgets, for a table
// of policies over the same workloads.
func TestPredictionIsTheControllersDecision(t *testing.T) {
	tests := map[string][]holdfastv1alpha1.DisruptionPolicy{
		"maxUnavailable 1 over everything": {disruptionPolicy("all", time.Hour, nil)},
		"percentage minAvailable": {disruptionPolicy("half", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
			s.MaxUnavailable, s.MinAvailable = nil, ptr.To(intstr.FromString("50%"))
		})},
		"single replicas surged": {disruptionPolicy("surge", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
			s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge
		})},
		"single replicas protected": {disruptionPolicy("protect", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
			s.SingleReplica, s.EscapeAfter = holdfastv1alpha1.SingleReplicaProtect, &metav1.Duration{Duration: time.Hour}
		})},
		"only StatefulSets": {disruptionPolicy("db", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
			s.Kinds = []holdfastv1alpha1.WorkloadKind{holdfastv1alpha1.KindStatefulSet}
		})},
		"a label selector": {disruptionPolicy("web", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
			s.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}
		})},
		"a closed maintenance window": {disruptionPolicy("maint", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
			s.MaintenanceWindows = []holdfastv1alpha1.MaintenanceWindow{{Schedule: "0 2 * * 6", Duration: metav1.Duration{Duration: time.Hour}}}
		})},
		"two policies overlapping": {
			disruptionPolicy("old", 2*time.Hour, nil),
			disruptionPolicy("young", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
				s.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}
				s.MaxUnavailable = ptr.To(intstr.FromInt32(2))
			}),
		},
	}
	for name, policies := range tests {
		t.Run(name, func(t *testing.T) {
			s := workloads()
			s.DisruptionPolicies = policies
			want := controllerBudgets(s, policies)
			if len(want) == 0 {
				t.Fatal("the controller decides no budget: the case tests nothing")
			}
			if diff := gocmp.Diff(want, predictedBudgets(s)); diff != "" {
				t.Errorf("budgets (-controller +prediction):\n%s", diff)
			}
			if diff := gocmp.Diff(workloads().Deployments, s.Deployments); diff != "" {
				t.Errorf("the prediction changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

// A ClusterDisruptionPolicy's copy makes the same budgets as the namespace's own policy
// with its template would, and a namespace's own policy of the same name wins.
func TestPredictionOfClusterPolicies(t *testing.T) {
	cluster := holdfastv1alpha1.ClusterDisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet", UID: "uid-fleet", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec: holdfastv1alpha1.ClusterDisruptionPolicySpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			Template:          disruptionPolicy("", 0, nil).Spec,
		},
	}
	own := disruptionPolicy("fleet", time.Minute, func(s *holdfastv1alpha1.DisruptionPolicySpec) { s.MaxUnavailable = ptr.To(intstr.FromInt32(2)) })
	for name, tc := range map[string]struct {
		own  []holdfastv1alpha1.DisruptionPolicy
		want string
	}{
		"the copy":                   {want: "1"},
		"the namespace's own policy": {own: []holdfastv1alpha1.DisruptionPolicy{own}, want: "2"},
	} {
		t.Run(name, func(t *testing.T) {
			s := workloads()
			s.DisruptionPolicies, s.ClusterDisruptionPolicies = tc.own, []holdfastv1alpha1.ClusterDisruptionPolicy{cluster}
			var got []string
			for _, b := range predictedBudgets(s) {
				if b.Name == policy.BudgetName(holdfastv1alpha1.KindDeployment, "storefront") {
					got = append(got, fmt.Sprint(b.Labels[holdfastv1alpha1.PolicyLabel], " ", b.Spec.MaxUnavailable.String()))
				}
			}
			if diff := gocmp.Diff([]string{"fleet " + tc.want}, got); diff != "" {
				t.Errorf("storefront's budget (-want +got):\n%s", diff)
			}
		})
	}
}

// A workload the policy does not select is no part of what the controller reads: a
// canary scaled to zero, whose template a user's budget covers, does not stop the
// budget of the workload the policy selects, as long as no pod of it runs.
func TestPredictionReadsOnlySelectedWorkloads(t *testing.T) {
	s := workloads()
	canary := deployment("canary", 0, nil)
	canary.Spec.Template.Labels = map[string]string{"app": "storefront", "track": "canary"}
	s.Deployments = append(s.Deployments, canary)
	s.PodDisruptionBudgets = append(s.PodDisruptionBudgets, policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "canary", Namespace: ns},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"track": "canary"}}},
	})
	s.DisruptionPolicies = []holdfastv1alpha1.DisruptionPolicy{disruptionPolicy("web", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
		s.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}
	})}
	want := controllerBudgets(s, s.DisruptionPolicies)
	if !slices.ContainsFunc(want, func(b policyv1.PodDisruptionBudget) bool {
		return b.Name == policy.BudgetName(holdfastv1alpha1.KindDeployment, "storefront")
	}) {
		t.Fatal("the controller makes no budget for storefront: the case tests nothing")
	}
	if diff := gocmp.Diff(want, predictedBudgets(s)); diff != "" {
		t.Errorf("budgets (-controller +prediction):\n%s", diff)
	}
}

// The budgets a policy keeps for the objects of a scale target stay as they are: the
// snapshot holds no such objects, and the operator keeps the budgets of a target it
// cannot read.
func TestPredictionKeepsScaleTargetBudgets(t *testing.T) {
	s := workloads()
	target := holdfastv1alpha1.ScaleTarget{APIVersion: "databases.example.com/v1", Kind: "Database"}
	s.DisruptionPolicies = []holdfastv1alpha1.DisruptionPolicy{disruptionPolicy("all", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
		s.ScaleTargets = []holdfastv1alpha1.ScaleTarget{target}
	})}
	kept := policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "holdfast-database-orders", Namespace: ns, Labels: map[string]string{holdfastv1alpha1.PolicyLabel: "all"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: target.APIVersion, Kind: target.Kind, Name: "orders", UID: "uid-db"}}},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"db": "orders"}}},
	}
	s.PodDisruptionBudgets = append(s.PodDisruptionBudgets, kept)
	if !slices.ContainsFunc(predictedBudgets(s), func(b policyv1.PodDisruptionBudget) bool { return b.Name == kept.Name }) {
		t.Errorf("the prediction deleted %s, the budget of a scale target's object", kept.Name)
	}
}

// A surge the prediction starts is a surge set beside the Deployment, as the
// controller's is: the Deployment and its autoscaler are left as their owners wrote them.
func TestPredictionStartsASurgeSet(t *testing.T) {
	s := workloads()
	s.Nodes[0].Spec.Unschedulable = true
	s.Pods = []corev1.Pod{{
		ObjectMeta: metav1.ObjectMeta{Name: "checkout-1", Namespace: ns, Labels: map[string]string{"app": "checkout"}},
		Spec:       corev1.PodSpec{NodeName: "node-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
		}},
	}}
	s.HorizontalPodAutoscalers = []autoscalingv2.HorizontalPodAutoscaler{{
		ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "checkout"},
			MinReplicas: ptr.To(int32(1)), MaxReplicas: 1},
	}}
	s.DisruptionPolicies = []holdfastv1alpha1.DisruptionPolicy{disruptionPolicy("surge", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
		s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge
	})}
	_, outcomes := predict.Operator(s, now, policy.Settings{})
	if len(outcomes) != 1 {
		t.Fatalf("%d outcomes, want 1", len(outcomes))
	}
	var uid types.UID
	for _, d := range s.Deployments {
		if d.Name == "checkout" {
			uid = d.UID
		}
	}
	want := []policy.Surge{{Name: policy.SurgeSetName("checkout"), Deployment: "checkout", DeploymentUID: uid, Replicas: 1}}
	if diff := gocmp.Diff(want, policy.EffectsOf[policy.Surge](outcomes[0].Decision.Effects)); diff != "" {
		t.Errorf("surges (-want +got):\n%s", diff)
	}
}

// TestOperatorSeesLostNodes: the prediction reads the nodes' health as the operator's
// gather does (policy.Observe over the snapshot), so a node the node-lifecycle
// controller tainted unreachable is lost in the predicted status too.
func TestOperatorSeesLostNodes(t *testing.T) {
	s := &snapshot.Snapshot{
		Source: snapshot.SourceLive,
		Nodes: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}}}},
		Deployments:        []appsv1.Deployment{deployment("storefront", 2, map[string]string{"tier": "web"})},
		DisruptionPolicies: []holdfastv1alpha1.DisruptionPolicy{disruptionPolicy("web", time.Hour, nil)},
	}
	for i, node := range []string{"node-1", "node-2"} {
		s.Pods = append(s.Pods, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("storefront-%d", i), Labels: map[string]string{"app": "storefront"}},
			Spec:       corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}},
		})
	}
	s.Deployments[0].Status.ReadyReplicas, s.Deployments[0].Status.AvailableReplicas = 1, 1
	_, outcomes := predict.Operator(s, now, policy.Settings{})
	if len(outcomes) != 1 {
		t.Fatalf("outcomes = %d, want 1", len(outcomes))
	}
	if got := outcomes[0].Decision.Status.LostNodes; !slices.Equal(got, []string{"node-2"}) {
		t.Errorf("lost nodes = %v, want [node-2]", got)
	}
}
