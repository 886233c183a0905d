//go:build e2e

package audit_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/holdfast-dev/holdfast/internal/cli"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// complete runs cobra's hidden __complete command in-process against the testbed, as a
// shell's completion script runs it, and returns the candidates and the directive.
func complete(f *framework.Framework, args ...string) ([]string, string) {
	f.T.Helper()
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"__complete", "--kubeconfig", f.Kubeconfig}, args...))
	if err := cmd.Execute(); err != nil {
		f.T.Fatalf("__complete %v: %v\n%s", args, err, errOut.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	return lines[:len(lines)-1], lines[len(lines)-1]
}

// TestCompletion is the finding of issue 19: shell completion returned nothing for node
// names. Nodes and namespaces are listed live from the cluster of the kube context.
func TestCompletion(t *testing.T) {
	f := framework.New(t)
	for _, args := range [][]string{{"drain", ""}, {"plan", "drain", ""}} {
		got, directive := complete(f, args...)
		for _, n := range f.Nodes {
			if !slices.Contains(got, n) {
				t.Errorf("%v: candidates %v lack node %s", args, got, n)
			}
		}
		if directive != ":4" {
			t.Errorf("%v: directive %s, want :4 (no file completion)", args, directive)
		}
	}
	// Nodes already named are not offered again; a prefix narrows the list.
	got, _ := complete(f, "plan", "drain", f.Nodes[0], "node-")
	if slices.Contains(got, f.Nodes[0]) || !slices.Contains(got, f.Nodes[1]) {
		t.Errorf("plan drain %s node-: candidates %v", f.Nodes[0], got)
	}
	prefix := f.Namespace[:len(f.Namespace)-3]
	for _, args := range [][]string{{"audit", "-n", prefix}, {"plan", "failure", "--namespace", prefix}} {
		if got, _ := complete(f, args...); !slices.Equal(got, []string{f.Namespace}) {
			t.Errorf("%v: candidates %v, want [%s]", args, got, f.Namespace)
		}
	}
}

// TestKubectlPlugin runs holdfast as kubectl runs a plugin: built as kubectl-holdfast on
// the PATH of the testbed's kubectl. Help and examples say kubectl holdfast, the audit of
// the live namespace works, and kubectl's plugin completion (kubectl holdfast __complete)
// lists the nodes.
func TestKubectlPlugin(t *testing.T) {
	f := framework.New(t)
	kubectl, err := framework.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "kubectl-holdfast"), "./cmd/holdfast")
	build.Dir = framework.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := func(args ...string) string {
		t.Helper()
		// kubectl finds a plugin only when its name comes before any flag; KUBECONFIG
		// carries the testbed to it.
		cmd := exec.CommandContext(f.Ctx, kubectl, args...)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+f.Kubeconfig)
		out, err := cmd.Output()
		var exit *exec.ExitError
		if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == cli.ExitFindings) {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if help := run("holdfast", "audit", "--help"); !strings.Contains(help, "\n  kubectl holdfast audit [-f PATH...] [flags]\n") ||
		!strings.Contains(help, "\n  kubectl holdfast audit -A\n") {
		t.Errorf("kubectl holdfast audit --help:\n%s", help)
	}
	if out := run("holdfast", "audit", "-n", f.Namespace); !strings.Contains(out, "computed from live.") {
		t.Errorf("kubectl holdfast audit -n %s:\n%s", f.Namespace, out)
	}
	if out := run("holdfast", "__complete", "drain", ""); !strings.Contains(out, f.Nodes[0]+"\n") {
		t.Errorf("kubectl holdfast __complete drain: %q lacks %s", out, f.Nodes[0])
	}
}
