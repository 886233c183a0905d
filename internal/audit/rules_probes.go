package audit

import (
	"fmt"
	"strings"

	"github.com/holdfast-dev/holdfast/internal/availability"
)

func noReadinessProbe(_ *availability.Model, w *availability.Workload) *Result {
	if len(w.Facts.NoReadiness) == 0 {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("%s: container %s has no readinessProbe, so a replacement pod counts as ready the moment it starts: during a drain or rollout the budget lets the next pod go before the new one can serve.",
			describe(w), strings.Join(w.Facts.NoReadiness, ", ")),
		Fix: probeFix(w, w.Facts.NoReadiness, "readinessProbe"),
	}
}

func noLivenessProbe(_ *availability.Model, w *availability.Workload) *Result {
	if len(w.Facts.NoLiveness) == 0 {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("%s: container %s has no livenessProbe, so a hung process is never restarted and keeps its pod in service while it fails.",
			describe(w), strings.Join(w.Facts.NoLiveness, ", ")),
		Fix: probeFix(w, w.Facts.NoLiveness, "livenessProbe"),
	}
}
