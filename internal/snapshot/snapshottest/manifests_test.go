package snapshottest_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/holdfast-dev/holdfast/internal/snapshot"
	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
)

// TestManifestsReadAlikeInBothStyles checks that both styles are valid manifests of the
// same objects, read without a problem.
func TestManifestsReadAlikeInBothStyles(t *testing.T) {
	const workloads = 60
	var loaded [2]*snapshot.Snapshot
	for i, style := range []snapshottest.Style{snapshottest.Block, snapshottest.Flow} {
		s, problems := snapshot.LoadManifestBytes("all.yaml", snapshottest.Manifests(workloads, style), snapshot.ManifestOptions{})
		if len(problems) > 0 || len(s.Warnings) > 0 || len(s.Skipped) > 0 {
			t.Fatalf("%s style: problems %v, warnings %v, skipped %v", style, problems, s.Warnings, s.Skipped)
		}
		if len(s.Deployments) != workloads || len(s.PodDisruptionBudgets) != workloads {
			t.Fatalf("%s style: %d Deployments and %d budgets, want %d each", style, len(s.Deployments), len(s.PodDisruptionBudgets), workloads)
		}
		loaded[i] = s
	}
	if diff := cmp.Diff(loaded[0].Deployments, loaded[1].Deployments); diff != "" {
		t.Errorf("Deployments (-block +flow):\n%s", diff)
	}
	if diff := cmp.Diff(loaded[0].PodDisruptionBudgets, loaded[1].PodDisruptionBudgets); diff != "" {
		t.Errorf("budgets (-block +flow):\n%s", diff)
	}
}
