package snapshot

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzBlockList checks that a List read item by item reads as it does parsed whole:
// the same objects, problems and warnings, on the same lines.
func FuzzBlockList(f *testing.F) {
	for _, seed := range []string{
		// As kubectl writes it: kind after the items, a comment and a blank line between them.
		"apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: n1\n# two\n\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: web}\n  spec:\n    replicas: two\nkind: List\nmetadata:\n  resourceVersion: \"\"\n",
		// Indented items, a nested List, an item that is not an object, an unknown field.
		"apiVersion: v1\nkind: List\nitems:\n  -\n    apiVersion: v1\n    kind: List\n    items:\n    - {apiVersion: v1, kind: Node, metadata: {name: n1}, spec: {flavour: large}}\n  - 3\n  - apiVersion: v1\n    kind: Service\n",
		// An alias of another item's anchor: parsed whole.
		"apiVersion: v1\nkind: List\nitems:\n- &n {apiVersion: v1, kind: Node, metadata: {name: n1}}\n- *n\n",
		// A syntax error in an item: parsed whole, the error where it is.
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: [n1}\n",
		// Lines that read differently at the root of a document than in a sequence.
		"items:\n- 00\n : \nkind: List",
		"0000000000: 00\nkind: List\nitems:\n- {}00",
		// A line break of YAML's other than \n.
		"kind: List\nitems:\n - \r0",
		// Not a List.
		"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nitems:\n- a\n",
		"items:\n- a\nitems:\n- b\nkind: List\napiVersion: v1\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := document{data: data, line: 1}
		items := newParser(ManifestOptions{}.withDefaults(), len(data))
		if !items.loadBlockList("f.yaml", d) {
			return
		}
		whole := newParser(ManifestOptions{}.withDefaults(), len(data))
		whole.loadWhole("f.yaml", d)
		if items.refused != nil || whole.refused != nil {
			if diff := cmp.Diff(fmtProblem(whole.refused), fmtProblem(items.refused)); diff != "" {
				t.Fatalf("refused (-whole +by item):\n%s", diff)
			}
			return
		}
		ws, wp := merge([]fileResult{whole.result})
		is, ip := merge([]fileResult{items.result})
		if diff := cmp.Diff(problemTexts(append(wp, ws.Warnings...)), problemTexts(append(ip, is.Warnings...))); diff != "" {
			t.Fatalf("problems and warnings (-whole +by item):\n%s", diff)
		}
		ws.Warnings, is.Warnings = nil, nil
		if !reflect.DeepEqual(ws, is) {
			t.Fatalf("objects differ: whole %v, by item %v", ws.Origins, is.Origins)
		}
	})
}

func fmtProblem(p *Problem) string {
	if p == nil {
		return ""
	}
	return p.Error()
}

func problemTexts(ps []Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Error())
	}
	return out
}
