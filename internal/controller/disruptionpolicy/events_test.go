package disruptionpolicy

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/announce"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

const ns = "shop"

func TestStatusEvents(t *testing.T) {
	old := holdfastv1alpha1.DisruptionPolicyStatus{Workloads: []holdfastv1alpha1.WorkloadStatus{
		{Kind: "Deployment", Name: "a", Replicas: 1, State: holdfastv1alpha1.WorkloadSurging},
		{Kind: "Deployment", Name: "b", State: holdfastv1alpha1.WorkloadConflict, Message: "covered"},
		{Kind: "Deployment", Name: "g", Replicas: 3, State: holdfastv1alpha1.WorkloadRecovering},
	}}
	cur := holdfastv1alpha1.DisruptionPolicyStatus{Workloads: []holdfastv1alpha1.WorkloadStatus{
		{Kind: "Deployment", Name: "a", Replicas: 1, State: holdfastv1alpha1.WorkloadBudgeted},
		{Kind: "Deployment", Name: "b", State: holdfastv1alpha1.WorkloadConflict, Message: "covered"},
		{Kind: "Deployment", Name: "c", State: holdfastv1alpha1.WorkloadNoDisruption, Message: "keeps 3 of 3"},
		{Kind: "Deployment", Name: "d", State: holdfastv1alpha1.WorkloadDegraded, Message: "2 of 3 Ready"},
		{Kind: "Deployment", Name: "e", State: holdfastv1alpha1.WorkloadPacing, Message: "Pacing: pod e-1"},
		{Kind: "Deployment", Name: "f", State: holdfastv1alpha1.WorkloadRecovering, Message: "1 pod on lost node n1: surged from 1 to 2"},
		{Kind: "Deployment", Name: "g", Replicas: 3, State: holdfastv1alpha1.WorkloadBudgeted},
	}}
	// Each Event is related to its workload, so that Events of one reason about several
	// workloads are not folded into one.
	deployment := func(name string) *corev1.ObjectReference {
		return &corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: name}
	}
	want := []announce.Event{
		announce.Normal(EventSurgeFinished, "Deployment a: surge over, its extra pods removed beside its 1 replica").About(deployment("a")),
		announce.Warning(EventNoDisruption, "Deployment c: keeps 3 of 3").About(deployment("c")),
		announce.Warning(EventDegraded, "Deployment d: 2 of 3 Ready").About(deployment("d")),
		announce.Normal(EventPaced, "Deployment e: Pacing: pod e-1").About(deployment("e")),
		announce.Warning(EventNodeLost, "Deployment f: 1 pod on lost node n1: surged from 1 to 2").About(deployment("f")),
		announce.Normal(EventRecovered, "Deployment g: no pod left on a lost node, 3 replicas").About(deployment("g")),
	}
	if diff := cmp.Diff(want, statusEvents(ns, old, cur)); diff != "" {
		t.Errorf("statusEvents (-want +got):\n%s", diff)
	}
}

func TestUnreadableScaleTargetEventOnce(t *testing.T) {
	databases := holdfastv1alpha1.ScaleTarget{APIVersion: "example.com/v1", Kind: "Database"}
	p := holdfastv1alpha1.DisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns, Generation: 1},
		Spec:       holdfastv1alpha1.DisruptionPolicySpec{ScaleTargets: []holdfastv1alpha1.ScaleTarget{databases}},
	}
	obs := policy.Observed{Policy: &p, Policies: []holdfastv1alpha1.DisruptionPolicy{p}, Now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC),
		Unreadable: []policy.Unreadable{{Target: databases, Message: "the operator may not list databases.example.com (example.com/v1 Database)"}}}
	first := policy.Decide(obs).Status
	want := []announce.Event{announce.Warning(EventUnreadable,
		"the operator may not list databases.example.com (example.com/v1 Database); the budgets of those kinds are kept as they are until they can be read")}
	if diff := cmp.Diff(want, statusEvents(p.Namespace, p.Status, first)); diff != "" {
		t.Errorf("first pass events (-want +got):\n%s", diff)
	}
	p.Status = first
	if evs := statusEvents(p.Namespace, first, policy.Decide(obs).Status); len(evs) != 0 {
		t.Errorf("second pass repeated %v", evs)
	}
}

