package kustomize

import (
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// FuzzKustomize builds arbitrary kustomizations: whatever the kustomization says, -k
// reports an error or a build and never ends holdfast.
func FuzzKustomize(f *testing.F) {
	for _, seed := range []string{
		"resources: [web.yaml]\nnamePrefix: prod-\n",
		"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [web.yaml]\nnamespace: shop\n" +
			"patches: [{patch: '[{\"op\": \"replace\", \"path\": \"/spec/replicas\", \"value\": 3}]', target: {kind: Deployment}}]\n",
		"resources: [missing.yaml]\n",
		"configMapGenerator: [{name: c, literals: [a=b]}]\nreplicas: [{name: web, count: 2}]\n",
		"resources: [.]\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, kustomization []byte) {
		fs := filesys.MakeFsInMemory()
		web := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 1}\n"
		if err := fs.WriteFile("/app/web.yaml", []byte(web)); err != nil {
			t.Fatal(err)
		}
		if err := fs.WriteFile("/app/kustomization.yaml", kustomization); err != nil {
			t.Fatal(err)
		}
		if out, err := build(fs, "/app"); err == nil {
			snapshot.LoadManifestBytes("/app", out, snapshot.ManifestOptions{})
		}
	})
}
