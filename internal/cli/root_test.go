package cli

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// kubectl's global flags are accepted where a script gives them: klog's -v and --vmodule,
// --match-server-version, which compares the server's minor release with the one
// holdfast's client is built for, and --warnings-as-errors, which turns the server's
// warnings, printed as kubectl prints them, into an error.
func TestKubectlGlobalFlags(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	server := func(minor string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Warning", `299 - "this server is old"`)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"major": "1", "minor": %q, "gitVersion": "v1.%s.0"}`, minor, minor)
		}))
		t.Cleanup(s.Close)
		return s.URL
	}
	release := strings.TrimPrefix(ClientRelease, "1.")
	tests := map[string]struct {
		args            []string
		wantErr, stderr string
	}{
		"-v and --vmodule":                   {args: []string{"-v", "0", "--vmodule=", "version"}},
		"--v=0, kubectl's other spelling":    {args: []string{"--v=0", "version"}},
		"--match-server-version, a match":    {args: []string{"--match-server-version", "--server", server(release), "version"}, stderr: "Warning: this server is old"},
		"--match-server-version, a mismatch": {args: []string{"--match-server-version", "--server", server("20"), "version"}, wantErr: "the server runs Kubernetes v1.20.0, holdfast's client is built for " + ClientRelease},
		"--warnings-as-errors":               {args: []string{"--warnings-as-errors", "--match-server-version", "--server", server(release), "version"}, wantErr: "1 warning received"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			cmd := newRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, "holdfast", &profiling{})
			cmd.SetArgs(tc.args)
			err := cmd.Execute()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
			if !strings.Contains(errOut.String(), tc.stderr) {
				t.Errorf("standard error %q does not say %q", errOut.String(), tc.stderr)
			}
		})
	}
}

// ClientRelease names the client-go go.mod requires.
func TestClientRelease(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	want := "k8s.io/client-go v0." + strings.TrimPrefix(ClientRelease, "1.") + "."
	if !strings.Contains(string(mod), want) {
		t.Errorf("go.mod does not require %q: update ClientRelease", want)
	}
}
