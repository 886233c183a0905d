package policy

import (
	"strings"
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

// rfc3339 parses a time of a test case.
func rfc3339(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestWindowsAt(t *testing.T) {
	// now is Sunday 2026-11-22 12:00 UTC.
	tests := map[string]struct {
		windows []holdfastv1alpha1.MaintenanceWindow
		want    windowState
		wantErr bool
	}{
		"no windows: always open": {want: windowState{open: true}},
		"nightly window, closed at noon": {
			windows: []holdfastv1alpha1.MaintenanceWindow{window("0 2 * * *", 2*time.Hour, "")},
			want:    windowState{nextOpening: rfc3339(t, "2026-11-23T02:00:00Z")},
		},
		"window opened an hour ago": {
			windows: []holdfastv1alpha1.MaintenanceWindow{window("0 11 * * *", 2*time.Hour, "UTC")},
			want:    windowState{open: true, closesAt: rfc3339(t, "2026-11-22T13:00:00Z"), nextOpening: rfc3339(t, "2026-11-23T11:00:00Z")},
		},
		"window opening exactly now is open": {
			windows: []holdfastv1alpha1.MaintenanceWindow{window("0 12 * * *", time.Minute, "")},
			want:    windowState{open: true, closesAt: rfc3339(t, "2026-11-22T12:01:00Z"), nextOpening: rfc3339(t, "2026-11-23T12:00:00Z")},
		},
		"time zone: noon in Paris is 11:00 UTC, closed again by 12:00 UTC": {
			windows: []holdfastv1alpha1.MaintenanceWindow{window("0 12 * * *", 30*time.Minute, "Europe/Paris")},
			want:    windowState{nextOpening: rfc3339(t, "2026-11-23T11:00:00Z")},
		},
		"overlapping openings merge": {
			windows: []holdfastv1alpha1.MaintenanceWindow{window("*/10 * * * *", 15*time.Minute, "")},
			want:    windowState{open: true, closesAt: rfc3339(t, "2026-11-22T12:15:00Z"), nextOpening: rfc3339(t, "2026-11-22T12:10:00Z")},
		},
		"the earliest next opening of several": {
			windows: []holdfastv1alpha1.MaintenanceWindow{window("0 2 * * *", time.Hour, ""), window("30 20 * * 0", time.Hour, "")},
			want:    windowState{nextOpening: rfc3339(t, "2026-11-22T20:30:00Z")},
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
	if diff := cmp.Diff(want, resultOf(d).Apply); diff != "" {
		t.Errorf("budgets (-want +got):\n%s", diff)
	}
	if len(resultOf(d).Surges) != 0 {
		t.Errorf("a surge started outside every window: %v", resultOf(d).Surges)
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

// walkWindows is the reference windowsAt bisects its way around: it walks every opening
// after now-d, one schedule look-up each.
func walkWindows(t *testing.T, windows []holdfastv1alpha1.MaintenanceWindow, now time.Time) windowState {
	t.Helper()
	var st windowState
	for _, w := range windows {
		sched, err := parseSchedule(w)
		if err != nil {
			t.Fatal(err)
		}
		d := w.Duration.Duration
		for o := sched.Next(now.Add(-d)); !o.After(now); o = sched.Next(o) {
			st.open = true
			if end := o.Add(d); end.After(st.closesAt) {
				st.closesAt = end
			}
		}
		if next := sched.Next(now); st.nextOpening.IsZero() || next.Before(st.nextOpening) {
			st.nextOpening = next
		}
	}
	return st
}

// windowsAt agrees with walking every opening, around the changes to and from daylight
// saving time (where an hour is skipped or repeated) and for durations from a minute to
// a month, every 7 minutes over 12 hours on either side of each change.
func TestWindowsAtAgreesWithWalk(t *testing.T) {
	changes := []struct {
		tz string
		at string
	}{
		{"Europe/Paris", "2026-03-29T01:00:00Z"},     // 02:00 CET becomes 03:00 CEST
		{"Europe/Paris", "2026-10-25T01:00:00Z"},     // 03:00 CEST becomes 02:00 CET
		{"America/New_York", "2026-03-08T07:00:00Z"}, // 02:00 EST becomes 03:00 EDT
		{"America/New_York", "2026-11-01T06:00:00Z"}, // 02:00 EDT becomes 01:00 EST
	}
	schedules := []struct {
		schedule  string
		durations []time.Duration
	}{
		{"* * * * *", []time.Duration{time.Minute, 90 * time.Minute}},
		{"*/7 * * * *", []time.Duration{5 * time.Minute, 3 * time.Hour}},
		{"30 2 * * *", []time.Duration{time.Hour, 25 * time.Hour, 72 * time.Hour}},
		{"0 1-3 * * *", []time.Duration{30 * time.Minute, 2 * time.Hour}},
		{"15 */3 * * 0,6", []time.Duration{time.Hour, 744 * time.Hour}},
		{"0 0 1 * *", []time.Duration{744 * time.Hour}},
	}
	for _, c := range changes {
		at := rfc3339(t, c.at)
		for _, s := range schedules {
			for _, d := range s.durations {
				windows := []holdfastv1alpha1.MaintenanceWindow{window(s.schedule, d, c.tz)}
				for now := at.Add(-12 * time.Hour); now.Before(at.Add(12 * time.Hour)); now = now.Add(7*time.Minute + 13*time.Second) {
					got, err := windowsAt(windows, now)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(walkWindows(t, windows, now), got, cmp.AllowUnexported(windowState{})); diff != "" {
						t.Fatalf("%s for %s in %s at %s (-walk +windowsAt):\n%s", s.schedule, d, c.tz, now.Format(time.RFC3339), diff)
					}
				}
			}
		}
	}
}

// A window that cannot be read never opens, whatever the others do: the policy fails
// closed, and the error names each one.
func TestWindowsAtInvalidFailsClosed(t *testing.T) {
	tests := map[string]struct {
		windows []holdfastv1alpha1.MaintenanceWindow
		want    windowState
		errs    []string
	}{
		"unknown time zone alone: closed, no next opening": {
			windows: []holdfastv1alpha1.MaintenanceWindow{window("* * * * *", time.Hour, "Mars/Olympus")},
			errs:    []string{`spec.maintenanceWindows[0]: time zone "Mars/Olympus"`},
		},
		"a schedule that never fires": {
			windows: []holdfastv1alpha1.MaintenanceWindow{window("0 0 30 2 *", time.Hour, "")},
			errs:    []string{`spec.maintenanceWindows[0]: schedule "0 0 30 2 *" never fires`},
		},
		"a reversed range, beside a valid window that is open": {
			windows: []holdfastv1alpha1.MaintenanceWindow{window("0 5-1 * * *", time.Hour, ""), window("0 11 * * *", 2*time.Hour, "")},
			want:    windowState{open: true, closesAt: rfc3339(t, "2026-11-22T13:00:00Z"), nextOpening: rfc3339(t, "2026-11-23T11:00:00Z")},
			errs:    []string{`spec.maintenanceWindows[0]: schedule "0 5-1 * * *"`},
		},
		"an unknown zone beside a valid window that is closed": {
			windows: []holdfastv1alpha1.MaintenanceWindow{window("0 2 * * *", time.Hour, "UTC"), window("* * * * *", time.Hour, "Europe/Atlantis")},
			want:    windowState{nextOpening: rfc3339(t, "2026-11-23T02:00:00Z")},
			errs:    []string{`spec.maintenanceWindows[1]: time zone "Europe/Atlantis"`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := windowsAt(tc.windows, now)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(windowState{})); diff != "" {
				t.Errorf("windowsAt (-want +got):\n%s", diff)
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, e := range tc.errs {
				if !strings.Contains(err.Error(), e) {
					t.Errorf("error %q does not contain %q", err, e)
				}
			}
		})
	}
}

// Outside the valid windows, or with none that can open, an invalid window keeps the
// budgets closed and says so in the WindowOpen condition.
func TestDecideInvalidWindowFailsClosed(t *testing.T) {
	p := policy("p", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
		s.MaintenanceWindows = []holdfastv1alpha1.MaintenanceWindow{window("0 2 * * *", 2*time.Hour, "Mars/Olympus")}
	})
	web := workload(holdfastv1alpha1.KindDeployment, "web", 3)
	d := Decide(Observed{Policy: &p, Policies: []holdfastv1alpha1.DisruptionPolicy{p}, Workloads: []Workload{web}, Now: now})
	want := []*policyv1.PodDisruptionBudget{budget("p", web, maxUnavailable(intstr.FromInt32(0)), nil)}
	if diff := cmp.Diff(want, resultOf(d).Apply); diff != "" {
		t.Errorf("budgets (-want +got):\n%s", diff)
	}
	if d.RequeueAfter != 0 {
		t.Errorf("RequeueAfter = %s, want none: only a change to the policy can fix it", d.RequeueAfter)
	}
	c := meta.FindStatusCondition(d.Status.Conditions, holdfastv1alpha1.ConditionWindowOpen)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != holdfastv1alpha1.ReasonInvalidWindow || !strings.Contains(c.Message, "Mars/Olympus") {
		t.Errorf("WindowOpen = %+v, want False/InvalidWindow naming the zone", c)
	}
	if diff := cmp.Diff(&holdfastv1alpha1.WindowStatus{}, d.Status.Window); diff != "" {
		t.Errorf("status.window (-want +got):\n%s", diff)
	}
}

// BenchmarkWindowsAt is the worst case the API server accepted before the schema
// bounded durations: an opening every minute, open for a year (525,600 openings to walk).
func BenchmarkWindowsAt(b *testing.B) {
	windows := []holdfastv1alpha1.MaintenanceWindow{window("* * * * *", 8760*time.Hour, "Europe/Paris")}
	for b.Loop() {
		if _, err := windowsAt(windows, now); err != nil {
			b.Fatal(err)
		}
	}
}
