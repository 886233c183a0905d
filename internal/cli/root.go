// Package cli wires holdfast's commands: one file per command, each an Options struct
// with Complete, Validate and Run, and injected I/O streams so tests compare output.
package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Exit codes are part of holdfast's interface: scripts and CI rely on them.
const (
	ExitOK       = 0 // the command did what was asked and found nothing at or above --fail-on
	ExitError    = 1 // the command could not do what was asked
	ExitFindings = 2 // the command worked and found problems at or above --fail-on
)

// ExitCodeError carries an exit code other than ExitError through cobra.
type ExitCodeError struct {
	Code int
	Err  error
}

func (e *ExitCodeError) Error() string { return e.Err.Error() }
func (e *ExitCodeError) Unwrap() error { return e.Err }

// DefaultStreams returns the process's standard streams.
func DefaultStreams() genericiooptions.IOStreams {
	return genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}

// NewRootCommand builds the holdfast command tree.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:   "holdfast",
		Short: "Keep Kubernetes workloads available through drains, upgrades and node loss",
		Long: `holdfast finds disruption risks in a live cluster or in manifests, plans node
drains that explain every blocker, drains nodes without taking services down, and runs
an operator that keeps disruption budgets and per-node companions right.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	flags.AddFlags(root.PersistentFlags())
	root.AddCommand(NewVersionCommand(streams))
	root.AddCommand(NewAuditCommand(streams, flags))
	root.AddCommand(NewOperatorCommand(flags, streams))
	root.AddCommand(NewInstallCommand(streams, flags))
	root.AddCommand(NewDrainCommand(streams, flags))
	root.AddCommand(NewPlanCommand(streams, flags))
	return root
}

// Execute runs holdfast with os.Args and returns the process exit code.
func Execute(streams genericiooptions.IOStreams) int {
	cmd := NewRootCommand(streams)
	err := cmd.Execute()
	if err == nil {
		return ExitOK
	}
	var coded *ExitCodeError
	if errors.As(err, &coded) {
		if coded.Err != nil {
			fmt.Fprintln(streams.ErrOut, "holdfast:", coded.Err)
		}
		return coded.Code
	}
	fmt.Fprintln(streams.ErrOut, "holdfast:", err)
	return ExitError
}
