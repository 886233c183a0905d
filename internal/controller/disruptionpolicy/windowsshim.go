package disruptionpolicy

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	core "github.com/holdfast-dev/holdfast/internal/policy"
)

// windowState and the functions below reach the windows in internal/policy until the
// decision moves there too.
type windowState struct {
	open                  bool
	closesAt, nextOpening time.Time
}

func windowsAt(windows []holdfastv1alpha1.MaintenanceWindow, now time.Time) (windowState, error) {
	s, err := core.WindowsAt(windows, now)
	return windowState{open: s.Open, closesAt: s.ClosesAt, nextOpening: s.NextOpening}, err
}

func windowCondition(windows []holdfastv1alpha1.MaintenanceWindow, st windowState, err error) metav1.Condition {
	return core.WindowCondition(windows, core.WindowState{Open: st.open, ClosesAt: st.closesAt, NextOpening: st.nextOpening}, err)
}

func windowStatus(windows []holdfastv1alpha1.MaintenanceWindow, st windowState, err error) *holdfastv1alpha1.WindowStatus {
	return core.WindowStatus(windows, core.WindowState{Open: st.open, ClosesAt: st.closesAt, NextOpening: st.nextOpening}, err)
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}
