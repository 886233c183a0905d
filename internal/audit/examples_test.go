package audit_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/holdfast-dev/holdfast/internal/audit"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// TestExamples audits examples/: each bad manifest shows the misconfigurations its
// directory is named after, and its fixed version audits clean.
func TestExamples(t *testing.T) {
	bad := map[string][]string{
		"000-companion-per-node":       {"HF005", "HF010", "HF015"},
		"001-autoscaler-consolidation": {"HF002", "HF006", "HF011", "HF012", "HF013"},
		"002-scheduler-packing":        {"HF006", "HF007"},
		"003-single-replica-budget":    {"HF001", "HF011", "HF012", "HF013"},
		"004-upgrade-mass-drain":       {"HF002", "HF006", "HF011", "HF012"},
	}
	dirs, err := filepath.Glob("../../examples/*")
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, dir := range dirs {
		name := filepath.Base(dir)
		seen = append(seen, name)
		t.Run(name, func(t *testing.T) {
			if got := rulesOf(t, filepath.Join(dir, "fixed.yaml")); len(got) > 0 {
				t.Errorf("fixed.yaml has findings %v, want none", got)
			}
			if diff := cmp.Diff(bad[name], rulesOf(t, filepath.Join(dir, "bad.yaml"))); diff != "" {
				t.Errorf("rules found in bad.yaml (-want +got):\n%s", diff)
			}
		})
	}
	for name := range bad {
		if !slices.Contains(seen, name) {
			t.Errorf("example %s is missing", name)
		}
	}
}

// rulesOf returns the distinct rules the file violates, sorted.
func rulesOf(t *testing.T, path string) []string {
	t.Helper()
	s, problems := snapshot.LoadManifests([]string{path}, snapshot.ManifestOptions{})
	if len(problems) > 0 {
		t.Fatalf("reading %s: %v", path, problems)
	}
	var ids []string
	for _, f := range audit.Run(availability.Build(s, now), s.Origins) {
		ids = append(ids, f.Rule)
		// A fix is pasted into manifests: every document of it must be YAML.
		for _, doc := range strings.Split(f.Fix, "\n---\n") {
			if js, err := yaml.YAMLToJSON([]byte(doc)); err != nil || string(js) == "null" {
				t.Errorf("%s fix for %s is not YAML (%v):\n%s", f.Rule, f.Name, err, doc)
			}
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}
