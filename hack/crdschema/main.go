// Command crdschema replaces the schema of one property of a generated CRD with a schema
// written by hand, for what controller-gen's markers cannot say: a property whose own
// schema is left open (x-kubernetes-preserve-unknown-fields) but still declares the few
// fields that the CRD's CEL rules read, since CEL sees no undeclared field.
//
//	go run ./hack/crdschema CRD.yaml spec.template SCHEMA.yaml
//
// rewrites CRD.yaml in place; the path starts under openAPIV3Schema, in every version.
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: crdschema CRD.yaml PROPERTY.PATH SCHEMA.yaml")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "crdschema:", err)
		os.Exit(1)
	}
}

func run(crdPath, property, schemaPath string) error {
	crdYAML, err := os.ReadFile(crdPath)
	if err != nil {
		return err
	}
	schemaYAML, err := os.ReadFile(schemaPath)
	if err != nil {
		return err
	}
	var schema map[string]any
	if err := yaml.Unmarshal(schemaYAML, &schema); err != nil {
		return fmt.Errorf("reading %s: %w", schemaPath, err)
	}
	out, err := replace(crdYAML, strings.Split(property, "."), schema)
	if err != nil {
		return fmt.Errorf("%s: %w", crdPath, err)
	}
	return os.WriteFile(crdPath, out, 0o644)
}

// replace returns crdYAML with the schema of the property at path, in every version,
// replaced by schema. controller-gen writes the CRD with sorted keys, as sigs.k8s.io/yaml
// does, so that only the replaced property changes.
func replace(crdYAML []byte, path []string, schema map[string]any) ([]byte, error) {
	var crd map[string]any
	if err := yaml.Unmarshal(crdYAML, &crd); err != nil {
		return nil, err
	}
	spec, _ := crd["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	if len(versions) == 0 {
		return nil, fmt.Errorf("no spec.versions")
	}
	for _, v := range versions {
		version, _ := v.(map[string]any)
		node, _ := version["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
		for i, p := range path {
			props, _ := node["properties"].(map[string]any)
			child, ok := props[p].(map[string]any)
			if !ok {
				return nil, fmt.Errorf("version %v has no property %s", version["name"], strings.Join(path[:i+1], "."))
			}
			if i == len(path)-1 {
				props[p] = schema
			}
			node = child
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(crdYAML, []byte("---\n")) {
		out = append([]byte("---\n"), out...)
	}
	return out, nil
}
