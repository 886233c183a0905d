package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	yamlv3 "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// parser reads one file; it shares nothing, so that files are parsed in parallel.
type parser struct {
	opts   ManifestOptions
	result fileResult
	size   int // of the file
	budget budget
	json   jsonWriter
	arena  []byte // keep's block
	yaml   blockReader
	// refused is why the file is not read, when it expands past its budget: its objects
	// would be aliases of a few, and their problems would bury this one.
	refused *Problem
}

func newParser(opts ManifestOptions, size int) *parser {
	l := &parser{opts: opts, size: size, budget: newBudget(size)}
	l.json.budget = &l.budget
	return l
}

// keep copies an object's JSON into the parser's arena, in blocks of jsonBlock bytes,
// for merge to decode: one allocation for many objects, where each had one.
func (l *parser) keep(js []byte) []byte {
	if len(js) > cap(l.arena)-len(l.arena) {
		l.arena = make([]byte, 0, max(jsonBlock, len(js)))
	}
	start := len(l.arena)
	l.arena = append(l.arena, js...)
	return l.arena[start:len(l.arena):len(l.arena)]
}

// jsonBlock is the size of the blocks keep fills.
const jsonBlock = 256 << 10

func (l *parser) problem(p Problem) { l.result.problems = append(l.result.problems, p) }

func (l *parser) warn(p Problem) { l.result.warnings = append(l.result.warnings, p) }

func (l *parser) skip(p Problem) { l.result.skipped = append(l.result.skipped, p) }

// minSplit is the smallest file whose documents are parsed on several cores: below it,
// the files of a folder are enough to keep the cores busy.
const minSplit = 1 << 20

func parseFile(job fileJob, opts ManifestOptions) fileResult {
	data, err := job.data()
	if err != nil {
		return fileResult{problems: []Problem{{File: job.name, Err: err}}}
	}
	var result fileResult
	docs, bad := documents(data)
	if bad != nil {
		result.problems = append(result.problems, Problem{File: job.name, Line: bad.line, Err: bad.err})
	}
	parts := [][]document{docs}
	if len(data) >= minSplit {
		parts = splitParts(docs, len(data), runtime.GOMAXPROCS(0))
	}
	parsers := make([]*parser, len(parts))
	var wg sync.WaitGroup
	for i, part := range parts {
		wg.Go(func() {
			parsers[i] = newParser(opts, len(data))
			parsers[i].loadDocuments(job.name, part)
		})
	}
	wg.Wait()
	// The file has one budget, spent in the order of its documents. Each part was given
	// all of it; a part after the first that spent more than the parts before it left, or
	// was refused, is parsed again with what they left, as it would have been in turn.
	left := newBudget(len(data))
	objects := 0
	for _, l := range parsers {
		objects += len(l.result.objects)
	}
	result.objects = make([]decoded, 0, objects)
	for i, l := range parsers {
		if i > 0 && (l.refused != nil || left.nodes < l.spent().nodes || left.bytes < l.spent().bytes) {
			l = newParser(opts, len(data))
			l.budget = left
			l.loadDocuments(job.name, parts[i])
		}
		if l.refused != nil {
			return fileResult{problems: []Problem{*l.refused}}
		}
		spent := l.spent()
		left.nodes, left.bytes = left.nodes-spent.nodes, left.bytes-spent.bytes
		for _, o := range l.result.objects {
			o.problemAt += len(result.problems)
			o.warningAt += len(result.warnings)
			result.objects = append(result.objects, o)
		}
		result.problems = append(result.problems, l.result.problems...)
		result.warnings = append(result.warnings, l.result.warnings...)
		result.skipped = append(result.skipped, l.result.skipped...)
	}
	return result
}

// spent is what the parser took of its budget.
func (l *parser) spent() budget {
	all := newBudget(l.size)
	return budget{nodes: all.nodes - l.budget.nodes, bytes: all.bytes - l.budget.bytes}
}

// splitParts cuts documents into about n parts of about the same size, in order.
func splitParts(docs []document, size, n int) [][]document {
	var parts [][]document
	start, bytes := 0, 0
	for i, d := range docs {
		if bytes += len(d.data); bytes*n >= size*(len(parts)+1) || i == len(docs)-1 {
			parts = append(parts, docs[start:i+1])
			start = i + 1
		}
	}
	return parts
}

