package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Helm runs the helm pinned in hack/tools/go.mod against the testbed and returns its
// standard output; its error carries its standard error.
func (c *Cluster) Helm(ctx context.Context, args ...string) ([]byte, error) {
	root := RepoRoot()
	cmd := exec.CommandContext(ctx, "go", append([]string{"tool", "-modfile=" + filepath.Join(root, "hack", "tools", "go.mod"),
		"helm", "--kubeconfig", c.Kubeconfig}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

var packaged struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// Chart is the chart as a release publishes it: the archive HOLDFAST_CHART names (make
// release's dist/holdfast-VERSION.tgz), or else the source packaged once by the
// release's own step, hack/chart.sh, which lints it strictly first, as the release the
// VERSION file names.
func (f *Framework) Chart() string {
	f.T.Helper()
	if chart := os.Getenv("HOLDFAST_CHART"); chart != "" {
		abs, err := filepath.Abs(chart)
		if err != nil {
			f.T.Fatal(err)
		}
		return abs
	}
	packaged.once.Do(func() {
		// The testbed's folder, removed with the testbed.
		dir := filepath.Join(f.Dir, "chart")
		version, err := os.ReadFile(filepath.Join(RepoRoot(), "VERSION"))
		if err != nil {
			packaged.err = err
			return
		}
		release := strings.TrimSpace(string(version))
		cmd := exec.Command(filepath.Join(RepoRoot(), "hack", "chart.sh"), dir, strings.TrimPrefix(release, "v"), release)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		packaged.path, packaged.err, packaged.out = strings.TrimSpace(string(out)), err, stderr.Bytes()
	})
	if packaged.err != nil {
		f.T.Fatalf("hack/chart.sh: %v\n%s", packaged.err, packaged.out)
	}
	return packaged.path
}
