package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	yamlv3 "go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// StdinPath is the path that stands for standard input, as in kubectl apply -f -.
const StdinPath = "-"

// DefaultMaxFileSize bounds one manifest file. Real manifests, even a whole cluster's
// `kubectl get -o yaml`, stay far below it; a larger file is more likely a mistake (a
// binary, a log) that would otherwise cost gigabytes of memory to parse.
const DefaultMaxFileSize = 64 << 20

// ManifestOptions controls how manifests are read.
type ManifestOptions struct {
	// DefaultNamespace is given to namespaced objects that name none, as kubectl does with
	// the context's namespace. Empty means "default".
	DefaultNamespace string
	// Stdin is read for the path "-".
	Stdin io.Reader
	// MaxFileSize bounds each file in bytes; zero means DefaultMaxFileSize.
	MaxFileSize int64
	// Kustomize takes each path for a folder with a kustomization, and reads what
	// kustomize builds from it, as kubectl -k does. Lines count in the built output.
	Kustomize bool
}

// Problem is one piece of input that could not be read. Loading goes on past it, so one
// bad document never hides the findings of the others.
type Problem struct {
	File   string
	Line   int    // 1-based; 0 when the problem is with the whole file
	Object string // kind/namespace/name when known
	Field  string // JSON path of the offending field when known, e.g. spec.replicas
	Err    error
}

// Error renders the problem as file:line: object: field: cause.
func (p Problem) Error() string {
	where := p.File
	if p.Line > 0 {
		where += ":" + strconv.Itoa(p.Line)
	}
	return where + ": " + p.Detail()
}

// Detail renders the problem without its file and line: object: field: cause.
func (p Problem) Detail() string {
	var b strings.Builder
	if p.Object != "" {
		b.WriteString(p.Object + ": ")
	}
	if p.Field != "" {
		b.WriteString("field " + p.Field + ": ")
	}
	b.WriteString(p.Err.Error())
	return b.String()
}

// Unwrap returns the cause.
func (p Problem) Unwrap() error { return p.Err }

// LoadManifests reads every path (a file, a folder read recursively for .yaml, .yml and
// .json files, an http(s) URL, or "-" for stdin) into one Snapshot. It returns the objects it could read
// together with one Problem for each piece of input it could not. Files are parsed in
// parallel, but objects and problems keep the order of the paths and files.
func LoadManifests(paths []string, opts ManifestOptions) (*Snapshot, []Problem) {
	_, results := parseAll(paths, opts)
	return merge(results)
}

// parseAll lists and parses the files of every path, in parallel. keys name each file by
// the index of its path and the folders and name below that path.
func parseAll(paths []string, opts ManifestOptions) (keys [][]string, results []fileResult) {
	opts = opts.withDefaults()
	var files []fileJob
	for i, p := range paths {
		for _, f := range listFiles(p, opts) {
			key := []string{strconv.Itoa(i)}
			if rel, err := filepath.Rel(p, f.name); err == nil && rel != "." {
				key = append(key, strings.Split(filepath.ToSlash(rel), "/")...)
			}
			keys = append(keys, key)
			files = append(files, f)
		}
	}
	results = make([]fileResult, len(files))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Go(func() {
			for i := range next {
				results[i] = parseFile(files[i], opts)
			}
		})
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	return keys, results
}

// LoadManifestBytes reads one file's content as if it had been read from name.
func LoadManifestBytes(name string, data []byte, opts ManifestOptions) (*Snapshot, []Problem) {
	job := fileJob{name: name, read: func() ([]byte, error) { return data, nil }}
	return merge([]fileResult{parseFile(job, opts.withDefaults())})
}