// A zone-aware workload's zone changes are announced once each, from status: none when
// it keeps its zone (a repeated reconcile, a restarted operator).
func TestZoneEvents(t *testing.T) {
	db := func(zone, msg string) holdfastv1alpha1.DisruptionPolicyStatus {
		return holdfastv1alpha1.DisruptionPolicyStatus{Workloads: []holdfastv1alpha1.WorkloadStatus{
			{Kind: "StatefulSet", Name: "db", Replicas: 9, State: holdfastv1alpha1.WorkloadBudgeted, Zone: zone, Message: msg},
		}}
	}
	ref := &corev1.ObjectReference{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: ns, Name: "db"}
	idle, a, b := db("", "no zone"), db("a", "zone a open"), db("b", "zone b open")
	disrupted := func(zone string) announce.Event {
		return announce.Normal(EventZoneDisrupted, "StatefulSet db: zone "+zone+" is being disrupted, every other zone is held").About(ref)
	}
	settled := func(zone string) announce.Event {
		return announce.Normal(EventZoneSettled, "StatefulSet db: zone "+zone+" is no longer being disrupted").About(ref)
	}
	for name, tc := range map[string]struct {
		old, cur holdfastv1alpha1.DisruptionPolicyStatus
		want     []announce.Event
	}{
		"idle to a":           {idle, a, []announce.Event{disrupted("a")}},
		"a to b":              {a, b, []announce.Event{settled("a"), disrupted("b")}},
		"b to idle":           {b, idle, []announce.Event{settled("b")}},
		"a stays":             {a, db("a", "zone a held"), nil},
		"first status, a":     {holdfastv1alpha1.DisruptionPolicyStatus{}, a, []announce.Event{disrupted("a")}},
		"idle stays, restart": {idle, idle, nil},
	} {
		if diff := cmp.Diff(tc.want, statusEvents(ns, tc.old, tc.cur)); diff != "" {
			t.Errorf("%s: statusEvents (-want +got):\n%s", name, diff)
		}
	}
}

// Fencing the operator does not allow is said once, and again only when why changes.
func TestFencingNotAllowedEventOnce(t *testing.T) {
	p := holdfastv1alpha1.DisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns, Generation: 1},
		Spec:       holdfastv1alpha1.DisruptionPolicySpec{NodeFailure: &holdfastv1alpha1.NodeFailureSpec{Fencing: holdfastv1alpha1.FencingVerified}},
	}
	obs := policy.Observed{Policy: &p, Policies: []holdfastv1alpha1.DisruptionPolicy{p}, Now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	obs.Consent = policy.ConsentOf(&p, obs.Failure, nil)
	first := policy.Decide(obs).Status
	events := statusEvents(ns, p.Status, first)
	if len(events) != 1 || events[0].Reason != EventFencingNotAllowed || !strings.Contains(events[0].Message, "--allow-namespaced-fencing") {
		t.Fatalf("first decision's Events: %+v, want one %s naming the flag", events, EventFencingNotAllowed)
	}
	p.Status = first
	obs.Policy, obs.Policies = &p, []holdfastv1alpha1.DisruptionPolicy{p}
	if again := statusEvents(ns, first, policy.Decide(obs).Status); len(again) != 0 {
		t.Errorf("the same refusal again: %+v, want no Event", again)
	}
	obs.Failure.NamespacedFencing = true
	obs.Consent = policy.ConsentOf(&p, obs.Failure, nil)
	if allowed := statusEvents(ns, first, policy.Decide(obs).Status); len(allowed) != 0 {
		t.Errorf("fencing allowed: %+v, want no Event", allowed)
	}
}
