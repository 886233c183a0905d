package snapshot

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	yamlv3 "go.yaml.in/yaml/v3"
)

func TestToJSON(t *testing.T) {
	laughs := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i, prev := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		next := string(rune('b' + i))
		laughs += next + ": &" + next + " [" + strings.Repeat("*"+prev+", ", 9) + "*" + prev + "]\n"
	}
	// Room in the budget for more than maxDepth levels.
	padding := "# " + strings.Repeat("x", maxDepth) + "\n"
	tests := map[string]struct {
		yaml, want, err string
	}{
		"scalars":         {yaml: "s: text\nq: \"1\"\ni: 0x10\nf: 1.5\nb: true\nn: null\nt: 2024-01-01\ninf: .inf", want: `{"s":"text","q":"1","i":16,"f":1.5,"b":true,"n":null,"t":"2024-01-01","inf":".inf"}`},
		"escaped strings": {yaml: "a: 'say \"hi\"'\nb: \"tab\\there\"\nc: café\n", want: `{"a":"say \"hi\"","b":"tab\there","c":"café"}`},
		"nested":          {yaml: "a:\n  - b: 1\n  - [2, 3]\n", want: `{"a":[{"b":1},[2,3]]}`},
		"alias":           {yaml: "a: &x {k: v}\nb: *x\n", want: `{"a":{"k":"v"},"b":{"k":"v"}}`},
		"merge key":       {yaml: "base: &b {k: 1, l: 2}\nc:\n  <<: *b\n  l: 3\n", want: `{"base":{"k":1,"l":2},"c":{"k":1,"l":2,"l":3}}`},
		"empty":           {yaml: "# only a comment\n", want: `null`},
		"billion laughs":  {yaml: laughs, err: errExpansion.Error()},
		"alias of itself": {yaml: padding + "a: &a [*a]\n", err: errTooDeep.Error()},
		"merge of itself": {yaml: padding + "a: &a {<<: *a}\n", err: errTooDeep.Error()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var root yamlv3.Node
			if err := yamlv3.Unmarshal([]byte(tc.yaml), &root); err != nil {
				t.Fatal(err)
			}
			b := newBudget(len(tc.yaml))
			w := jsonWriter{budget: &b}
			got, err := w.toJSON(&root)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("JSON (-want +got):\n%s", diff)
			}
		})
	}
}