func (o ManifestOptions) withDefaults() ManifestOptions {
	if o.DefaultNamespace == "" {
		o.DefaultNamespace = metav1.NamespaceDefault
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	return o
}

// fileJob is one file to parse: read returns its content, or err says why it cannot be.
type fileJob struct {
	name string
	err  error
	read func() ([]byte, error)
}

// fileResult is what one file holds, in order.
type fileResult struct {
	objects  []decoded
	problems []Problem
	warnings []Problem
	skipped  []Problem
}

// decoded is one object read from a file, with the function that adds it to a snapshot.
type decoded struct {
	ref    ObjectRef
	origin Origin
	legacy bool
	add    func(*Snapshot)
}

// merge builds the snapshot from the files' results in order; an object defined in two
// places is kept where it is first defined.
func merge(results []fileResult) (*Snapshot, []Problem) {
	var problems []Problem
	counts, total := map[string]int{}, 0
	for _, r := range results {
		for _, o := range r.objects {
			counts[o.ref.Kind]++
		}
		total += len(r.objects)
	}
	s := &Snapshot{Source: SourceManifests, Origins: make(map[ObjectRef]Origin, total), LegacySelectorPDBs: map[ObjectRef]bool{}}
	s.reserve(counts)
	for _, r := range results {
		problems = append(problems, r.problems...)
		s.Warnings = append(s.Warnings, r.warnings...)
		s.Skipped = append(s.Skipped, r.skipped...)
		for _, o := range r.objects {
			if first, dup := s.Origins[o.ref]; dup {
				problems = append(problems, Problem{File: o.origin.File, Line: o.origin.Line, Object: o.ref.String(),
					Err: fmt.Errorf("defined again; first defined at %s", first)})
				continue
			}
			s.Origins[o.ref] = o.origin
			if o.legacy {
				s.LegacySelectorPDBs[o.ref] = true
			}
			o.add(s)
		}
	}
	return s, problems
}

// reserve sizes the slices for the objects to come: objects are large, and growing the
// slices one append at a time copied them over and over. (The map of origins is sized
// for the same reason.)
func (s *Snapshot) reserve(counts map[string]int) {
	s.Nodes = slices.Grow(s.Nodes, counts[KindNode])
	s.Pods = slices.Grow(s.Pods, counts[KindPod])
	s.Deployments = slices.Grow(s.Deployments, counts[KindDeployment])
	s.ReplicaSets = slices.Grow(s.ReplicaSets, counts[KindReplicaSet])
	s.StatefulSets = slices.Grow(s.StatefulSets, counts[KindStatefulSet])
	s.DaemonSets = slices.Grow(s.DaemonSets, counts[KindDaemonSet])
	s.PodDisruptionBudgets = slices.Grow(s.PodDisruptionBudgets, counts[KindPodDisruptionBudget])
	s.HorizontalPodAutoscalers = slices.Grow(s.HorizontalPodAutoscalers, counts[KindHorizontalPodAutoscaler])
	s.PriorityClasses = slices.Grow(s.PriorityClasses, counts[KindPriorityClass])
	s.NodeCompanions = slices.Grow(s.NodeCompanions, counts[KindNodeCompanion])
	s.Namespaces = slices.Grow(s.Namespaces, counts[KindNamespace])
	s.DisruptionPolicies = slices.Grow(s.DisruptionPolicies, counts[KindDisruptionPolicy])
	s.ClusterDisruptionPolicies = slices.Grow(s.ClusterDisruptionPolicies, counts[KindClusterDisruptionPolicy])
	s.Leases = slices.Grow(s.Leases, counts[KindLease])
	if counts[KindNodeClaim]+counts[KindNodePool] > 0 {
		// Karpenter's kinds were read: a node of a NodePool without a NodeClaim has none.
		s.NodeClaims = make([]unstructured.Unstructured, 0, counts[KindNodeClaim])
		s.NodePools = make([]unstructured.Unstructured, 0, counts[KindNodePool])
	}
}

// listFiles expands a path into the files to parse.
func listFiles(path string, opts ManifestOptions) []fileJob {
	if path == StdinPath {
		if opts.Stdin == nil {
			return []fileJob{{name: path, err: errors.New("no standard input to read")}}
		}
		return []fileJob{{name: path, read: func() ([]byte, error) { return readLimited(opts.Stdin, opts.MaxFileSize) }}}
	}
	switch {
	case opts.Kustomize:
		return []fileJob{{name: path, read: func() ([]byte, error) { return kustomize(filesys.MakeFsOnDisk(), path) }}}
	case isURL(path):
		return []fileJob{{name: path, read: func() ([]byte, error) { return fetch(path, opts.MaxFileSize) }}}
	}
	info, err := os.Stat(path)
	if err != nil {
		return []fileJob{{name: path, err: err}}
	}
	if !info.IsDir() {
		return []fileJob{fileAt(path, opts)}
	}
	var jobs []fileJob
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			jobs = append(jobs, fileJob{name: p, err: err})
			return nil
		}
		// Hidden folders hold VCS data and editor state, never manifests.
		if d.IsDir() && p != path && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && isManifestFile(p) {
			jobs = append(jobs, fileAt(p, opts))
		}
		return nil
	})
	if err != nil {
		jobs = append(jobs, fileJob{name: path, err: err})
	}
	return jobs
}

