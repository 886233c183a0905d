package clusterdisruptionpolicy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/announce"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// nameTaken is the Event for namespace ns, whose own DisruptionPolicy is named fleet.
func nameTaken(ns string) announce.Event {
	return announce.Event{
		Type: corev1.EventTypeWarning, Reason: EventNameTaken,
		Message: "namespace " + ns + " has a DisruptionPolicy named fleet of its own, so it gets no copy of this policy: rename or delete that DisruptionPolicy for the namespace to get the copy",
		Related: &corev1.ObjectReference{APIVersion: "holdfast.dev/v1alpha1", Kind: "DisruptionPolicy", Namespace: ns, Name: "fleet"},
	}
}

func TestStatusEvents(t *testing.T) {
	tests := map[string]struct {
		old, cur []string
		want     []announce.Event
	}{
		"nothing taken":                     {},
		"names taken as before say nothing": {old: []string{"a", "b"}, cur: []string{"a", "b"}},
		"the first status names each namespace, in order": {
			cur:  []string{"a", "b"},
			want: []announce.Event{nameTaken("a"), nameTaken("b")},
		},
		"only the namespace newly taken": {
			old:  []string{"a", "c"},
			cur:  []string{"a", "b", "c"},
			want: []announce.Event{nameTaken("b")},
		},
		"a name freed says nothing": {old: []string{"a", "b"}, cur: []string{"a"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			old := holdfastv1alpha1.ClusterDisruptionPolicyStatus{NamesTaken: tc.old}
			cur := holdfastv1alpha1.ClusterDisruptionPolicyStatus{NamesTaken: tc.cur}
			if diff := cmp.Diff(tc.want, statusEvents("fleet", old, cur), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("statusEvents (-want +got):\n%s", diff)
			}
		})
	}
}

// A name taken is told once: the next pass decides the same status and says nothing.
func TestNameTakenOnce(t *testing.T) {
	p := &holdfastv1alpha1.ClusterDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "fleet", UID: types.UID("uid-fleet"), Generation: 2}}
	obs := policy.ClusterObserved{Policy: p, Namespaces: []string{"a", "b"}, Taken: []string{"b"}, Now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	first := policy.DecideCluster(obs).Status
	if diff := cmp.Diff([]announce.Event{nameTaken("b")}, statusEvents(p.Name, p.Status, first)); diff != "" {
		t.Errorf("first pass (-want +got):\n%s", diff)
	}
	p.Status = first
	if evs := statusEvents(p.Name, first, policy.DecideCluster(obs).Status); len(evs) != 0 {
		t.Errorf("second pass repeated %v", evs)
	}
}

func TestCopyEvents(t *testing.T) {
	c := &holdfastv1alpha1.DisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: "team-a", UID: types.UID("uid-copy")}}
	ref := &corev1.ObjectReference{APIVersion: "holdfast.dev/v1alpha1", Kind: "DisruptionPolicy", Namespace: "team-a", Name: "fleet", UID: "uid-copy"}
	tests := map[string]struct {
		got, want announce.Event
	}{
		"copied": {
			got: copied(c),
			want: announce.Event{Type: corev1.EventTypeNormal, Reason: EventPolicyCopied, Related: ref,
				Message: "namespace team-a is selected: copied the policy there as DisruptionPolicy fleet"},
		},
		"removed": {
			got: removed(c),
			want: announce.Event{Type: corev1.EventTypeNormal, Reason: EventPolicyRemoved, Related: ref,
				Message: "namespace team-a is no longer selected: deleted the copy there, DisruptionPolicy fleet, and its budgets with it"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