// document is one YAML or JSON document of a file and the line it starts on.
type document struct {
	data []byte
	line int
	// root is the parsed document, for the lines of its items and fields.
	root *yamlv3.Node
}

// streamError is why a stream of JSON values could not be cut whole, and where.
type streamError struct {
	line int
	err  error
}

// documents cuts a file into its documents: a YAML stream at its markers, or a stream
// of JSON values.
func documents(data []byte) ([]document, *streamError) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return splitYAML(data), nil
	}
	docs, err := splitJSON(data)
	if err != nil {
		return docs, &streamError{line: lineAt(data, len(data)-len(trimmed)), err: err}
	}
	return docs, nil
}

func (l *parser) loadDocuments(name string, docs []document) {
	// A document is one object, but for Lists: grown an append at a time, the objects
	// were copied over and over.
	l.result.objects = slices.Grow(l.result.objects, len(docs))
	for _, d := range docs {
		if l.refused != nil {
			return
		}
		l.loadDocument(name, d)
	}
}

// splitYAML cuts a stream at its "---" document markers. Cutting by hand, rather than
// letting a YAML decoder walk the stream, keeps a syntax error in one document from
// losing the documents after it.
func splitYAML(data []byte) []document {
	var docs []document
	start, startLine, line := 0, 1, 1
	for pos := 0; pos < len(data); {
		end := bytes.IndexByte(data[pos:], '\n')
		next := len(data)
		if end >= 0 {
			next = pos + end + 1
		}
		text := data[pos:next]
		if bytes.HasPrefix(text, []byte("---")) && (len(bytes.TrimRight(text, "\r\n")) == 3 || text[3] == ' ' || text[3] == '\t') {
			docs = append(docs, document{data: data[start:pos], line: startLine})
			// What follows the marker on its line ("--- # comment") belongs to the next document.
			start, startLine = pos+3, line
		}
		pos = next
		line++
	}
	return append(docs, document{data: data[start:], line: startLine})
}

// splitJSON cuts a stream of concatenated JSON values, as `jq -c` writes them.
func splitJSON(data []byte) ([]document, error) {
	var docs []document
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var raw json.RawMessage
		before := dec.InputOffset()
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return docs, fmt.Errorf("parsing JSON: %w", err)
		}
		// InputOffset before Decode may point at the whitespace ahead of the value.
		skip := len(data[before:]) - len(bytes.TrimLeft(data[before:], " \t\r\n"))
		docs = append(docs, document{data: raw, line: lineAt(data, int(before)+skip)})
	}
}

func lineAt(data []byte, offset int) int {
	return bytes.Count(data[:offset], []byte("\n")) + 1
}

// yamlLine matches the line numbers YAML parsers put in their errors, which count from the
// start of the document rather than of the file.
var yamlLine = regexp.MustCompile(`line (\d+)`)

func shiftLines(err error, first int) (string, int) {
	line := first
	msg := yamlLine.ReplaceAllStringFunc(err.Error(), func(m string) string {
		n, _ := strconv.Atoi(strings.TrimPrefix(m, "line "))
		line = first + n - 1
		return "line " + strconv.Itoa(line)
	})
	return msg, line
}

func (l *parser) loadDocument(file string, d document) {
	if isBlank(d.data) || l.loadBlockList(file, d) {
		return
	}
	l.loadWhole(file, d)
}

// loadWhole parses a document at once and loads it.
func (l *parser) loadWhole(file string, d document) {
	var err error
	if d.root, err = l.yaml.parseYAML(d.data); err != nil {
		// Some of this parser's errors name the line before the fault; the YAML 1.1
		// parser kubectl uses names the right one, and bad input is rare enough to
		// parse twice.
		if _, err2 := yaml.YAMLToJSON(d.data); err2 != nil {
			err = err2
		}
		msg, line := shiftLines(err, d.line)
		l.problem(Problem{File: file, Line: line, Err: errors.New(msg)})
		return
	}
	n := resolve(lookup(d.root, nil))
	if n == nil || n.Kind == 0 || (n.Kind == yamlv3.ScalarNode && n.ShortTag() == "!!null") {
		return
	}
	if foreign := notKubernetes(file, n); foreign != nil {
		l.skip(Problem{File: file, Line: contentLine(d), Err: foreign})
		return
	}
	if isList(n) {
		l.loadItems(file, d, n, "", 1)
		return
	}
	l.loadObject(file, d, contentLine(d), n, "")
}

