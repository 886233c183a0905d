package operatorcli_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/holdfast-dev/holdfast/internal/cli"
	"github.com/holdfast-dev/holdfast/internal/operatorcli"
)

// cliOnly are the holdfast CLI's global flags that the operator-only binary leaves out:
// a discovery cache, profiling of a CLI run and checks made around a CLI command.
var cliOnly = []string{"cache-dir", "match-server-version", "profile", "profile-output", "warnings-as-errors"}

// The operator-only binary's `operator` takes the flags of `holdfast operator`, with the
// same shorthands, defaults and types, but for the CLI's own globals.
func TestOperatorOnlyFlags(t *testing.T) {
	flags := func(root *cobra.Command) map[string]string {
		op, _, err := root.Find([]string{"operator"})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		op.Flags().AddFlagSet(op.InheritedFlags())
		op.Flags().VisitAll(func(f *pflag.Flag) {
			got[f.Name] = f.Shorthand + " " + f.Value.Type() + " " + f.DefValue
		})
		return got
	}
	streams := genericiooptions.NewTestIOStreamsDiscard()
	want := flags(cli.NewRootCommand(streams))
	for _, name := range cliOnly {
		if _, ok := want[name]; !ok {
			t.Errorf("holdfast operator has no --%s: take it off cliOnly", name)
		}
		delete(want, name)
	}
	root := operatorcli.NewRootCommand(streams)
	got := flags(root)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("flags of the operator-only binary's operator (-holdfast operator +operator-only):\n%s", diff)
	}
	var commands []string
	for _, c := range root.Commands() {
		commands = append(commands, c.Name())
	}
	if !slices.Equal(commands, []string{"operator"}) {
		t.Errorf("the operator-only binary's commands are %v, want operator alone", commands)
	}
}
