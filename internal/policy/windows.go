package policy

import (
	"fmt"
	"time"
	// Time zones are read from the binary, not the image: a distroless image has none.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// windowState is where now falls among a policy's maintenance windows.
type windowState struct {
	// open is true inside a window, and when the policy has no windows.
	open bool
	// closesAt is when the open window closes (zero without windows).
	closesAt time.Time
	// nextOpening is when the next window opens (zero without windows).
	nextOpening time.Time
}

// windowsAt evaluates the windows at now. A window opens at each time its schedule
// names and stays open for its duration; overlapping windows merge.
func windowsAt(windows []holdfastv1alpha1.MaintenanceWindow, now time.Time) (windowState, error) {
	if len(windows) == 0 {
		return windowState{open: true}, nil
	}
	var st windowState
	for i, w := range windows {
		sched, err := parseSchedule(w)
		if err != nil {
			return windowState{}, fmt.Errorf("spec.maintenanceWindows[%d]: %w", i, err)
		}
		d := w.Duration.Duration
		// The first opening after now-d is the only one that can be open now; later
		// openings before now extend it.
		for t := sched.Next(now.Add(-d)); !t.After(now); t = sched.Next(t) {
			st.open = true
			if end := t.Add(d); end.After(st.closesAt) {
				st.closesAt = end
			}
		}
		if next := sched.Next(now); st.nextOpening.IsZero() || next.Before(st.nextOpening) {
			st.nextOpening = next
		}
	}
	return st, nil
}

// parseSchedule reads a window's cron expression in its time zone.
func parseSchedule(w holdfastv1alpha1.MaintenanceWindow) (cron.Schedule, error) {
	tz := w.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("time zone %q: %w", tz, err)
	}
	sched, err := cron.ParseStandard(w.Schedule)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", w.Schedule, err)
	}
	if s, ok := sched.(*cron.SpecSchedule); ok {
		s.Location = loc
	}
	return sched, nil
}

// windowCondition and windowStatus render the state into status.
func windowCondition(windows []holdfastv1alpha1.MaintenanceWindow, st windowState, err error) metav1.Condition {
	c := metav1.Condition{Type: holdfastv1alpha1.ConditionWindowOpen, Status: metav1.ConditionTrue}
	switch {
	case err != nil:
		// A window that cannot be read confines nothing: budgets stay as declared.
		c.Reason, c.Message = holdfastv1alpha1.ReasonInvalidWindow, err.Error()+": the declared budget applies at all times until it is fixed"
	case len(windows) == 0:
		c.Reason, c.Message = holdfastv1alpha1.ReasonNoWindows, "no maintenance windows: the declared budget applies at all times"
	case st.open:
		c.Reason, c.Message = holdfastv1alpha1.ReasonInWindow, "a maintenance window is open until "+st.closesAt.UTC().Format(time.RFC3339)
	default:
		c.Status, c.Reason = metav1.ConditionFalse, holdfastv1alpha1.ReasonOutsideWindows
		c.Message = "outside every maintenance window: budgets allow no voluntary disruption until " + st.nextOpening.UTC().Format(time.RFC3339)
	}
	return c
}

func windowStatus(windows []holdfastv1alpha1.MaintenanceWindow, st windowState, err error) *holdfastv1alpha1.WindowStatus {
	if len(windows) == 0 || err != nil {
		return nil
	}
	out := &holdfastv1alpha1.WindowStatus{Open: st.open, NextOpening: ptrTime(st.nextOpening)}
	if st.open {
		out.ClosesAt = ptrTime(st.closesAt)
	}
	return out
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}