// maxListDepth bounds Lists nested in Lists; kubectl writes one level, and a tool that
// wraps its input in a List of its own adds another.
const maxListDepth = 8

// isList reports whether n is a List kind (List, PodList, ...) with items.
func isList(n *yamlv3.Node) bool {
	items := resolve(lookup(n, []string{"items"}))
	return strings.HasSuffix(scalarAt(n, "kind"), "List") && items != nil && items.Kind == yamlv3.SequenceNode
}

// loadItems loads the items of a List; a List among them is flattened into its items.
// prefix is the JSON path of list within the document, for the lines of bad fields.
func (l *parser) loadItems(file string, d document, list *yamlv3.Node, prefix string, depth int) {
	items := resolve(lookup(list, []string{"items"}))
	for i, node := range items.Content {
		if l.refused != nil {
			return
		}
		l.loadItem(file, d, node, prefix+"items."+strconv.Itoa(i)+".", depth)
	}
}

// loadItem loads one item of a List at depth, path being its JSON path in d.
func (l *parser) loadItem(file string, d document, node *yamlv3.Node, path string, depth int) {
	line := d.line + node.Line - 1
	item := resolve(node)
	// An item costs its keys and values, which looking it over reads, even when it is
	// skipped: Lists of aliases of Lists of Services are work too.
	if err := l.budget.take(1 + len(item.Content)); err != nil {
		l.refused = &Problem{File: file, Line: line, Err: err}
		return
	}
	if item.Kind == yamlv3.MappingNode && isList(item) {
		if depth >= maxListDepth {
			l.problem(Problem{File: file, Line: line, Err: fmt.Errorf("a List nested more than %d deep; its items are not read", maxListDepth)})
			return
		}
		l.loadItems(file, d, item, path, depth+1)
		return
	}
	l.loadObject(file, d, line, item, path)
}

// loadBlockList loads a List written in block style, as kubectl writes them, one item at
// a time, and reports whether it did. The parsed nodes of a whole List take some twenty
// times its text; an item's are dropped once it is read. When the document is no such
// List, or an item cannot be parsed alone (an alias of another item's anchor, a syntax
// error), it does nothing, and the document is parsed whole.
func (l *parser) loadBlockList(file string, d document) bool {
	head, items, ok := cutBlockList(d)
	if !ok {
		return false
	}
	root, err := l.yaml.parseYAML(head)
	if err != nil || !isList(resolve(lookup(root, nil))) {
		return false
	}
	objects, problems, warnings, skipped, budget := len(l.result.objects), len(l.result.problems), len(l.result.warnings), len(l.result.skipped), l.budget
	for _, item := range items {
		if l.refused != nil {
			return true
		}
		item.root, err = l.yaml.parseYAML(item.data)
		seq := lookup(item.root, nil)
		if err != nil || seq.Kind != yamlv3.SequenceNode || len(seq.Content) != 1 {
			l.result.objects = slices.Delete(l.result.objects, objects, len(l.result.objects))
			l.result.problems = slices.Delete(l.result.problems, problems, len(l.result.problems))
			l.result.warnings = slices.Delete(l.result.warnings, warnings, len(l.result.warnings))
			l.result.skipped = slices.Delete(l.result.skipped, skipped, len(l.result.skipped))
			l.budget = budget
			return false
		}
		l.loadItem(file, item, seq.Content[0], "0.", 1)
	}
	return true
}

// itemsKey is the line that starts a List's items in block style.
var itemsKey = regexp.MustCompile(`^items:([ \t]+(#.*)?)?$`)