func isManifestFile(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

func fileAt(path string, opts ManifestOptions) fileJob {
	return fileJob{name: path, read: func() ([]byte, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return readLimited(f, opts.MaxFileSize)
	}}
}

func readLimited(r io.Reader, limit int64) ([]byte, error) {
	// Read one byte past the limit to tell "exactly at the limit" from "over it".
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than the %d-byte limit for one manifest file", limit)
	}
	return data, nil
}

// parser reads one file; it shares nothing, so that files are parsed in parallel.
type parser struct {
	opts   ManifestOptions
	result fileResult
	budget budget
	json   jsonWriter
	yaml   blockReader
	// refused is why the file is not read, when it expands past its budget: its objects
	// would be aliases of a few, and their problems would bury this one.
	refused *Problem
}

func newParser(opts ManifestOptions, size int) *parser {
	l := &parser{opts: opts, budget: newBudget(size)}
	l.json.budget = &l.budget
	return l
}

func (l *parser) problem(p Problem) { l.result.problems = append(l.result.problems, p) }

func (l *parser) warn(p Problem) { l.result.warnings = append(l.result.warnings, p) }

func (l *parser) skip(p Problem) { l.result.skipped = append(l.result.skipped, p) }

func parseFile(job fileJob, opts ManifestOptions) fileResult {
	data, err := job.data()
	if err != nil {
		return fileResult{problems: []Problem{{File: job.name, Err: err}}}
	}
	l := newParser(opts, len(data))
	l.loadBytes(job.name, data)
	if l.refused != nil {
		return fileResult{problems: []Problem{*l.refused}}
	}
	return l.result
}

func (j fileJob) data() ([]byte, error) {
	if j.err != nil {
		return nil, j.err
	}
	return j.read()
}

// document is one YAML or JSON document of a file and the line it starts on.
type document struct {
	data []byte
	line int
	// root is the parsed document, for the lines of its items and fields.
	root *yamlv3.Node
}

func (l *parser) loadBytes(name string, data []byte) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	var docs []document
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var err error
		docs, err = splitJSON(data)
		if err != nil {
			l.problem(Problem{File: name, Line: lineAt(data, len(data)-len(trimmed)), Err: err})
		}
	} else {
		docs = splitYAML(data)
	}
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
	decode, known := decoders[gvk]
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
	add, unknown, err := decode(js, ref.Namespace, gvk)
	for _, u := range unknown {
		w := Problem{File: file, Line: line, Object: p.Object, Field: u.path, Err: errors.New("unknown field, ignored")}
		if line := fieldLine(doc, prefix+u.path); line > 0 {
			w.Line = line
		}
		if u.suggestion != "" {
			w.Err = fmt.Errorf("unknown field, ignored; did you mean %s?", u.suggestion)
		}
		l.warn(w)
	}
	if err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			p.Field = typeErr.Field
			if line := fieldLine(doc, prefix+typeErr.Field); line > 0 {
				p.Line = line
			}
			err = fmt.Errorf("cannot read a JSON %s as %s", typeErr.Value, typeErr.Type)
		}
		p.Err = err
		l.problem(p)
		return
	}
	l.result.objects = append(l.result.objects, decoded{
		ref: ref, origin: Origin{File: file, Line: line}, add: add,
		legacy: gvk.Group == "policy" && gvk.Version == "v1beta1",
	})
}

// String renders the origin as file:line.
func (o Origin) String() string { return o.File + ":" + strconv.Itoa(o.Line) }

var namespaced = map[string]bool{
	KindPod: true, KindDeployment: true, KindReplicaSet: true, KindStatefulSet: true,
	KindDaemonSet: true, KindPodDisruptionBudget: true, KindHorizontalPodAutoscaler: true,
	KindNodeCompanion: true, KindDisruptionPolicy: true, KindLease: true,
}

// decodeFunc decodes one object and returns the function that adds it to a snapshot, and
// the fields its kind does not have.
type decodeFunc func(js []byte, namespace string, gvk schema.GroupVersionKind) (func(*Snapshot), []unknownField, error)

