package snapshot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	yamlv3 "go.yaml.in/yaml/v3"
)

// FuzzBlockYAML holds the block reader to yaml.v3: whatever it accepts, yaml.v3 reads
// into the same nodes, at the same lines and columns.
func FuzzBlockYAML(f *testing.F) {
	for _, doc := range repositoryDocuments(f) {
		f.Add(doc)
	}
	for _, seed := range blockSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkBlockYAML(t, data)
	})
}

var blockSeeds = []string{
	deploymentYAML,
	flowDeploymentYAML,
	"a: 1\nb:\n- x\n- 'y'\nc: {}\nd: []\ne: \"q\"\nf: ~\ng:\n",
	"\n- a: 1\n  b: 2\n-\n  - c\n",
	"# head\na: x #c\nb: 'it''s' # c\nc: \"x\" \n",
	"a:\n  b:\n    c: [] # c\n  d: 0x1F\ne: 2001-12-14\nf: .inf\ng: <<\nh: yes\n",
	"a: 1\na: 2\n",
	"a: True\nb: FALSE\nc: Null\nd: nULL\ne: yes\nf: off\ng: tRue\nh: ~x\ni: ~\nj: nulls\nk: O\n",
	"a:   \nb: 1\n",
	"- - a\n",
	"a: b: c\n",
	"a:\n  - b\n  c: d\n",
	"k8s.io/x: 'a:b'\nhttp://x: y\n",
	// Flow collections on one line, as generators write them, and what is left to yaml.v3.
	"metadata: {name: web, namespace: shop, labels: {app: web}}\nspec: {replicas: 3, ports: [{containerPort: 8080}], args: [a, 'b c', \"d\"]} # c\n",
	"- {image: 'registry.example/app:1.0', x: [1, 2.5, true, ~, null]}\n- [ a , {b: c} ]\n- { }\n- [[]]\n",
	"a: {b: 1,}\nc: {d}\ne: {f: , g: h}\n",
	"a: {b?c: d}\ne: [f: g]\nh: {i:j}\nk: {\"l\":m}\nn: [o #p]\nq: {r: :s, t: [?u]}\n",
	"a: {b: c\n  , d: e}\n",
	// Plain scalars that start with a digit: numbers, timestamps, and text.
	"a: [0, 7, 8080, 0123, 018, 999999999999999999, 9999999999999999999, 1_000, 1e3, 1.5, 0x1F, 0o17, 0b101, 0x1p-2]\n" +
		"b: [100m, 128Mi, 2Gi, 1.5k, 3e, 12:30:00, 2001-12-14, 2001-12-14t21:59:43.10-05:00, 1a, 2f, 1x, 0-0, 1 2, 5Z, 3d]\n",
}

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {}
spec:
  replicas: 3
  template:
    spec:
      containers:
        - name: app
          image: registry.example/app:1.0
          args: []
          ports:
          - containerPort: 8080
`

const flowDeploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, labels: {app: web, tier: "1"}}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web, tier: "1"}}
    spec:
      containers:
      - {name: app, image: registry.example/app:1.0, resources: {requests: {cpu: 100m}}, readinessProbe: {httpGet: {path: /ready, port: 8080}}}
`

// repositoryDocuments are the documents of the repository's YAML: examples, the
// operator's manifests and CRDs, the workflows, the chart's values.
func repositoryDocuments(tb testing.TB) [][]byte {
	var docs [][]byte
	for _, pattern := range []string{"../../examples/*/*.yaml", "../../config/*/*.yaml", "../../config/*/*/*.yaml",
		"../../charts/holdfast/*.yaml", "../../charts/holdfast/files/*/*.yaml", "../../.github/workflows/*.yaml",
		"../../hack/*/*.yaml", "../cli/testdata/*/*.yaml"} {
		paths, _ := filepath.Glob(pattern)
		for _, path := range paths {
			data, err := os.ReadFile(path)
			if err != nil {
				tb.Fatal(err)
			}
			for _, d := range splitYAML(data) {
				docs = append(docs, d.data)
			}
		}
	}
	return docs
}

// TestBlockYAMLReadsManifests checks the seeds and the repository's YAML against
// yaml.v3, and that the reader does read usual manifests, in block and flow style,
// rather than leave them to yaml.v3.
func TestBlockYAMLReadsManifests(t *testing.T) {
	for _, seed := range blockSeeds {
		checkBlockYAML(t, []byte(seed))
	}
	docs, read := repositoryDocuments(t), 0
	// One reader for all, as a file's parser reads its documents: each document's nodes
	// fill the slabs of the one before.
	var shared blockReader
	for _, doc := range docs {
		checkBlockYAML(t, doc)
		if got := shared.parse(doc); got != nil {
			read++
			var want yamlv3.Node
			if err := yamlv3.Unmarshal(doc, &want); err != nil {
				t.Fatalf("read %q, which yaml.v3 refuses: %v", doc, err)
			}
			if diff := diffNodes(got, &want, ""); diff != "" {
				t.Fatalf("read %q, after other documents, unlike yaml.v3: %s", doc, diff)
			}
		}
	}
	t.Logf("read %d of the repository's %d YAML documents, yaml.v3 the rest", read, len(docs))
	for _, doc := range []string{deploymentYAML, flowDeploymentYAML} {
		var r blockReader
		if r.parse([]byte(doc)) == nil {
			t.Errorf("the block reader left to yaml.v3:\n%s", doc)
		}
	}
}

func checkBlockYAML(t *testing.T, data []byte) {
	t.Helper()
	var r blockReader
	got := r.parse(data)
	if got == nil {
		return
	}
	var want yamlv3.Node
	if err := yamlv3.Unmarshal(data, &want); err != nil {
		t.Fatalf("read %q, which yaml.v3 refuses: %v", data, err)
	}
	if diff := diffNodes(got, &want, ""); diff != "" {
		t.Fatalf("read %q unlike yaml.v3: %s", data, diff)
	}
}

func diffNodes(got, want *yamlv3.Node, path string) string {
	if got.Kind != want.Kind || got.Style != want.Style || got.Tag != want.Tag || got.Value != want.Value ||
		got.Line != want.Line || got.Column != want.Column || len(got.Content) != len(want.Content) {
		return path + ": got " + describe(got) + ", yaml.v3 " + describe(want)
	}
	for i := range got.Content {
		if d := diffNodes(got.Content[i], want.Content[i], path+"/"+want.Content[i].Value); d != "" {
			return d
		}
	}
	return ""
}

func describe(n *yamlv3.Node) string {
	var b strings.Builder
	_ = yamlv3.NewEncoder(&b).Encode(map[string]any{"kind": n.Kind, "style": n.Style, "tag": n.Tag,
		"value": n.Value, "line": n.Line, "column": n.Column, "children": len(n.Content)})
	return strings.ReplaceAll(strings.TrimSpace(b.String()), "\n", " ")
}