// cutBlockList cuts a document whose "items:" key, at the first column, holds a block
// sequence into the items, each a document of its own from its "-" on (a sequence of
// one), and the rest of the document, with "items: []" in their place. Comments and blank
// lines stay with the item before them.
func cutBlockList(d document) (head []byte, items []document, ok bool) {
	// Most documents are no List: one search of the whole text spares them the walk
	// line by line, a twentieth of reading 10,000 Deployments.
	if !bytes.Contains(d.data, []byte("items:")) {
		return nil, nil, false
	}
	key, end, column := -1, len(d.data), -1 // column is that of the items' "-"
	pos, line := 0, d.line
lines:
	for text := range bytes.Lines(d.data) {
		body := bytes.TrimSuffix(bytes.TrimSuffix(text, []byte("\n")), []byte("\r"))
		// The other line breaks YAML knows would put lines where this counts none.
		if bytes.ContainsAny(body, "\r\u0085\u2028\u2029") {
			return nil, nil, false
		}
		trimmed := bytes.TrimLeft(body, " ")
		indent := len(body) - len(trimmed)
		switch {
		case key < 0:
			if itemsKey.Match(body) {
				key = pos
			}
		case len(trimmed) == 0 || trimmed[0] == '#' || (len(items) > 0 && indent > column):
		case trimmed[0] == '-' && (len(trimmed) == 1 || trimmed[1] == ' ') && (column < 0 || indent == column):
			column = indent
			items = append(items, document{line: line})
		default:
			end = pos
			break lines
		}
		if n := len(items); n > 0 {
			items[n-1].data = d.data[pos-len(items[n-1].data) : pos+len(text)]
		}
		pos += len(text)
		line++
	}
	if len(items) == 0 {
		return nil, nil, false
	}
	return append(append(slices.Clip(d.data[:key]), "items: []\n"...), d.data[end:]...), items, true
}

// resolve follows aliases to the node they name.
func resolve(n *yamlv3.Node) *yamlv3.Node {
	for n != nil && n.Kind == yamlv3.AliasNode {
		n = n.Alias
	}
	return n
}

// scalarAt returns the text of the scalar at path, or "" when there is none.
func scalarAt(n *yamlv3.Node, path ...string) string {
	v := resolve(lookup(n, path))
	if v == nil || v.Kind != yamlv3.ScalarNode || v.ShortTag() == "!!null" {
		return ""
	}
	return v.Value
}

// contentLine is the line of the first thing in the document that is not a comment or
// blank, where an object's origin should point (Helm puts "# Source:" lines first).
func contentLine(d document) int {
	line := d.line
	for text := range bytes.Lines(d.data) {
		text = bytes.TrimSpace(text)
		if len(text) > 0 && text[0] != '#' {
			return line
		}
		line++
	}
	return d.line
}

func isBlank(data []byte) bool {
	for line := range bytes.Lines(data) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && !bytes.Equal(line, []byte("...")) {
			return false
		}
	}
	return true
}

// loadObject decodes one object starting at line. doc is the document it came from, used
// to find the line of a bad field; prefix is the object's path in it ("items.3." for a
// List item, "" for the document itself).
func (l *parser) loadObject(file string, doc document, line int, n *yamlv3.Node, prefix string) {
	p := Problem{File: file, Line: line}
	n = resolve(n)
	if n.Kind != yamlv3.MappingNode {
		p.Err = errors.New("item is not an object with apiVersion and kind")
		l.problem(p)
		return
	}
	apiVersion, kind := scalarAt(n, "apiVersion"), scalarAt(n, "kind")
	if kind == "" || apiVersion == "" {
		p.Err = errors.New("object has no apiVersion or no kind")
		l.problem(p)
		return
	}
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	ref := ObjectRef{Kind: kind, Name: scalarAt(n, "metadata", "name")}
	if namespaced[kind] {
		ref.Namespace = scalarAt(n, "metadata", "namespace")
		if ref.Namespace == "" {
			ref.Namespace = l.opts.DefaultNamespace
		}
	}
	p.Object = ref.String()
	if removed := removedAPI(gvk); removed != nil {
		l.warn(Problem{File: file, Line: line, Object: p.Object, Err: removed})
	}
	decoder, known := decoders[gvk]
	if !known {
		switch {
		case !knownGroup(gvk.Group):
			if ref.Name == "" {
				p.Object = "" // a kustomization has no name
			}
			p.Err = unknownKind(gvk)
			l.skip(p)
		case gvk.Group == holdfastv1alpha1.GroupVersion.Group ||
			scheme.Scheme.IsVersionRegistered(gvk.GroupVersion()) && !scheme.Scheme.Recognizes(gvk):
			// A kind of a known group that holdfast or client-go does not know is a
			// typo ("Deploymnet"), not a custom resource.
			p.Err = fmt.Errorf("unknown kind %q in %s", kind, apiVersion)
			l.problem(p)
		}
		// Other built-in kinds (Service, ConfigMap) change no disruption: not read.
		return
	}
	if ref.Name == "" {
		p.Err = errors.New("object has no metadata.name")
		l.problem(p)
		return
	}
	js, err := l.json.toJSON(n)
	if err != nil {
		p.Err = err
		if errors.Is(err, errExpansion) {
			l.refused = &p
			return
		}
		l.problem(p)
		return
	}
	// Decoded by merge, once its place is known. doc is kept without its parsed nodes,
	// which take some twenty times its text: a problem's lines are found by parsing it again.
	doc.root = nil
	// The reference outlives the document, whose text its strings were parts of.
	ref = ObjectRef{Kind: decoder.gvk.Kind, Namespace: strings.Clone(ref.Namespace), Name: strings.Clone(ref.Name)}
	l.result.objects = append(l.result.objects, decoded{
		ref: ref, origin: Origin{File: file, Line: line}, kind: decoder, js: l.keep(js),
		doc: doc, prefix: prefix, problemAt: len(l.result.problems), warningAt: len(l.result.warnings),
	})
}

