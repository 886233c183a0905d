package policy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

func window(schedule string, d time.Duration, tz string) holdfastv1alpha1.MaintenanceWindow {
	return holdfastv1alpha1.MaintenanceWindow{Schedule: schedule, Duration: metav1.Duration{Duration: d}, TimeZone: tz}
}

func TestWindowsAt(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// now is Sunday 2026-11-22 12:00 UTC.
	tests := map[string]struct {
		windows []holdfastv1alpha1.MaintenanceWindow
		want    windowState
		wantErr bool
	}{
		"no windows: always open": {want: windowState{open: true}},
		"nightly window, closed at noon": {
			windows: []holdfastv1alpha1.MaintenanceWindow{window("0 2 * * *", 2*time.Hour, "")},
			want:    windowState{nextOpening: at("2026-11-23T02:00:00Z")},
		},
		"window opened an hour ago": {
			windows: []holdfastv1alpha1.MaintenanceWindow{window("0 11 * * *", 2*time.Hour, "UTC")},
			want:    windowState{open: true, closesAt: at("2026-11-22T13:00:00Z"), nextOpening: at("2026-11-23T11:00:00Z")},
		},
		"window opening exactly now is open": {
			windows: []holdfastv1alpha1.MaintenanceWindow{window("0 12 * * *", time.Minute, "")},
			want:    windowState{open: true, closesAt: at("2026-11-22T12:01:00Z"), nextOpening: at("2026-11-23T12:00:00Z")},
		},
		"time zone: noon in Paris is 11:00 UTC, closed again by 12:00 UTC": {
			windows: []holdfastv1alpha1.MaintenanceWindow{window("0 12 * * *", 30*time.Minute, "Europe/Paris")},
			want:    windowState{nextOpening: at("2026-11-23T11:00:00Z")},
		},
		"overlapping openings merge": {
			windows: []holdfastv1alpha1.MaintenanceWindow{window("*/10 * * * *", 15*time.Minute, "")},
			want:    windowState{open: true, closesAt: at("2026-11-22T12:15:00Z"), nextOpening: at("2026-11-22T12:10:00Z")},
		},
		"the earliest next opening of several": {
			windows: []holdfastv1alpha1.MaintenanceWindow{window("0 2 * * *", time.Hour, ""), window("30 20 * * 0", time.Hour, "")},
			want:    windowState{nextOpening: at("2026-11-22T20:30:00Z")},
		},
		"bad schedule":  {windows: []holdfastv1alpha1.MaintenanceWindow{window("every night", time.Hour, "")}, wantErr: true},
		"bad time zone": {windows: []holdfastv1alpha1.MaintenanceWindow{window("0 2 * * *", time.Hour, "Mars/Olympus")}, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := windowsAt(tc.windows, now)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %t", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(windowState{})); diff != "" {
				t.Errorf("windowsAt (-want +got):\n%s", diff)
			}
		})
	}
}

// Outside every window the budget allows nothing and no surge starts; status says until
// when, and the reconcile comes back when the window opens.
func TestDecideOutsideWindows(t *testing.T) {
	nightly := func(s *holdfastv1alpha1.DisruptionPolicySpec) {
		s.MaintenanceWindows = []holdfastv1alpha1.MaintenanceWindow{window("0 2 * * *", 2*time.Hour, "")}
		s.SingleReplica = holdfastv1alpha1.SingleReplicaSurge
	}
	p := policy("p", time.Hour, nightly)
	web := workload(holdfastv1alpha1.KindDeployment, "web", 3)
	agent := workload(holdfastv1alpha1.KindDaemonSet, "agent", 5)
	single := workload(holdfastv1alpha1.KindDeployment, "single", 1)
	d := Decide(Observed{
		Policy: &p, Policies: []holdfastv1alpha1.DisruptionPolicy{p}, Workloads: []Workload{web, agent, single},
		Pods:  map[string][]Pod{"Deployment/single": {{Name: "single-a", Node: "n1", Ready: true}}},
		Nodes: map[string]*corev1.Node{"n1": node("n1", true)},
		Now:   now,
	})
	want := []*policyv1.PodDisruptionBudget{
		budget("p", web, maxUnavailable(intstr.FromInt32(0)), nil),
		budget("p", agent, minAvailable(intstr.FromInt32(5)), nil),
		budget("p", single, maxUnavailable(intstr.FromInt32(0)), nil),
	}
	if diff := cmp.Diff(want, d.Apply); diff != "" {
		t.Errorf("budgets (-want +got):\n%s", diff)
	}
	if len(d.Scales) != 0 {
		t.Errorf("a surge started outside every window: %v", d.Scales)
	}
	if d.RequeueAfter != 14*time.Hour {
		t.Errorf("RequeueAfter = %s, want 14h (the next opening)", d.RequeueAfter)
	}
	c := meta.FindStatusCondition(d.Status.Conditions, holdfastv1alpha1.ConditionWindowOpen)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != holdfastv1alpha1.ReasonOutsideWindows {
		t.Errorf("WindowOpen = %+v, want False/OutsideWindows", c)
	}
	wantWin := &holdfastv1alpha1.WindowStatus{NextOpening: ptrTime(now.Add(14 * time.Hour))}
	if diff := cmp.Diff(wantWin, d.Status.Window); diff != "" {
		t.Errorf("status.window (-want +got):\n%s", diff)
	}
}