// decodeInto appends the object to the snapshot's slice. Retired API versions (policy/v1beta1,
// extensions/v1beta1, apps/v1beta2, autoscaling/v1...) share the fields holdfast reads with
// the current ones, so the articles' manifests, written for them, are read into the current
// types rather than rejected.
//
// The object is decoded twice: here, while files are read in parallel, for its problems,
// and again by add, into its place in the snapshot's slice. Keeping the decoded object
// instead held every object twice when merge copied it into the slice: a Pod is 1,240
// bytes before its fields', where its JSON is a few hundred.
func decodeInto[T any](slice func(*Snapshot) *[]T, meta func(*T) *metav1.ObjectMeta, fix func(*T, schema.GroupVersionKind)) decodeFunc {
	// Decoded as the API server decodes: field names are case-sensitive, and the fields
	// the kind does not have are listed rather than silently dropped.
	decode := func(js []byte, obj *T) ([]error, error) {
		return sigsjson.UnmarshalStrict(js, obj, sigsjson.DisallowUnknownFields)
	}
	return func(js []byte, namespace string, gvk schema.GroupVersionKind) (func(*Snapshot), []unknownField, error) {
		var obj T
		strict, err := decode(js, &obj)
		if err != nil {
			return nil, nil, err
		}
		js = bytes.Clone(js)
		add := func(s *Snapshot) {
			objs := slice(s)
			*objs = append(*objs, *new(T))
			obj := &(*objs)[len(*objs)-1]
			// The same JSON into the same type decodes the same, without error, so
			// the strict checks, a tenth of the decoding, are not made again.
			_ = sigsjson.UnmarshalCaseSensitivePreserveInts(js, obj)
			if namespace != "" {
				meta(obj).Namespace = namespace
			}
			if fix != nil {
				fix(obj, gvk)
			}
		}
		return add, unknownFields(reflect.TypeFor[T](), strict), nil
	}
}

// decodeUnstructured appends the object, of a kind another project defines (Karpenter's),
// as it is: holdfast reads a few of its fields, and knows no others to warn about.
func decodeUnstructured(slice func(*Snapshot) *[]unstructured.Unstructured) decodeFunc {
	return func(js []byte, _ string, _ schema.GroupVersionKind) (func(*Snapshot), []unknownField, error) {
		var u unstructured.Unstructured
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, nil, err
		}
		return func(s *Snapshot) { *slice(s) = append(*slice(s), u) }, nil, nil
	}
}

// defaultLegacySelector fills a selector from the template labels, as the extensions/v1beta1
// API defaulted it; apps/v1 requires it.
func defaultLegacySelector(sel **metav1.LabelSelector, template *corev1.PodTemplateSpec, gvk schema.GroupVersionKind) {
	if *sel == nil && gvk.Group == "extensions" && len(template.Labels) > 0 {
		*sel = &metav1.LabelSelector{MatchLabels: template.Labels}
	}
}

