// Package cli wires holdfast's commands: one file per command, each an Options struct
// with Complete, Validate and Run, and injected I/O streams so tests compare output.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/holdfast-dev/holdfast/internal/buildinfo"
	"github.com/holdfast-dev/holdfast/internal/operatorcli"
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
	return newRootCommand(streams, "holdfast", &profiling{})
}

// displayName is the name holdfast was invoked by, as its help should show it: run by
// kubectl as the plugin kubectl-holdfast (kubectl runs the plugin by its path), "kubectl
// holdfast"; otherwise "holdfast".
func displayName(arg0 string) string {
	base := strings.TrimSuffix(filepath.Base(arg0), ".exe")
	if plugin, ok := strings.CutPrefix(base, "kubectl-"); ok && plugin != "" {
		// kubectl-foo_bar is the plugin "kubectl foo-bar".
		return "kubectl " + strings.ReplaceAll(plugin, "_", "-")
	}
	return "holdfast"
}

// invocation finds holdfast run at the start of an example's line or after a pipe.
var invocation = regexp.MustCompile(`(?m)(^\s*|\| )holdfast `)

// renameExamples writes the examples of cmd and its subcommands with name.
func renameExamples(cmd *cobra.Command, name string) {
	cmd.Example = invocation.ReplaceAllString(cmd.Example, "${1}"+name+" ")
	for _, c := range cmd.Commands() {
		renameExamples(c, name)
	}
}

func newRootCommand(streams genericiooptions.IOStreams, name string, prof *profiling) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	globals := newKubectlGlobals(streams.ErrOut)
	root := &cobra.Command{
		Use:         "holdfast",
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: name},
		Short:       "Keep Kubernetes workloads available through drains, upgrades and node loss",
		Long: `holdfast finds disruption risks in a live cluster or in manifests, plans node
drains that explain every blocker, drains nodes without taking services down, and runs
an operator that keeps disruption budgets and per-node companions right.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version, as kubectl plugins and most CLIs answer it; holdfast version says more.
		Version: buildinfo.Get().Version,
		// Execute writes the profile: a command's error skips cobra's post-run hooks.
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if err := globals.checkServerVersion(flags); err != nil {
				return err
			}
			return prof.start()
		},
		PersistentPostRunE: func(*cobra.Command, []string) error { return globals.warned() },
	}
	root.SetVersionTemplate("holdfast {{.Version}}\n")
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	flags.AddFlags(root.PersistentFlags())
	globals.addFlags(root.PersistentFlags(), flags)
	prof.addFlags(root.PersistentFlags())
	registerConfigCompletions(root, flags)
	drain := NewDrainCommand(streams, flags)
	uncordon := NewUncordonCommand(streams, flags)
	// Their node arguments complete like plan drain's, from the cluster.
	drain.ValidArgsFunction = completeNodeNames(flags)
	uncordon.ValidArgsFunction = completeNodeNames(flags)
	root.AddCommand(NewVersionCommand(streams, flags))
	root.AddCommand(NewAuditCommand(streams, flags))
	root.AddCommand(operatorcli.NewCommand(flags.ToRESTConfig, streams))
	root.AddCommand(NewInstallCommand(streams, flags))
	root.AddCommand(NewUninstallCommand(streams, flags))
	root.AddCommand(drain)
	root.AddCommand(uncordon)
	root.AddCommand(NewPlanCommand(streams, flags))
	renameExamples(root, name)
	return root
}

// gcPercent is the CLI's GOGC when its environment sets none (`holdfast operator` sets
// its own). A command reads a cluster's objects or manifests and keeps most of what it
// reads to the end, so a collection at the runtime's default, each time the heap has
// doubled, finds little to free: collecting at twice the live heap's growth, an audit of
// 10,000 Deployments took a tenth less CPU in block style and a third less in flow style,
// its peak resident memory 18 to 23 times the file (docs/engineering/performance.md).
const gcPercent = 200

// Execute runs holdfast with os.Args and returns the process exit code.
func Execute(streams genericiooptions.IOStreams) int {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	prof := &profiling{}
	cmd := newRootCommand(streams, displayName(os.Args[0]), prof)
	err := cmd.Execute()
	if perr := prof.stop(); perr != nil {
		fmt.Fprintln(streams.ErrOut, "holdfast:", perr)
		if err == nil {
			return ExitError
		}
	}
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

// contextOf is the command's context, or a background one for a command run without
// (cobra's Execute, as tests call it).
func contextOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
