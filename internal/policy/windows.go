package policy

import (
	"errors"
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
	// nextOpening is when the next window opens (zero without windows, or when no valid
	// window ever opens again).
	nextOpening time.Time
}

// windowsAt evaluates the windows at now. A window opens at each time its schedule
// names and stays open for its duration; of overlapping openings, the latest decides
// when the window closes.
//
// A window that cannot be read (a time zone the binary does not know, a schedule that
// does not parse or never fires) never opens: the policy fails closed, and the error
// names every such window. The others are evaluated as usual. Maintenance windows say
// when disrupting the workloads is acceptable; a window that cannot be read says
// nothing of the kind, and a drain that waits can be resumed once it is fixed, while a
// disruption at a forbidden hour cannot be undone.
//
// Each window costs a constant number of schedule look-ups, whatever its schedule and
// duration (see latestOpening).
func windowsAt(windows []holdfastv1alpha1.MaintenanceWindow, now time.Time) (windowState, error) {
	if len(windows) == 0 {
		return windowState{open: true}, nil
	}
	var st windowState
	var errs []error
	for i, w := range windows {
		sched, next, err := readWindow(w, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("spec.maintenanceWindows[%d]: %w", i, err))
			continue
		}
		if st.nextOpening.IsZero() || next.Before(st.nextOpening) {
			st.nextOpening = next
		}
		d := w.Duration.Duration
		// Only an opening after now-d can be open now.
		if first := sched.Next(now.Add(-d)); first.IsZero() || first.After(now) {
			continue
		}
		st.open = true
		if end := latestOpening(sched, now.Add(-d), now).Add(d); end.After(st.closesAt) {
			st.closesAt = end
		}
	}
	return st, errors.Join(errs...)
}

// readWindow parses a window and finds its next opening after now; an error says why
// the window can never open.
func readWindow(w holdfastv1alpha1.MaintenanceWindow, now time.Time) (cron.Schedule, time.Time, error) {
	sched, err := parseSchedule(w)
	if err != nil {
		return nil, time.Time{}, err
	}
	next := sched.Next(now)
	if next.IsZero() {
		// robfig/cron gives up after five years: a schedule such as "0 0 30 2 *" never
		// fires.
		return nil, time.Time{}, fmt.Errorf("schedule %q never fires", w.Schedule)
	}
	return sched, next, nil
}

// InvalidWindows counts the windows that cannot be read, which never open.
func InvalidWindows(windows []holdfastv1alpha1.MaintenanceWindow, now time.Time) int {
	n := 0
	for _, w := range windows {
		if _, _, err := readWindow(w, now); err != nil {
			n++
		}
	}
	return n
}

// latestOpening is the last time sched names in (after, now], given that there is one.
// robfig/cron only looks forward, and walking the openings one by one costs as many
// look-ups as there are openings (525,600 for "* * * * *" over a year); instead it
// bisects: Next(x) <= now holds for every x before the latest opening and for none at
// or after it, so about 25 look-ups narrow a year down to the second, the schedule's
// own resolution.
func latestOpening(sched cron.Schedule, after, now time.Time) time.Time {
	lo, hi := after, now // Next(lo) <= now < Next(hi)
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2)
		if next := sched.Next(mid); !next.IsZero() && !next.After(now) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return sched.Next(lo)
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

// InvalidWindowNote follows the errors of invalid windows in the WindowOpen condition.
const InvalidWindowNote = "; a window that cannot be read never opens"

// windowCondition and windowStatus render the state into status.
func windowCondition(windows []holdfastv1alpha1.MaintenanceWindow, st windowState, err error) metav1.Condition {
	c := metav1.Condition{Type: holdfastv1alpha1.ConditionWindowOpen, Status: metav1.ConditionTrue}
	switch {
	case err != nil:
		c.Reason = holdfastv1alpha1.ReasonInvalidWindow
		c.Message = err.Error() + InvalidWindowNote
		switch {
		case st.open:
			c.Message += ": another is open until " + st.closesAt.UTC().Format(time.RFC3339)
		case st.nextOpening.IsZero():
			c.Status = metav1.ConditionFalse
			c.Message += ": budgets allow no voluntary disruption until it is fixed"
		default:
			c.Status = metav1.ConditionFalse
			c.Message += ": budgets allow no voluntary disruption until " + st.nextOpening.UTC().Format(time.RFC3339)
		}
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

func windowStatus(windows []holdfastv1alpha1.MaintenanceWindow, st windowState, _ error) *holdfastv1alpha1.WindowStatus {
	if len(windows) == 0 {
		return nil
	}
	out := &holdfastv1alpha1.WindowStatus{Open: st.open}
	if !st.nextOpening.IsZero() {
		out.NextOpening = ptrTime(st.nextOpening)
	}
	if st.open {
		out.ClosesAt = ptrTime(st.closesAt)
	}
	return out
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}