// assumeRunning gives a pod written without status (a manifest, not a dump) the status
// of a running, Ready pod, which is what its author means. A pod that carries a status
// (a `kubectl get pods -o yaml` dump) keeps it, so that unready, pending and finished
// pods count as the disruption controller counts them.
func assumeRunning(pod *corev1.Pod) {
	if pod.Status.Phase != "" || len(pod.Status.Conditions) > 0 {
		return
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
}

var decoders = map[schema.GroupVersionKind]decodeFunc{}

func register(d decodeFunc, kind string, apiVersions ...string) {
	for _, v := range apiVersions {
		decoders[schema.FromAPIVersionAndKind(v, kind)] = d
	}
}

func init() {
	register(decodeInto(func(s *Snapshot) *[]corev1.Node { return &s.Nodes },
		func(o *corev1.Node) *metav1.ObjectMeta { return &o.ObjectMeta }, nil), KindNode, "v1")
	register(decodeInto(func(s *Snapshot) *[]corev1.Pod { return &s.Pods },
		func(o *corev1.Pod) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(o *corev1.Pod, _ schema.GroupVersionKind) { assumeRunning(o) }), KindPod, "v1")
	register(decodeInto(func(s *Snapshot) *[]appsv1.Deployment { return &s.Deployments },
		func(o *appsv1.Deployment) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(o *appsv1.Deployment, gvk schema.GroupVersionKind) {
			defaultLegacySelector(&o.Spec.Selector, &o.Spec.Template, gvk)
		}), KindDeployment, "apps/v1", "apps/v1beta1", "apps/v1beta2", "extensions/v1beta1")
	register(decodeInto(func(s *Snapshot) *[]appsv1.ReplicaSet { return &s.ReplicaSets },
		func(o *appsv1.ReplicaSet) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(o *appsv1.ReplicaSet, gvk schema.GroupVersionKind) {
			defaultLegacySelector(&o.Spec.Selector, &o.Spec.Template, gvk)
		}), KindReplicaSet, "apps/v1", "apps/v1beta2", "extensions/v1beta1")
	register(decodeInto(func(s *Snapshot) *[]appsv1.StatefulSet { return &s.StatefulSets },
		func(o *appsv1.StatefulSet) *metav1.ObjectMeta { return &o.ObjectMeta }, nil),
		KindStatefulSet, "apps/v1", "apps/v1beta1", "apps/v1beta2")
	register(decodeInto(func(s *Snapshot) *[]appsv1.DaemonSet { return &s.DaemonSets },
		func(o *appsv1.DaemonSet) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(o *appsv1.DaemonSet, gvk schema.GroupVersionKind) {
			defaultLegacySelector(&o.Spec.Selector, &o.Spec.Template, gvk)
		}), KindDaemonSet, "apps/v1", "apps/v1beta2", "extensions/v1beta1")
	register(decodeInto(func(s *Snapshot) *[]policyv1.PodDisruptionBudget { return &s.PodDisruptionBudgets },
		func(o *policyv1.PodDisruptionBudget) *metav1.ObjectMeta { return &o.ObjectMeta }, nil),
		KindPodDisruptionBudget, "policy/v1", "policy/v1beta1")
	register(decodeInto(func(s *Snapshot) *[]autoscalingv2.HorizontalPodAutoscaler { return &s.HorizontalPodAutoscalers },
		func(o *autoscalingv2.HorizontalPodAutoscaler) *metav1.ObjectMeta { return &o.ObjectMeta }, nil),
		KindHorizontalPodAutoscaler, "autoscaling/v2", "autoscaling/v2beta2", "autoscaling/v2beta1", "autoscaling/v1")
	register(decodeInto(func(s *Snapshot) *[]schedulingv1.PriorityClass { return &s.PriorityClasses },
		func(o *schedulingv1.PriorityClass) *metav1.ObjectMeta { return &o.ObjectMeta }, nil),
		KindPriorityClass, "scheduling.k8s.io/v1", "scheduling.k8s.io/v1beta1")
	register(decodeInto(func(s *Snapshot) *[]holdfastv1alpha1.NodeCompanion { return &s.NodeCompanions },
		func(o *holdfastv1alpha1.NodeCompanion) *metav1.ObjectMeta { return &o.ObjectMeta }, nil),
		KindNodeCompanion, holdfastv1alpha1.GroupVersion.String())
	register(decodeInto(func(s *Snapshot) *[]corev1.Namespace { return &s.Namespaces },
		func(o *corev1.Namespace) *metav1.ObjectMeta { return &o.ObjectMeta },
		func(o *corev1.Namespace, _ schema.GroupVersionKind) {
			// The API server labels every namespace with its name, and namespace selectors
			// (a ClusterDisruptionPolicy's among them) are written against that label.
			o.Labels = maps.Clone(o.Labels)
			if o.Labels == nil {
				o.Labels = map[string]string{}
			}
			o.Labels[corev1.LabelMetadataName] = o.Name
		}), KindNamespace, "v1")
	register(decodeInto(func(s *Snapshot) *[]holdfastv1alpha1.DisruptionPolicy { return &s.DisruptionPolicies },
		func(o *holdfastv1alpha1.DisruptionPolicy) *metav1.ObjectMeta { return &o.ObjectMeta }, nil),
		KindDisruptionPolicy, holdfastv1alpha1.GroupVersion.String())
	register(decodeInto(func(s *Snapshot) *[]holdfastv1alpha1.ClusterDisruptionPolicy { return &s.ClusterDisruptionPolicies },
		func(o *holdfastv1alpha1.ClusterDisruptionPolicy) *metav1.ObjectMeta { return &o.ObjectMeta }, nil),
		KindClusterDisruptionPolicy, holdfastv1alpha1.GroupVersion.String())
	register(decodeInto(func(s *Snapshot) *[]coordinationv1.Lease { return &s.Leases },
		func(o *coordinationv1.Lease) *metav1.ObjectMeta { return &o.ObjectMeta }, nil),
		KindLease, "coordination.k8s.io/v1")
	register(decodeUnstructured(func(s *Snapshot) *[]unstructured.Unstructured { return &s.NodeClaims }),
		KindNodeClaim, NodeClaimKind.GroupVersion().String())
	register(decodeUnstructured(func(s *Snapshot) *[]unstructured.Unstructured { return &s.NodePools }),
		KindNodePool, NodePoolKind.GroupVersion().String())
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
