package cli

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestDisplayName(t *testing.T) {
	for arg0, want := range map[string]string{
		"/home/me/.krew/bin/kubectl-holdfast": "kubectl holdfast",
		`C:\krew\bin\kubectl-holdfast.exe`:    "kubectl holdfast",
		"kubectl-holdfast_dev":                "kubectl holdfast-dev",
		"/usr/local/bin/holdfast":             "holdfast",
		"./bin/holdfast":                      "holdfast",
		"kubectl-":                            "holdfast",
	} {
		if got := displayName(strings.ReplaceAll(arg0, `\`, "/")); got != want {
			t.Errorf("displayName(%q) = %q, want %q", arg0, got, want)
		}
	}
}

// TestPluginHelp is the finding of issue 19: run as kubectl holdfast, help said holdfast.
// Usage lines and examples name the command as it was invoked; prose about holdfast and
// its annotations (holdfast.dev/...) stays.
func TestPluginHelp(t *testing.T) {
	for _, args := range [][]string{{"audit", "--help"}, {"plan", "drain", "--help"}, {"--help"}} {
		var out bytes.Buffer
		cmd := newRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, "kubectl holdfast", &profiling{})
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		help := out.String()
		_, usage, _ := strings.Cut(help, "Usage:")
		for _, line := range strings.Split(usage, "\n") {
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "holdfast ") || strings.Contains(line, "| holdfast ") {
				t.Errorf("%v: line %q invokes holdfast, not kubectl holdfast", args, line)
			}
		}
		if !strings.Contains(help, "kubectl holdfast") {
			t.Errorf("%v: help never says kubectl holdfast:\n%s", args, help)
		}
	}
	var out bytes.Buffer
	cmd := newRootCommand(genericiooptions.IOStreams{Out: &out, ErrOut: &out}, "kubectl holdfast", &profiling{})
	cmd.SetArgs([]string{"audit", "--help"})
	_ = cmd.Execute()
	for _, want := range []string{"  kubectl holdfast audit [-f PATH...] [flags]", "  helm template my-chart | kubectl holdfast audit -f - --fail-on warning", "holdfast.dev/audit-ignore"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("audit --help lacks %q", want)
		}
	}
}

// TestOperatorHelp is the finding of issue 19: operator --help said it runs NodeCompanion
// only.
func TestOperatorHelp(t *testing.T) {
	stdout, _, _ := runAudit(t, "", "operator", "--help")
	for _, controller := range []string{"NodeCompanion", "DisruptionPolicy", "ClusterDisruptionPolicy", "rebalance"} {
		if !strings.Contains(stdout, "\n  "+controller+" ") {
			t.Errorf("operator --help does not describe %s:\n%s", controller, stdout)
		}
	}
}
