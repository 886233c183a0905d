package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// repo is the repository's root, seen from this package.
const repo = "../.."

// source is the non-test Go code of the directories the reference tables are checked
// against, parsed once: the names and values of its constants, and its files' syntax.
type source struct {
	fset *token.FileSet
	// files by directory, relative to the repository.
	files map[string][]*ast.File
	// consts maps "dir.Name" to the constant's value (a string's unquoted), for the
	// constants whose value is a literal.
	consts map[string]string
	// imports maps an import's local name in a file to its directory in the repository,
	// for the module's own packages.
	imports map[*ast.File]map[string]string
}

const module = "github.com/holdfast-dev/holdfast/"

// parseSource parses every non-test Go file under dirs (relative to the repository).
func parseSource(t *testing.T, dirs ...string) *source {
	t.Helper()
	s := &source{fset: token.NewFileSet(), files: map[string][]*ast.File{}, consts: map[string]string{}, imports: map[*ast.File]map[string]string{}}
	for _, dir := range dirs {
		err := filepath.WalkDir(filepath.Join(repo, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(s.fset, path, nil, parser.ParseComments)
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(repo, filepath.Dir(path))
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			s.files[rel] = append(s.files[rel], f)
			s.imports[f] = map[string]string{}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if !strings.HasPrefix(p, module) {
					continue
				}
				local := filepath.Base(p)
				if imp.Name != nil {
					local = imp.Name.Name
				}
				s.imports[f][local] = strings.TrimPrefix(p, module)
			}
			for _, decl := range f.Decls {
				g, ok := decl.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, spec := range g.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if i >= len(vs.Values) {
							continue
						}
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
							v := lit.Value
							if lit.Kind == token.STRING {
								v, _ = strconv.Unquote(v)
							}
							s.consts[rel+"."+name.Name] = v
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// constsNamed returns the values of the constants in dir (and, with sub, the directories
// under it) whose names match re.
func (s *source) constsNamed(dir string, sub bool, re *regexp.Regexp) []string {
	var out []string
	for key, v := range s.consts {
		d, name, _ := strings.Cut(key, ".")
		if (d == dir || sub && strings.HasPrefix(d, dir+"/")) && re.MatchString(name) {
			out = append(out, v)
		}
	}
	return sorted(out)
}

// value resolves e, a literal, a constant of the file's package, or a constant of one of
// the module's packages the file imports, to its value.
func (s *source) value(dir string, f *ast.File, e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			v, err := strconv.Unquote(e.Value)
			return v, err == nil
		}
		return e.Value, true
	case *ast.Ident:
		v, ok := s.consts[dir+"."+e.Name]
		return v, ok
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		if !ok {
			return "", false
		}
		d, ok := s.imports[f][x.Name]
		if !ok {
			return "", false
		}
		v, ok := s.consts[d+"."+e.Sel.Name]
		return v, ok
	}
	return "", false
}

// calls calls fn for every call in the files of dirs (and the directories under them).
func (s *source) calls(dir string, fn func(dir string, f *ast.File, call *ast.CallExpr)) {
	for d, files := range s.files {
		if d != dir && !strings.HasPrefix(d, dir+"/") {
			continue
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					fn(d, f, call)
				}
				return true
			})
		}
	}
}

// callee returns "x.Name" for a call of x.Name(...), and "Name" for Name(...).
func callee(call *ast.CallExpr) string {
	switch fn := call.Fun.(type) {
	case *ast.SelectorExpr:
		if x, ok := fn.X.(*ast.Ident); ok {
			return x.Name + "." + fn.Sel.Name
		}
		return fn.Sel.Name
	case *ast.Ident:
		return fn.Name
	}
	return ""
}

// tableRows returns, for each table under the heading of the markdown file (relative to
// the repository; every table in the file when heading is empty), the first cell of
// every row after the header, without its backticks.
func tableRows(t *testing.T, file, heading string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repo, file))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	in := heading == ""
	header := true
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.HasPrefix(line, "## ") && heading != "" {
			in = strings.TrimPrefix(line, "## ") == heading
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			header = true
			continue
		}
		cells := strings.Split(line, "|")
		first := strings.TrimSpace(cells[1])
		if header || strings.Trim(first, "-: ") == "" {
			header = false
			continue
		}
		first = strings.Trim(first, "`")
		out = append(out, first)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no table rows under %q", file, heading)
	}
	return out
}

func sorted(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// sameSet reports, as a test error, what the code has that the file does not list, and
// what the file lists that the code does not have.
func sameSet(t *testing.T, file, what string, code, doc []string) {
	t.Helper()
	code, doc = sorted(code), sorted(slices.Clone(doc))
	for _, c := range code {
		if !slices.Contains(doc, c) {
			t.Errorf("%s: %s %q is in the code but not in the table", file, what, c)
		}
	}
	for _, d := range doc {
		if !slices.Contains(code, d) {
			t.Errorf("%s: %s %q is in the table but not in the code", file, what, d)
		}
	}
}
