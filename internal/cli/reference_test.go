package cli

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra/doc"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

var updateReference = flag.Bool("update", false, "write docs/commands from the commands' help")

// The commands' help lives once, in the code; docs/commands is written from it
// (go test ./internal/cli -run TestCommandReference -update), and this test fails when
// the two differ.
func TestCommandReference(t *testing.T) {
	// Defaults under the home directory (the kubeconfig cache) read as ~ for any user.
	t.Setenv("HOME", "~")
	root := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	root.DisableAutoGenTag = true
	dir := filepath.Join("..", "..", "docs", "commands")
	if *updateReference {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := doc.GenMarkdownTree(root, dir); err != nil {
			t.Fatal(err)
		}
		return
	}
	got := t.TempDir()
	if err := doc.GenMarkdownTree(root, got); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("%v: write it with go test ./internal/cli -run TestCommandReference -update", err)
	}
	made, err := os.ReadDir(got)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != len(made) {
		t.Errorf("docs/commands holds %d pages, the commands make %d: run go test ./internal/cli -run TestCommandReference -update", len(want), len(made))
	}
	for _, e := range made {
		m, err := os.ReadFile(filepath.Join(got, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		w, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || string(w) != string(m) {
			t.Errorf("docs/commands/%s differs from the command's help: run go test ./internal/cli -run TestCommandReference -update", e.Name())
		}
	}
}
