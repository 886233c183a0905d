package disruptionpolicy

import (
	"fmt"
	"os"
)

// A failpoint is a test hook, for the end-to-end tests of crash safety only: the
// operator started with FailpointEnv naming one exits at that point, as a kill would
// (no deferred function runs, the leader Lease is not released). It is read once, when
// the controller is set up; unset, it costs one comparison per point passed.
const (
	// FailpointEnv names the failpoint the operator exits at.
	FailpointEnv = "HOLDFAST_FAILPOINT"
	// FailAfterSurge is right after a surge set write, before the effects that follow
	// it (pod annotations, budget deletions) and status: a surge set made or resized
	// that the policy's status does not tell of yet.
	FailAfterSurge = "after-surge"
	// FailBeforeLoosening is after the budget writes that tighten and before the first
	// write that loosens (a budget update that allows more, or a pod's zone label set):
	// zone-aware budgets in the middle of a transition.
	FailBeforeLoosening = "before-loosening"
	// FailpointExitCode is the exit code of an operator stopped at its failpoint.
	FailpointExitCode = 86
)

type failpoint string

// failpointFromEnv returns the failpoint FailpointEnv names, "" for none.
func failpointFromEnv() (failpoint, error) {
	fp := failpoint(os.Getenv(FailpointEnv))
	switch fp {
	case "", FailAfterSurge, FailBeforeLoosening:
		return fp, nil
	}
	return "", fmt.Errorf("environment variable %s=%q names no failpoint: use %s or %s", FailpointEnv, fp, FailAfterSurge, FailBeforeLoosening)
}

// at exits the process when point is the failpoint set.
func (fp failpoint) at(point failpoint) {
	if fp != "" && fp == point {
		fmt.Fprintf(os.Stderr, "holdfast: exiting at failpoint %s\n", point)
		os.Exit(FailpointExitCode)
	}
}
