package predict_test

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
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

// controllerBudgets is what the DisruptionPolicy controller applies: its gather reduces
// each workload with policy.WorkloadOf and calls policy.Decide per policy.
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
	var out []policyv1.PodDisruptionBudget
	for i := range policies {
		d := policy.Decide(policy.Observed{Policy: &policies[i], Policies: policies, Workloads: ws, Budgets: s.PodDisruptionBudgets,
			Pods: map[string][]policy.Pod{}, Nodes: map[string]*corev1.Node{}, Now: now})
		for _, b := range d.Apply {
			out = append(out, *b)
		}
	}
	return sorted(out)
}

// predictedBudgets are the budgets of the snapshot as the CLI predicts it, the ones a
// policy keeps.
func predictedBudgets(s *snapshot.Snapshot) []policyv1.PodDisruptionBudget {
	predicted, _ := predict.Operator(s, now)
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
