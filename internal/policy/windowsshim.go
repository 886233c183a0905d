package policy

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// WindowState is windowState for the DisruptionPolicy decision while it still lives in
// its controller; it goes once the decision moves here.
type WindowState struct {
	Open                  bool
	ClosesAt, NextOpening time.Time
}

// WindowsAt is windowsAt, exported.
func WindowsAt(windows []holdfastv1alpha1.MaintenanceWindow, now time.Time) (WindowState, error) {
	s, err := windowsAt(windows, now)
	return WindowState{Open: s.open, ClosesAt: s.closesAt, NextOpening: s.nextOpening}, err
}

// WindowCondition is windowCondition, exported.
func WindowCondition(windows []holdfastv1alpha1.MaintenanceWindow, st WindowState, err error) metav1.Condition {
	return windowCondition(windows, windowState{open: st.Open, closesAt: st.ClosesAt, nextOpening: st.NextOpening}, err)
}

// WindowStatus is windowStatus, exported.
func WindowStatus(windows []holdfastv1alpha1.MaintenanceWindow, st WindowState, err error) *holdfastv1alpha1.WindowStatus {
	return windowStatus(windows, windowState{open: st.Open, closesAt: st.ClosesAt, nextOpening: st.NextOpening}, err)
}
