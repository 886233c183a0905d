package snapshot

import (
	"errors"
	"reflect"
	"slices"
	"strings"

	sigsjson "sigs.k8s.io/json"
)

// unknownField is a field written in a manifest that its kind does not have.
type unknownField struct {
	// path is dotted, with list indexes: spec.template.spec.containers.0.imagePullPolicyy.
	path string
	// suggestion is the field of that place the author most likely meant, or "".
	suggestion string
}

// indexes turns the strict decoder's containers[0] into containers.0, the form fieldLine
// and Problem.Field use.
var indexes = strings.NewReplacer("[", ".", "]", "")

// unknownFields reads the strict decoder's errors for an object of type t.
func unknownFields(t reflect.Type, strict []error) []unknownField {
	var out []unknownField
	for _, err := range strict {
		var fe sigsjson.FieldError
		if !errors.As(err, &fe) {
			continue
		}
		path := indexes.Replace(fe.FieldPath())
		parts := strings.Split(path, ".")
		known := slices.Sorted(func(yield func(string) bool) {
			for name := range jsonFields(typeAt(t, parts[:len(parts)-1])) {
				if !yield(name) {
					return
				}
			}
		})
		out = append(out, unknownField{path: path, suggestion: closest(parts[len(parts)-1], known)})
	}
	return out
}

// typeAt walks a path of JSON field names, list indexes and map keys down from t.
func typeAt(t reflect.Type, path []string) reflect.Type {
	for _, name := range path {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		case reflect.Struct:
			f, ok := jsonFields(t)[name]
			if !ok {
				return nil
			}
			t = f
		default:
			return nil
		}
	}
	return t
}

// jsonFields maps the JSON names of a struct's fields, inlined ones included, to their
// types; nil for anything but a struct.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported() && !f.Anonymous:
		case name == "" && f.Anonymous:
			for n, ft := range jsonFields(f.Type) {
				out[n] = ft
			}
		case name == "":
			out[f.Name] = f.Type
		default:
			out[name] = f.Type
		}
	}
	return out
}

// closest returns the known name a typo most likely meant: one that differs only in case,
// else the nearest within a third of its length in edits (a swap of two neighbours
// counting as one), or "" when none is that near.
func closest(name string, known []string) string {
	best, bestDist := "", len(name)/3+1
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return k
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance: insertions, deletions,
// substitutions and swaps of neighbours.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
