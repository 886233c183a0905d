// Package kustomize builds a kustomization for the manifest loader's -k, as kubectl -k
// does. It is apart from package snapshot so that the operator, which links snapshot for
// its types and reads no manifests, does not link kustomize.
package kustomize

import (
	"fmt"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Build builds the kustomization in the folder dir on disk, as kustomize build does; it
// is snapshot.ManifestOptions' Kustomize.
func Build(dir string) ([]byte, error) {
	return build(filesys.MakeFsOnDisk(), dir)
}

// build builds the kustomization in dir of fs. A panic of the builder on a malformed
// kustomization is an error of that input, not holdfast's end.
func build(fs filesys.FileSystem, dir string) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("kustomize build failed: %v", r)
		}
	}()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build: %w", err)
	}
	return resources.AsYaml()
}
