// Package config embeds holdfast's install manifests — the very files that
// `kubectl apply -k config/default` reads — so that `holdfast install` and the tests
// install exactly what the kustomization does.
package config

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

//go:embed default/kustomization.yaml crd/kustomization.yaml crd/bases/*.yaml rbac/*.yaml manager/*.yaml
var files embed.FS

// kindOrder is the order objects must be applied in: a namespace before what lives in
// it, CRDs and RBAC before the operator that needs them (kustomize orders the same way).
var kindOrder = []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service", "Deployment", "PodDisruptionBudget"}

// Objects returns the objects of config/default in apply order.
func Objects() ([]*unstructured.Unstructured, error) {
	paths, err := resources("default")
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, p := range paths {
		data, err := files.ReadFile(p)
		if err != nil {
			return nil, err
		}
		docs, err := Decode(p, data)
		if err != nil {
			return nil, err
		}
		objs = append(objs, docs...)
	}
	InApplyOrder(objs)
	return objs, nil
}

// InApplyOrder sorts objs into the order they must be applied in, keeping the order of
// objects of one kind.
func InApplyOrder(objs []*unstructured.Unstructured) {
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		return Rank(a.GetKind()) - Rank(b.GetKind())
	})
}

// Rank is where objects of kind come in the apply order; deleting goes the other way.
func Rank(kind string) int {
	if i := slices.Index(kindOrder, kind); i >= 0 {
		return i
	}
	return len(kindOrder)
}

// resources follows a kustomization's resources, folders recursively, to the files it
// names, in the order it names them.
func resources(dir string) ([]string, error) {
	data, err := files.ReadFile(path.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return nil, fmt.Errorf("%s/kustomization.yaml: %w", dir, err)
	}
	var out []string
	for _, r := range k.Resources {
		p := path.Join(dir, r)
		if path.Ext(p) == ".yaml" {
			out = append(out, p)
			continue
		}
		nested, err := resources(p)
		if err != nil {
			return nil, err
		}
		out = append(out, nested...)
	}
	return out, nil
}

// Decode reads a stream of YAML documents, such as helm template's output, into objects,
// skipping empty ones; name is what its errors say was read.
func Decode(name string, data []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		objs = append(objs, u)
	}
}
