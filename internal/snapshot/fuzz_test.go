package snapshot_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/holdfast-dev/holdfast/internal/audit"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
)

// FuzzLoadManifests feeds arbitrary bytes through the loader, the model and the audit:
// whatever the input, they report problems and never panic. The corpus starts from the
// examples and from the shapes the loader treats specially.
func FuzzLoadManifests(f *testing.F) {
	examples, _ := filepath.Glob("../../examples/*/*.yaml")
	for _, path := range examples {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seed := range []string{
		deployment, pdb, deployment + "---\n" + pdb,
		`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}}]}`,
		`{"a":1}{"b":`,
		"apiVersion: v1\nkind: List\nitems: [1, {kind: Pod}]\n",
		"apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: d}\nspec: {template: {spec: {nodeSelector: {a: b}}}}\n",
		"apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: p}\nspec: {maxUnavailable: \"x%\", selector: {matchExpressions: [{key: a, operator: In}]}}\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: -3, strategy: {rollingUpdate: {maxSurge: \"200%\"}}}\n",
		"---\n--- \n---x\n&a [*a]\n",
		// What is skipped with a note: a values file, a kustomization, a custom resource;
		// and a removed API version, read with a warning.
		"replicaCount: 1\nimage: {repository: web}\n",
		"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [a.yaml]\n",
		"apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r}\n",
		"apiVersion: apps/v1beta1\nkind: Deployment\nmetadata: {name: d}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Add(snapshottest.AliasBomb(7))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, _ := snapshot.LoadManifestBytes("fuzz.yaml", data, snapshot.ManifestOptions{})
		m := availability.Build(s, time.Unix(0, 0))
		audit.Run(m, s.Origins)
	})
}
