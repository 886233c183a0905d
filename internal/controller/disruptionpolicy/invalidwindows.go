package disruptionpolicy

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/announce"
	"github.com/holdfast-dev/holdfast/internal/controller/collectors"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// EventInvalidWindow is the Warning Event of a policy with a maintenance window that
// cannot be read (an unknown time zone, a schedule that never fires): the window never
// opens, so the policy allows less than it says, and someone must fix it.
const EventInvalidWindow = "InvalidWindow"

// invalidWindowsGauge exports holdfast_disruptionpolicy_invalid_windows, for an alert
// that does not depend on anyone reading status or Events.
type invalidWindowsGauge struct {
	gauge *prometheus.GaugeVec
}

func newInvalidWindowsGauge(reg prometheus.Registerer) (*invalidWindowsGauge, error) {
	g, err := collectors.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "holdfast_disruptionpolicy_invalid_windows",
		Help: "Maintenance windows of a DisruptionPolicy that cannot be read (an unknown time zone, a schedule that never fires); they never open, so outside the policy's other windows its budgets allow no voluntary disruption. Absent for a policy without windows.",
	}, []string{"namespace", "policy"}))
	if err != nil {
		return nil, fmt.Errorf("registering DisruptionPolicy metrics: %w", err)
	}
	return &invalidWindowsGauge{gauge: g}, nil
}

func (g *invalidWindowsGauge) set(key types.NamespacedName, windows []holdfastv1alpha1.MaintenanceWindow, now time.Time) {
	if len(windows) == 0 {
		g.forget(key)
		return
	}
	g.gauge.WithLabelValues(key.Namespace, key.Name).Set(float64(policy.InvalidWindows(windows, now)))
}

func (g *invalidWindowsGauge) forget(key types.NamespacedName) {
	g.gauge.DeleteLabelValues(key.Namespace, key.Name)
}

// invalidWindowEvents returns the Warning Event of an invalid window when the move from
// old to cur status newly reports one, or reports another: once per change, not on every
// opening and closing of the windows that still work (whose times the condition's
// message carries after the invalid ones).
func invalidWindowEvents(old, cur holdfastv1alpha1.DisruptionPolicyStatus) []announce.Event {
	c := meta.FindStatusCondition(cur.Conditions, holdfastv1alpha1.ConditionWindowOpen)
	if c == nil || c.Reason != holdfastv1alpha1.ReasonInvalidWindow {
		return nil
	}
	why, _, _ := strings.Cut(c.Message, policy.InvalidWindowNote)
	if prev := meta.FindStatusCondition(old.Conditions, holdfastv1alpha1.ConditionWindowOpen); prev != nil && prev.Reason == c.Reason {
		if was, _, _ := strings.Cut(prev.Message, policy.InvalidWindowNote); was == why {
			return nil
		}
	}
	return []announce.Event{announce.Warning(EventInvalidWindow, why+policy.InvalidWindowNote+": outside the other windows, if any, budgets allow no voluntary disruption until it is fixed")}
}
