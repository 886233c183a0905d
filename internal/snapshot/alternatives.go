package snapshot

import (
	"cmp"
	"slices"
)

// Redefinition is an object that two files define.
type Redefinition struct {
	Ref ObjectRef
	// First is where the object is defined first, Again where another file defines it.
	First, Again Origin
}

// LoadAlternatives reads paths like LoadManifests, but input whose files define the same
// object is taken for what it usually is: alternatives (a bad and a fixed version, one
// folder per environment), not parts of one cluster. It is split where the alternatives
// part: each path on its own, a folder into its subfolders, and when files directly in a
// folder define the same object, each of them into a snapshot of its own together with
// the files of that folder that share no object with another (a nodes file).
// Input where no two files define the same object stays one snapshot. It returns the
// snapshots in the order of the files, the problems of them all, and one Redefinition
// per pair of files that define the same object.
func LoadAlternatives(paths []string, opts ManifestOptions) ([]*Snapshot, []Problem, []Redefinition) {
	keys, results := parseAll(paths, opts)
	defined, origins := definitions(results, redefined(results))
	conflicts := map[[2]int]bool{}
	var redefs []Redefinition
	for ref, files := range defined {
		for a := range files {
			for b := a + 1; b < len(files); b++ {
				pair := [2]int{files[a], files[b]}
				if a == 0 {
					redefs = append(redefs, Redefinition{Ref: ref, First: origins[ref][a], Again: origins[ref][b]})
				}
				conflicts[pair] = true
			}
		}
	}
	// One note per pair of files, naming the first object they share.
	slices.SortFunc(redefs, func(x, y Redefinition) int {
		return cmp.Or(cmp.Compare(x.First.File, y.First.File), cmp.Compare(x.Again.File, y.Again.File),
			cmp.Compare(x.First.Line, y.First.Line), cmp.Compare(x.Ref.String(), y.Ref.String()))
	})
	redefs = slices.CompactFunc(redefs, func(x, y Redefinition) bool { return x.First.File == y.First.File && x.Again.File == y.Again.File })

	all := make([]int, len(results))
	for i := range all {
		all[i] = i
	}
	clash := func(set []int) bool {
		for i, a := range set {
			for _, b := range set[i+1:] {
				if conflicts[[2]int{a, b}] || conflicts[[2]int{b, a}] {
					return true
				}
			}
		}
		return false
	}
	parts := splitFiles(all, 0, keys, clash)
	slices.SortFunc(parts, func(a, b []int) int { return cmp.Compare(a[0], b[0]) })
	var snaps []*Snapshot
	var problems []Problem
	reported := map[string]bool{}
	for _, part := range parts {
		rs := make([]fileResult, len(part))
		for i, f := range part {
			rs[i] = results[f]
		}
		s, p := merge(rs)
		// A file shared by several parts is reported once.
		for _, pr := range p {
			if !reported[pr.Error()] {
				reported[pr.Error()] = true
				problems = append(problems, pr)
			}
		}
		if len(s.Origins) > 0 || len(parts) == 1 {
			snaps = append(snaps, s)
		}
	}
	return snaps, problems, redefs
}

// redefined lists the objects that more than one file defines: the only ones that split
// the input.
func redefined(results []fileResult) map[ObjectRef]bool {
	n := 0
	for _, r := range results {
		n += len(r.objects)
	}
	first, again := make(map[ObjectRef]int, n), map[ObjectRef]bool{}
	for i, r := range results {
		for _, o := range r.objects {
			if f, seen := first[o.ref]; !seen {
				first[o.ref] = i
			} else if f != i {
				again[o.ref] = true
			}
		}
	}
	return again
}

// definitions lists, for each object of refs, the files that define it and where, in
// order. An object that cannot be decoded defines nothing: merge decodes the objects
// once the input is split, and these, which split it, are tried here.
func definitions(results []fileResult, refs map[ObjectRef]bool) (map[ObjectRef][]int, map[ObjectRef][]Origin) {
	defined := map[ObjectRef][]int{}
	origins := map[ObjectRef][]Origin{}
	if len(refs) == 0 {
		return defined, origins
	}
	for i, r := range results {
		for _, o := range r.objects {
			if !refs[o.ref] {
				continue
			}
			if p, _ := o.decodeTo(nil, 0, nil); p != nil {
				continue
			}
			files := defined[o.ref]
			if len(files) > 0 && files[len(files)-1] == i {
				continue // twice in one file: merge reports it
			}
			defined[o.ref] = append(files, i)
			origins[o.ref] = append(origins[o.ref], o.origin)
		}
	}
	return defined, origins
}

// splitFiles splits a set of files, whose keys share their first depth elements, until no
// two files of a part define the same object: files directly at this level stay together
// unless two of them clash, each group below it is split on its own.
func splitFiles(set []int, depth int, keys [][]string, clash func([]int) bool) [][]int {
	if !clash(set) {
		return [][]int{set}
	}
	var leaves []int
	var groups [][]int
	index := map[string]int{}
	for _, f := range set {
		if len(keys[f]) == depth+1 {
			leaves = append(leaves, f)
			continue
		}
		i, ok := index[keys[f][depth]]
		if !ok {
			i = len(groups)
			index[keys[f][depth]] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], f)
	}
	var parts [][]int
	switch {
	case clash(leaves):
		// Each file that redefines another's object, with the files that redefine
		// nothing (a nodes file, the pods of a placement), which belong to every one.
		var alone, shared []int
		for _, f := range leaves {
			if slices.ContainsFunc(leaves, func(g int) bool { return g != f && clash([]int{f, g}) }) {
				alone = append(alone, f)
			} else {
				shared = append(shared, f)
			}
		}
		for _, f := range alone {
			parts = append(parts, slices.Sorted(slices.Values(append([]int{f}, shared...))))
		}
	case len(leaves) > 0:
		parts = append(parts, leaves)
	}
	for _, g := range groups {
		parts = append(parts, splitFiles(g, depth+1, keys, clash)...)
	}
	return parts
}
