package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/holdfast-dev/holdfast/internal/audit"
)

// complete runs cobra's hidden __complete command, as a shell's completion script does,
// and returns the candidates (descriptions dropped) and the directive line.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	stdout, stderr, code := runAudit(t, "", append([]string{"__complete"}, args...)...)
	if code != ExitOK {
		t.Fatalf("__complete %v: exit %d, stderr %q", args, code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	var got []string
	for _, l := range lines[:len(lines)-1] {
		name, _, _ := strings.Cut(l, "\t")
		got = append(got, name)
	}
	return got, lines[len(lines)-1]
}

// TestStaticCompletions is the finding of issue 19: completion returned nothing for -o,
// --fail-on or --explain. Node names and namespaces come from the cluster: the e2e test
// test/e2e/cli checks them on the testbed.
func TestStaticCompletions(t *testing.T) {
	var rules []string
	for i := 1; i <= len(audit.Rules()); i++ {
		rules = append(rules, fmt.Sprintf("HF%03d", i))
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: prod, cluster: {server: "https://prod.invalid"}}, {name: lab, cluster: {server: "https://lab.invalid"}}]
users: [{name: admin, user: {token: x}}]
contexts: [{name: prod-admin, context: {cluster: prod, user: admin}}, {name: lab-admin, context: {cluster: lab, user: admin}}]
current-context: lab-admin
`), 0o600); err != nil {
		t.Fatal(err)
	}
	formats := []string{"json", "yaml", "kyaml", "go-template", "go-template-file", "template", "templatefile", "jsonpath", "jsonpath-as-json", "jsonpath-file"}
	tests := map[string]struct {
		args []string
		want []string
	}{
		"audit -o":        {args: []string{"audit", "-o", ""}, want: append([]string{"table", "wide", "compact", "sarif"}, formats...)},
		"plan failure -o": {args: []string{"plan", "failure", "-o", ""}, want: append([]string{"table"}, formats...)},
		"version -o":      {args: []string{"version", "-o", ""}, want: append([]string{"text"}, formats...)},
		"--fail-on":       {args: []string{"audit", "--fail-on", ""}, want: []string{"error", "warning", "info"}},
		"--explain":       {args: []string{"audit", "--explain", ""}, want: rules},
		"--ignore":        {args: []string{"audit", "--ignore", "HF0"}, want: rules},
		"--context":       {args: []string{"--kubeconfig", kubeconfig, "audit", "--context", ""}, want: []string{"lab-admin", "prod-admin"}},
		"--cluster":       {args: []string{"--kubeconfig", kubeconfig, "plan", "drain", "--cluster", ""}, want: []string{"lab", "prod"}},
		"completion":      {args: []string{"completion", ""}, want: []string{"bash", "fish", "powershell", "zsh"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, directive := complete(t, tc.args...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("candidates (-want +got):\n%s", diff)
			}
			if name != "completion" && directive != ":4" {
				t.Errorf("directive %s, want :4 (no file completion)", directive)
			}
		})
	}
}
