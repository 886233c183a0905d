package docs

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite docs/reference/fields.md from the CRDs")

const fieldsReference = "docs/reference/fields.md"

// crd is the part of a CustomResourceDefinition the field reference reads.
type crd struct {
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind       string   `json:"kind"`
			ShortNames []string `json:"shortNames"`
		} `json:"names"`
		Scope    string `json:"scope"`
		Versions []struct {
			Name   string `json:"name"`
			Schema struct {
				OpenAPIV3Schema schema `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

// schema is the part of an OpenAPI v3 schema the field reference prints.
type schema struct {
	Type          string            `json:"type"`
	Format        string            `json:"format"`
	Description   string            `json:"description"`
	Properties    map[string]schema `json:"properties"`
	Items         *schema           `json:"items"`
	Required      []string          `json:"required"`
	Enum          []any             `json:"enum"`
	Default       any               `json:"default"`
	IntOrString   bool              `json:"x-kubernetes-int-or-string"`
	MapType       string            `json:"x-kubernetes-map-type"`
	Unknown       bool              `json:"x-kubernetes-preserve-unknown-fields"`
	AddProperties *schema           `json:"additionalProperties"`
}

// TestFieldReference keeps docs/reference/fields.md, written from the CRDs' schemas in
// config/crd/bases (themselves generated from api/v1alpha1 by make generate), in step:
// go test ./internal/docs -run TestFieldReference -update rewrites it.
func TestFieldReference(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repo, "config", "crd", "bases", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no CRD in config/crd/bases")
	}
	var b strings.Builder
	b.WriteString("# Field reference\n\n<!-- Generated from config/crd/bases by `go test ./internal/docs -run TestFieldReference -update`. -->\n\n")
	b.WriteString("Every field of holdfast's kinds, as the API server validates them. The pages of each kind\n")
	b.WriteString("say what the fields are for; [API stability](../api-stability.md) says what may change.\n")
	b.WriteString("Objects of Kubernetes' own types (label selectors, pod templates) are not expanded:\n")
	b.WriteString("see the Kubernetes API reference.\n")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c crd
		if err := yaml.Unmarshal(data, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range c.Spec.Versions {
			fmt.Fprintf(&b, "\n## %s\n\n`apiVersion: %s/%s`, %s", c.Spec.Names.Kind, c.Spec.Group, v.Name, strings.ToLower(c.Spec.Scope))
			if len(c.Spec.Names.ShortNames) > 0 {
				fmt.Fprintf(&b, "; short names: `%s`", strings.Join(c.Spec.Names.ShortNames, "`, `"))
			}
			b.WriteString(".\n\n| Field | Type | Description |\n|---|---|---|\n")
			root := v.Schema.OpenAPIV3Schema
			for _, top := range []string{"spec", "status"} {
				if s, ok := root.Properties[top]; ok {
					writeFields(&b, top, s, slices.Contains(root.Required, top))
				}
			}
		}
	}
	want := b.String()
	path := filepath.Join(repo, fieldsReference)
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("%s is not the CRDs' (-want +got); rerun with -update:\n%s", fieldsReference, diff)
	}
}

// writeFields writes the row of the field at path, then the rows of its fields, unless
// it is one of Kubernetes' own types.
func writeFields(b *strings.Builder, path string, s schema, required bool) {
	typ := typeOf(s)
	if required {
		typ += ", required"
	}
	desc := strings.Join(strings.Fields(s.Description), " ")
	if len(s.Enum) > 0 {
		var vs []string
		for _, e := range s.Enum {
			vs = append(vs, fmt.Sprintf("`%v`", e))
		}
		desc += " One of " + strings.Join(vs, ", ") + "."
	}
	if s.Default != nil {
		d, err := json.Marshal(s.Default)
		if err != nil {
			panic(fmt.Sprintf("%s: a default read from JSON cannot be written back: %v", path, err))
		}
		desc += fmt.Sprintf(" Default: `%s`.", d)
	}
	fmt.Fprintf(b, "| `%s` | %s | %s |\n", path, typ, strings.ReplaceAll(desc, "|", `\|`))
	if kubernetesType(s) {
		return
	}
	fields, list := s, ""
	if s.Items != nil {
		fields, list = *s.Items, "[]"
	}
	for _, name := range sortedKeys(fields.Properties) {
		writeFields(b, path+list+"."+name, fields.Properties[name], slices.Contains(fields.Required, name))
	}
}

// kubernetesType reports whether s is one of Kubernetes' own types, which the reference
// does not expand: an atomic map (a label selector) or a pod template.
func kubernetesType(s schema) bool {
	if s.MapType == "atomic" {
		return true
	}
	_, meta := s.Properties["metadata"]
	_, spec := s.Properties["spec"]
	return len(s.Properties) == 2 && meta && spec
}

func typeOf(s schema) string {
	switch {
	case s.IntOrString:
		return "integer or string"
	case s.Type == "array" && s.Items != nil:
		return "[]" + typeOf(*s.Items)
	case s.Type == "object" && s.AddProperties != nil:
		return "map[string]" + typeOf(*s.AddProperties)
	case kubernetesType(s) && s.MapType == "atomic":
		return "label selector"
	case kubernetesType(s):
		return "pod template"
	case s.Format != "":
		return s.Type + " (" + s.Format + ")"
	case s.Type == "":
		return "any"
	}
	return s.Type
}

func sortedKeys(m map[string]schema) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
