package policy

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

func clusterPolicy() *holdfastv1alpha1.ClusterDisruptionPolicy {
	return &holdfastv1alpha1.ClusterDisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet", UID: types.UID("uid-fleet"), Generation: 2},
		Spec: holdfastv1alpha1.ClusterDisruptionPolicySpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "web"}},
			Template: holdfastv1alpha1.DisruptionPolicySpec{
				Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}},
				MaxUnavailable: ptr.To(intstr.FromInt32(1)),
				Rebalance:      &holdfastv1alpha1.RebalanceSpec{TopologyKeys: []string{"topology.kubernetes.io/zone"}, MaxSkew: 1},
			},
		},
	}
}

// copyWith is the policy's copy in ns with the given status counts.
func copyWith(ns string, selected, budgeted, degraded int32) holdfastv1alpha1.DisruptionPolicy {
	c := *copyIn(clusterPolicy(), ns)
	c.Status = holdfastv1alpha1.DisruptionPolicyStatus{Selected: selected, Budgeted: budgeted, Degraded: degraded}
	return c
}

func TestDecideCluster(t *testing.T) {
	names := func(ps []*holdfastv1alpha1.DisruptionPolicy) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		return out
	}
	tests := map[string]struct {
		obs        ClusterObserved
		create     []string
		apply      []string
		delete     []string
		status     holdfastv1alpha1.ClusterDisruptionPolicyStatus
		wantReason string
	}{
		"a copy in every selected namespace; counts summed": {
			obs:        ClusterObserved{Namespaces: []string{"a", "b"}, Copies: []holdfastv1alpha1.DisruptionPolicy{copyWith("a", 3, 2, 1)}},
			create:     []string{"b/fleet"},
			apply:      []string{"a/fleet"},
			status:     holdfastv1alpha1.ClusterDisruptionPolicyStatus{ObservedGeneration: 2, Namespaces: 2, Selected: 3, Budgeted: 2, Degraded: 1},
			wantReason: holdfastv1alpha1.ReasonAllNamespacesCovered,
		},
		"a namespace no longer selected loses its copy, and its counts": {
			obs:        ClusterObserved{Namespaces: []string{"a"}, Copies: []holdfastv1alpha1.DisruptionPolicy{copyWith("a", 1, 1, 0), copyWith("gone", 4, 4, 0)}},
			apply:      []string{"a/fleet"},
			delete:     []string{"gone/fleet"},
			status:     holdfastv1alpha1.ClusterDisruptionPolicyStatus{ObservedGeneration: 2, Namespaces: 1, Selected: 1, Budgeted: 1},
			wantReason: holdfastv1alpha1.ReasonAllNamespacesCovered,
		},
		"a namespace with its own policy of that name gets no copy, and says so": {
			obs:        ClusterObserved{Namespaces: []string{"a", "b"}, Taken: []string{"b"}},
			create:     []string{"a/fleet"},
			status:     holdfastv1alpha1.ClusterDisruptionPolicyStatus{ObservedGeneration: 2, Namespaces: 1, NamesTaken: []string{"b"}},
			wantReason: holdfastv1alpha1.ReasonNamesTaken,
		},
		"an invalid selector creates and deletes nothing": {
			obs:        ClusterObserved{SelectorErr: errors.New("bad"), Copies: []holdfastv1alpha1.DisruptionPolicy{copyWith("a", 1, 1, 0)}},
			status:     holdfastv1alpha1.ClusterDisruptionPolicyStatus{ObservedGeneration: 2},
			wantReason: holdfastv1alpha1.ReasonInvalidNamespaces,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.obs.Policy, tc.obs.Now = clusterPolicy(), now
			d := DecideCluster(tc.obs)
			if diff := cmp.Diff(tc.create, names(d.Create), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("create (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.apply, names(d.Apply), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("apply (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.delete, names(d.Delete), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("delete (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.status, d.Status, cmpopts.IgnoreFields(holdfastv1alpha1.ClusterDisruptionPolicyStatus{}, "Conditions"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if c := meta.FindStatusCondition(d.Status.Conditions, holdfastv1alpha1.ConditionPoliciesReady); c == nil || c.Reason != tc.wantReason || c.ObservedGeneration != 2 {
				t.Errorf("PoliciesReady = %+v, want reason %s", c, tc.wantReason)
			}
		})
	}
}

func TestCopyIsTheTemplateOwnedAndLabelled(t *testing.T) {
	p := clusterPolicy()
	c := copyIn(p, "a")
	if diff := cmp.Diff(p.Spec.Template, c.Spec); diff != "" {
		t.Errorf("spec (-template +copy):\n%s", diff)
	}
	if c.Labels[holdfastv1alpha1.ClusterPolicyLabel] != "fleet" || !metav1.IsControlledBy(c, p) {
		t.Errorf("copy %+v is not labelled and controlled by its policy", c.ObjectMeta)
	}
	c.Spec.Selector.MatchLabels["tier"] = "changed"
	c.Spec.Rebalance.TopologyKeys[0] = "changed"
	if p.Spec.Template.Selector.MatchLabels["tier"] != "web" || p.Spec.Template.Rebalance.TopologyKeys[0] == "changed" {
		t.Error("the copy shares its selector or rebalance settings with the template")
	}
}

// InEffect is the operator's view: copies where the selector picks a live namespace,
// none where the namespace's own policy has the name, and none left where it stopped.
func TestInEffect(t *testing.T) {
	namespace := func(name string, team string, terminating bool) corev1.Namespace {
		ns := corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": team}}}
		if terminating {
			ns.Status.Phase = corev1.NamespaceTerminating
		}
		return ns
	}
	namespaces := []corev1.Namespace{namespace("a", "web", false), namespace("b", "web", false), namespace("c", "db", false), namespace("d", "web", true)}
	own := holdfastv1alpha1.DisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: "b"}}
	stale := copyWith("c", 1, 1, 0)
	policies := []holdfastv1alpha1.DisruptionPolicy{stale, own}
	got := InEffect(namespaces, policies, []holdfastv1alpha1.ClusterDisruptionPolicy{*clusterPolicy()}, now)
	var names []string
	for _, p := range got {
		_, copied := p.Labels[holdfastv1alpha1.ClusterPolicyLabel]
		names = append(names, fmt.Sprintf("%s/%s copy=%t", p.Namespace, p.Name, copied))
	}
	want := []string{"a/fleet copy=true", "b/fleet copy=false"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("policies in effect (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]holdfastv1alpha1.DisruptionPolicy{stale, own}, policies); diff != "" {
		t.Errorf("InEffect changed its input (-before +after):\n%s", diff)
	}
}