// decodeTo decodes the object into its place in s, or, when s is nil, only to know
// whether it decodes. It returns what keeps it out of the snapshot, if anything, and the
// fields it has that its kind does not.
func (o *decoded) decodeTo(s *Snapshot, i int, maps sharedMaps) (*Problem, []Problem) {
	unknown, err := o.kind.decode(o.js, o.ref.Namespace, o.kind.gvk, s, i, maps)
	if len(unknown) == 0 && err == nil {
		return nil, nil
	}
	var root *yamlv3.Node
	lineOf := func(path string) int {
		if root == nil {
			// Rare: a typo or a wrong type. The document is parsed as when it was read.
			var r blockReader
			root, _ = r.parseYAML(o.doc.data)
		}
		return fieldLine(document{data: o.doc.data, line: o.doc.line, root: root}, o.prefix+path)
	}
	var warnings []Problem
	for _, u := range unknown {
		w := Problem{File: o.origin.File, Line: o.origin.Line, Object: o.ref.String(), Field: u.path, Err: errors.New("unknown field, ignored")}
		if line := lineOf(u.path); line > 0 {
			w.Line = line
		}
		if u.suggestion != "" {
			w.Err = fmt.Errorf("unknown field, ignored; did you mean %s?", u.suggestion)
		}
		warnings = append(warnings, w)
	}
	if err == nil {
		return nil, warnings
	}
	p := Problem{File: o.origin.File, Line: o.origin.Line, Object: o.ref.String()}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		p.Field = typeErr.Field
		if line := lineOf(typeErr.Field); line > 0 {
			p.Line = line
		}
		err = fmt.Errorf("cannot read a JSON %s as %s", typeErr.Value, typeErr.Type)
	}
	p.Err = err
	return &p, warnings
}

// fieldLine finds the line of a dotted JSON path such as spec.template.spec.containers.0.image
// (encoding/json reports paths without indexes, so the first element is taken for arrays).
func fieldLine(d document, path string) int {
	n := lookup(d.root, strings.Split(path, "."))
	if n == nil {
		return 0
	}
	return d.line + n.Line - 1
}

func lookup(n *yamlv3.Node, path []string) *yamlv3.Node {
	for n != nil && n.Kind == yamlv3.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if len(path) == 0 || n == nil {
		return n
	}
	switch n.Kind {
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == path[0] {
				return lookup(n.Content[i+1], path[1:])
			}
		}
	case yamlv3.SequenceNode:
		if len(n.Content) == 0 {
			return nil
		}
		if i, err := strconv.Atoi(path[0]); err == nil {
			if i < len(n.Content) {
				return lookup(n.Content[i], path[1:])
			}
			return nil
		}
		return lookup(n.Content[0], path)
	}
	return nil
}
