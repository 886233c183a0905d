package snapshot_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// TestLoadAlternatives is the finding of issue 19: holdfast audit -f examples/ judged one
// file's budget against another file's Deployment, because bad.yaml and fixed.yaml define
// the same objects. Each snapshot lists the files its objects come from.
func TestLoadAlternatives(t *testing.T) {
	tests := map[string]struct {
		paths []string
		want  [][]string
		notes []string
	}{
		"examples/: every bad.yaml and fixed.yaml apart, each with the files of its folder that redefine nothing": {
			paths: []string{"../../examples"},
			want: [][]string{
				{"000-companion-per-node/bad.yaml"}, {"000-companion-per-node/fixed.yaml"},
				{"001-autoscaler-consolidation/bad.yaml"}, {"001-autoscaler-consolidation/fixed.yaml"},
				{"002-scheduler-packing/bad.yaml"}, {"002-scheduler-packing/fixed.yaml"},
				{"003-single-replica-budget/bad.yaml", "003-single-replica-budget/nodes.yaml"},
				{"003-single-replica-budget/fixed.yaml", "003-single-replica-budget/nodes.yaml"},
				{"004-upgrade-mass-drain/bad.yaml", "004-upgrade-mass-drain/nodes.yaml", "004-upgrade-mass-drain/placement.yaml"},
				{"004-upgrade-mass-drain/fixed.yaml", "004-upgrade-mass-drain/nodes.yaml", "004-upgrade-mass-drain/placement.yaml"},
			},
			notes: []string{
				"000-companion-per-node/bad.yaml 000-companion-per-node/fixed.yaml",
				"001-autoscaler-consolidation/bad.yaml 001-autoscaler-consolidation/fixed.yaml",
				"002-scheduler-packing/bad.yaml 002-scheduler-packing/fixed.yaml",
				"003-single-replica-budget/bad.yaml 003-single-replica-budget/fixed.yaml",
				"003-single-replica-budget/nodes.yaml 004-upgrade-mass-drain/nodes.yaml",
				"004-upgrade-mass-drain/bad.yaml 004-upgrade-mass-drain/fixed.yaml",
			},
		},
		"one example's folder: the nodes file with each version": {
			paths: []string{"../../examples/003-single-replica-budget"},
			want:  [][]string{{"bad.yaml", "nodes.yaml"}, {"fixed.yaml", "nodes.yaml"}},
			notes: []string{"bad.yaml fixed.yaml"},
		},
		"one folder per environment: each folder together": {
			paths: []string{"envs"},
			want:  [][]string{{"prod/budget.yaml", "prod/deploy.yaml"}, {"staging/budget.yaml", "staging/deploy.yaml"}},
			notes: []string{"prod/budget.yaml staging/budget.yaml", "prod/deploy.yaml staging/deploy.yaml"},
		},
		"files that share no object: one snapshot": {
			paths: []string{"envs/prod"},
			want:  [][]string{{"budget.yaml", "deploy.yaml"}},
		},
	}
	envs := t.TempDir()
	for _, env := range []string{"prod", "staging"} {
		write(t, filepath.Join(envs, "envs", env, "deploy.yaml"), deployment)
		write(t, filepath.Join(envs, "envs", env, "budget.yaml"), pdb)
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var paths []string
			for _, p := range tc.paths {
				if p == "../../examples" || filepath.Dir(p) == "../../examples" {
					paths = append(paths, p)
				} else {
					paths = append(paths, filepath.Join(envs, p))
				}
			}
			snaps, problems, redefs := snapshot.LoadAlternatives(paths, snapshot.ManifestOptions{})
			if len(problems) > 0 {
				t.Fatalf("problems %v", problems)
			}
			rel := func(file string) string {
				r, _ := filepath.Rel(paths[0], file)
				return filepath.ToSlash(r)
			}
			var got [][]string
			for _, s := range snaps {
				var files []string
				for _, o := range s.Origins {
					files = append(files, rel(o.File))
				}
				slices.Sort(files)
				got = append(got, slices.Compact(files))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("snapshots (-want +got):\n%s", diff)
			}
			var notes []string
			for _, r := range redefs {
				notes = append(notes, rel(r.First.File)+" "+rel(r.Again.File))
			}
			if diff := cmp.Diff(tc.notes, notes); diff != "" {
				t.Errorf("redefinitions (-want +got):\n%s", diff)
			}
		})
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A file shared by two alternatives is read into both, and its problems and warnings are
// those of one file: the problems are reported once.
func TestLoadAlternativesSharedFile(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "bad.yaml"), deployment)
	write(t, filepath.Join(dir, "fixed.yaml"), deployment)
	write(t, filepath.Join(dir, "nodes.yaml"), "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec: {unschedulabel: true}\n---\nkind: [\n")
	snaps, problems, _ := snapshot.LoadAlternatives([]string{dir}, snapshot.ManifestOptions{})
	if len(snaps) != 2 || len(problems) != 1 {
		t.Fatalf("%d snapshots, problems %v; want 2 snapshots and the nodes file's one problem", len(snaps), problems)
	}
	for _, s := range snaps {
		if len(s.Nodes) != 1 || len(s.Warnings) != 1 {
			t.Errorf("snapshot with nodes %d, warnings %v; want the node and its unknown field", len(s.Nodes), s.Warnings)
		}
	}
}

// An object that cannot be decoded defines nothing: a file whose only copy of another's
// object is broken does not split the input, and the broken copy is reported once.
func TestLoadAlternativesBrokenCopyDefinesNothing(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "deploy.yaml"), deployment)
	write(t, filepath.Join(dir, "more.yaml"), strings.Replace(deployment, "replicas: 2", `replicas: "two"`, 1)+
		"---\napiVersion: v1\nkind: Node\nmetadata: {name: n1}\n")
	snaps, problems, redefs := snapshot.LoadAlternatives([]string{dir}, snapshot.ManifestOptions{})
	if len(snaps) != 1 || len(redefs) != 0 {
		t.Fatalf("%d snapshots, redefinitions %v; want one snapshot and none", len(snaps), redefs)
	}
	if len(snaps[0].Deployments) != 1 || len(snaps[0].Nodes) != 1 {
		t.Errorf("snapshot with %d Deployments and %d Nodes, want 1 and 1", len(snaps[0].Deployments), len(snaps[0].Nodes))
	}
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), "more.yaml:6: Deployment/default/web: field spec.replicas") {
		t.Errorf("problems %v, want the broken copy's field", problems)
	}
}
