package disruptionpolicy

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func window(schedule string, d time.Duration, tz string) holdfastv1alpha1.MaintenanceWindow {
	return holdfastv1alpha1.MaintenanceWindow{Schedule: schedule, Duration: metav1.Duration{Duration: d}, TimeZone: tz}
}

// An invalid window is announced once when it appears and again only when another one
// does, not each time the valid windows beside it open or close.
func TestInvalidWindowEvents(t *testing.T) {
	statusAt := func(at time.Time, windows ...holdfastv1alpha1.MaintenanceWindow) holdfastv1alpha1.DisruptionPolicyStatus {
		p := holdfastv1alpha1.DisruptionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Generation: 1},
			Spec:       holdfastv1alpha1.DisruptionPolicySpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaintenanceWindows: windows},
		}
		return policy.Decide(policy.Observed{Policy: &p, Policies: []holdfastv1alpha1.DisruptionPolicy{p}, Now: at}).Status
	}
	nightly := window("0 2 * * *", time.Hour, "")
	mars := window("0 2 * * *", time.Hour, "Mars/Olympus")
	atlantis := window("0 2 * * *", time.Hour, "Europe/Atlantis")
	valid := statusAt(now, nightly)
	invalid := statusAt(now, nightly, mars)
	if evs := invalidWindowEvents(valid, invalid); len(evs) != 1 || evs[0].Reason != EventInvalidWindow || !strings.Contains(evs[0].Message, "Mars/Olympus") {
		t.Errorf("a window becoming invalid: Events %+v, want one InvalidWindow naming the zone", evs)
	}
	if evs := invalidWindowEvents(invalid, statusAt(now.Add(15*time.Hour), nightly, mars)); len(evs) != 0 {
		t.Errorf("the valid window opened: Events %+v, want none", evs)
	}
	if evs := invalidWindowEvents(invalid, statusAt(now, nightly, atlantis)); len(evs) != 1 || !strings.Contains(evs[0].Message, "Europe/Atlantis") {
		t.Errorf("another invalid window: Events %+v, want one naming it", evs)
	}
	if evs := invalidWindowEvents(invalid, valid); len(evs) != 0 {
		t.Errorf("fixed: Events %+v, want none", evs)
	}
}

func TestInvalidWindowsGauge(t *testing.T) {
	reg := prometheus.NewRegistry()
	g, err := newInvalidWindowsGauge(reg)
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "prod", Name: "p"}
	g.set(key, []holdfastv1alpha1.MaintenanceWindow{window("0 2 * * *", time.Hour, "Mars/Olympus"), window("0 0 30 2 *", time.Hour, ""), window("0 2 * * *", time.Hour, "")}, now)
	want := `
# HELP holdfast_disruptionpolicy_invalid_windows Maintenance windows of a DisruptionPolicy that cannot be read (an unknown time zone, a schedule that never fires); they never open, so outside the policy's other windows its budgets allow no voluntary disruption. Absent for a policy without windows.
# TYPE holdfast_disruptionpolicy_invalid_windows gauge
holdfast_disruptionpolicy_invalid_windows{namespace="prod",policy="p"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	g.set(key, nil, now)
	if n := testutil.CollectAndCount(g.gauge); n != 0 {
		t.Errorf("%d series after the windows were removed, want 0", n)
	}
}
