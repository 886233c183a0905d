package snapshot

import (
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// Manifests are nearly all written in a small part of YAML: block mappings and sequences
// of one-line scalars, or of flow collections that end on their line ({name: x,
// namespace: y}). yaml.v3's general scanner spent half of reading 10,000 Deployments and
// their budgets; blockReader reads that part alone, into the nodes yaml.v3 makes, and
// gives up on anything else (anchors, aliases, tags, flow collections over several
// lines, multi-line, block or escaped scalars, tabs, carriage returns, non-ASCII text), which
// yaml.v3 then reads as before, with its errors and their lines. FuzzBlockYAML holds it to
// yaml.v3's nodes on every input it accepts.

// maxBlockDepth is the deepest nesting read here; yaml.v3 refuses nesting past 10,000,
// and deeper input is left to it, to refuse.
const maxBlockDepth = 1000

// maxKeyLength is the longest key read here: YAML limits implicit keys to 1,024
// characters.
const maxKeyLength = 1000

// blockReader parses YAML documents; one serves a file, reusing its memory.
type blockReader struct {
	lines []blockLine
	next  int
	// slabs hold the nodes, allocated a hundred at a time rather than one by one, and
	// filled again, with their lists of children, by the next document: the nodes were
	// two fifths of the bytes a load allocated.
	slabs      [][]yamlv3.Node
	slab, used int // the slab being filled, and the nodes of it taken
}

// blockLine is a line with content: neither blank nor a comment.
type blockLine struct {
	num    int    // 1-based, in the document
	indent int    // spaces before text
	text   string // from the indent to the end of the line
}

// parseYAML parses one document into nodes, valid until the next call.
func (r *blockReader) parseYAML(data []byte) (*yamlv3.Node, error) {
	if n := r.parse(data); n != nil {
		return n, nil
	}
	n := &yamlv3.Node{}
	return n, yamlv3.Unmarshal(data, n)
}

// parse returns the document node of data, or nil when data is not in the block part of
// YAML read here.
func (r *blockReader) parse(data []byte) *yamlv3.Node {
	if !r.split(data) || len(r.lines) == 0 {
		return nil
	}
	r.next, r.slab, r.used = 0, 0, 0
	root := r.block(0)
	if root == nil || r.next != len(r.lines) {
		return nil
	}
	doc := r.node(yamlv3.DocumentNode, "", "", root.Line, root.Column)
	doc.Content = append(doc.Content, root)
	return doc
}

// split cuts data into its lines with content, or reports that it has a byte or a line
// left to yaml.v3. It reads data once, a line at a time: a pass to check the bytes and
// another to cut the lines took a tenth of reading a large file.
func (r *blockReader) split(data []byte) bool {
	src := string(data) // one copy, that every scalar's value is a part of
	r.lines = r.lines[:0]
	for num := 1; len(src) > 0; num++ {
		line := src
		if end := strings.IndexByte(src, '\n'); end >= 0 {
			line, src = src[:end], src[end+1:]
		} else {
			src = ""
		}
		for i := 0; i < len(line); i++ {
			// Printable ASCII only, from ' ' to '~': below, the subtraction wraps.
			if line[i]-' ' > '~'-' ' {
				return false
			}
		}
		indent := 0
		for indent < len(line) && line[indent] == ' ' {
			indent++
		}
		text := strings.TrimRight(line[indent:], " ")
		switch {
		case text == "" || text[0] == '#':
			continue
		case indent == 0 && (strings.HasPrefix(text, "---") || strings.HasPrefix(text, "...")):
			return false
		}
		r.lines = append(r.lines, blockLine{num: num, indent: indent, text: text})
	}
	return true
}

func (r *blockReader) node(kind yamlv3.Kind, tag, value string, line, column int) *yamlv3.Node {
	if r.slab < len(r.slabs) && r.used == len(r.slabs[r.slab]) {
		r.slab, r.used = r.slab+1, 0
	}
	if r.slab == len(r.slabs) {
		r.slabs = append(r.slabs, make([]yamlv3.Node, 128))
	}
	n := &r.slabs[r.slab][r.used]
	r.used++
	// Only the fields this reader sets are set again: the others (anchors, aliases,
	// comments) stay empty, and writing the whole node took a twentieth of a large file.
	n.Kind, n.Style, n.Tag, n.Value, n.Line, n.Column, n.Content = kind, 0, tag, value, line, column, n.Content[:0]
	return n
}

// block parses the sequence or mapping that starts on the next line.
func (r *blockReader) block(depth int) *yamlv3.Node {
	l := r.lines[r.next]
	if isItem(l.text) {
		return r.sequence(l.indent, depth)
	}
	return r.mapping(l.indent, depth)
}

// isItem reports whether text starts a sequence's item.
func isItem(text string) bool { return text == "-" || strings.HasPrefix(text, "- ") }

func (r *blockReader) sequence(indent, depth int) *yamlv3.Node {
	if depth > maxBlockDepth {
		return nil
	}
	first := r.lines[r.next]
	seq := r.node(yamlv3.SequenceNode, "!!seq", "", first.num, indent+1)
	for r.next < len(r.lines) {
		l := &r.lines[r.next]
		if l.indent < indent || (l.indent == indent && !isItem(l.text)) {
			break
		}
		if l.indent > indent {
			return nil
		}
		rest := strings.TrimLeft(l.text[1:], " ")
		column := indent + len(l.text) - len(rest) // 0-based, of rest
		var item *yamlv3.Node
		switch {
		case rest == "":
			// The item is the block below it; an empty item is left to yaml.v3.
			if r.next++; r.next == len(r.lines) || r.lines[r.next].indent <= indent {
				return nil
			}
			item = r.block(depth + 1)
		case isItem(rest):
			return nil
		case rest[0] == '{' || rest[0] == '[':
			item = r.scalar(rest, l.num, column+1, depth+1)
			r.next++
		case isKey(rest):
			// A mapping that starts on the item's line, at the column of its first key.
			l.indent, l.text = column, rest
			item = r.mapping(column, depth+1)
		default:
			item = r.scalar(rest, l.num, column+1, depth+1)
			r.next++
		}
		if item == nil {
			return nil
		}
		seq.Content = append(seq.Content, item)
	}
	return seq
}

func (r *blockReader) mapping(indent, depth int) *yamlv3.Node {
	if depth > maxBlockDepth {
		return nil
	}
	first := r.lines[r.next]
	m := r.node(yamlv3.MappingNode, "!!map", "", first.num, indent+1)
	for r.next < len(r.lines) {
		l := r.lines[r.next]
		if l.indent < indent {
			break
		}
		if l.indent > indent || isItem(l.text) {
			return nil
		}
		key, colon, ok := splitKey(l.text)
		if !ok {
			return nil
		}
		k := r.plain(key, l.num, indent+1)
		if k == nil {
			return nil
		}
		r.next++
		rest := strings.TrimLeft(l.text[colon+1:], " ")
		var v *yamlv3.Node
		switch {
		case rest != "":
			v = r.scalar(rest, l.num, indent+len(l.text)-len(rest)+1, depth+1)
		case r.next < len(r.lines) && r.lines[r.next].indent > indent:
			v = r.block(depth + 1)
		case r.next < len(r.lines) && r.lines[r.next].indent == indent && isItem(r.lines[r.next].text):
			// A sequence may be indented as far as the key it is the value of.
			v = r.sequence(indent, depth+1)
		default: // "key:" and nothing below it
			v = r.node(yamlv3.ScalarNode, "!!null", "", l.num, indent+colon+2)
		}
		if v == nil {
			return nil
		}
		m.Content = append(m.Content, k, v)
	}
	return m
}

// splitKey cuts "key: value" at its colon, and reports whether text is such a line.
func splitKey(text string) (key string, colon int, ok bool) {
	for i := 0; i < len(text) && i <= maxKeyLength; i++ {
		if text[i] == ':' && (i+1 == len(text) || text[i+1] == ' ') {
			return text[:i], i, i > 0
		}
	}
	return "", 0, false
}

func isKey(text string) bool {
	_, _, ok := splitKey(text)
	return ok
}

// scalar parses a value written on one line, starting at column: a scalar, or a flow
// collection that ends on the line.
func (r *blockReader) scalar(text string, line, column, depth int) *yamlv3.Node {
	switch text[0] {
	case '{', '[':
		n, end := r.flow(text, 0, line, column, depth)
		if n == nil || !endsValue(text[end:]) {
			return nil
		}
		return n
	case '\'', '"':
		n, end := r.quoted(text, 0, line, column)
		if n == nil || !endsValue(text[end:]) {
			return nil
		}
		return n
	}
	if i := strings.Index(text, " #"); i >= 0 {
		text = strings.TrimRight(text[:i], " ")
	}
	return r.plain(text, line, column)
}

// flow parses the flow mapping or sequence that opens at text[start], and returns it
// with the index past its closing bracket. Its entries are scalars and flow collections
// on the same line, a mapping's written "key: value"; anything else (an entry without
// its value, a trailing comma, a comment, a collection over several lines, a key that is
// a collection, "?") is left to yaml.v3.
func (r *blockReader) flow(text string, start, line, column, depth int) (*yamlv3.Node, int) {
	if depth > maxBlockDepth {
		return nil, 0
	}
	kind, tag, closing := yamlv3.MappingNode, "!!map", byte('}')
	if text[start] == '[' {
		kind, tag, closing = yamlv3.SequenceNode, "!!seq", ']'
	}
	n := r.node(kind, tag, "", line, column+start)
	n.Style = yamlv3.FlowStyle
	i := skipSpaces(text, start+1)
	if i < len(text) && text[i] == closing {
		return n, i + 1
	}
	for {
		var entry *yamlv3.Node
		if entry, i = r.flowEntry(text, i, line, column, depth); entry == nil {
			return nil, 0
		}
		if kind == yamlv3.MappingNode {
			if entry.Kind != yamlv3.ScalarNode || !strings.HasPrefix(text[i:], ": ") {
				return nil, 0
			}
			n.Content = append(n.Content, entry)
			if entry, i = r.flowEntry(text, skipSpaces(text, i+2), line, column, depth); entry == nil {
				return nil, 0
			}
		}
		n.Content = append(n.Content, entry)
		i = skipSpaces(text, i)
		switch {
		case i < len(text) && text[i] == closing:
			return n, i + 1
		case i < len(text) && text[i] == ',':
			if i = skipSpaces(text, i+1); i < len(text) && text[i] == closing {
				return nil, 0 // a trailing comma
			}
		default:
			return nil, 0
		}
	}
}

// flowEntry parses the scalar or collection at text[start] inside a flow collection, and
// returns it with the index past it.
func (r *blockReader) flowEntry(text string, start, line, column, depth int) (*yamlv3.Node, int) {
	if start >= len(text) {
		return nil, 0
	}
	switch text[start] {
	case '{', '[':
		return r.flow(text, start, line, column, depth+1)
	case '\'', '"':
		return r.quoted(text, start, line, column+start)
	}
	// A plain scalar in a flow collection does not start with ":" or "?" (yaml.v3 refuses
	// it), and ends at a comma, a bracket, or ": "; "?" would end it too, and " #" start a
	// comment.
	if text[start] == ':' || text[start] == '?' {
		return nil, 0
	}
	end := start
scan:
	for ; end < len(text); end++ {
		switch text[end] {
		case ',', '[', ']', '{', '}', '?', '#':
			break scan
		case ':':
			if end+1 == len(text) || text[end+1] == ' ' {
				break scan
			}
		}
	}
	if end < len(text) && (text[end] == '?' || text[end] == '#') {
		return nil, 0
	}
	return r.plain(strings.TrimRight(text[start:end], " "), line, column+start), end
}

func skipSpaces(text string, i int) int {
	for i < len(text) && text[i] == ' ' {
		i++
	}
	return i
}

// endsValue reports whether what follows a value on its line is nothing or a comment.
func endsValue(rest string) bool {
	trimmed := strings.TrimLeft(rest, " ")
	return trimmed == "" || (trimmed[0] == '#' && len(trimmed) < len(rest))
}

// quoted parses the quoted scalar that starts at text[start], at column, if it ends on
// its line and has no escapes but a doubled single quote, and returns it with the index
// past its closing quote.
func (r *blockReader) quoted(text string, start, line, column int) (*yamlv3.Node, int) {
	quote := text[start]
	style := yamlv3.DoubleQuotedStyle
	if quote == '\'' {
		style = yamlv3.SingleQuotedStyle
	}
	end, escaped := -1, false
	for i := start + 1; i < len(text); i++ {
		switch {
		case text[i] == '\\' && quote == '"':
			return nil, 0
		case text[i] == quote && quote == '\'' && i+1 < len(text) && text[i+1] == '\'':
			escaped = true
			i++
		case text[i] == quote:
			end = i
		}
		if end >= 0 {
			break
		}
	}
	if end < 0 {
		return nil, 0
	}
	value := text[start+1 : end]
	if escaped {
		value = strings.ReplaceAll(value, "''", "'")
	}
	n := r.node(yamlv3.ScalarNode, "!!str", value, line, column)
	n.Style = style
	return n, end + 1
}

// What the first byte of a plain scalar can be, looked up in one step: a quarter of
// reading a scalar went to finding it in lists of bytes.
const (
	indicator     = 1 << iota // starts something other than a plain scalar
	spacedOrAlone             // the same, followed by a space or alone
	resolvable                // may start a number, a boolean, a null or a timestamp
)

var firstByte = func() (class [256]uint8) {
	for _, set := range []struct {
		bytes string
		class uint8
	}{{"[]{},#&*!|>'\"%@`", indicator}, {"-?:", spacedOrAlone}, {"+-.0123456789yYnNtTfFoO~", resolvable}} {
		for _, b := range []byte(set.bytes) {
			class[b] |= set.class
		}
	}
	return class
}()

// plain parses a plain scalar, its tag resolved as yaml.v3 resolves it (but for the
// merge key, left to yaml.v3).
func (r *blockReader) plain(text string, line, column int) *yamlv3.Node {
	if text == "" {
		return nil
	}
	class := firstByte[text[0]]
	if text == "<<" || class&indicator != 0 || class&spacedOrAlone != 0 && (len(text) == 1 || text[1] == ' ') ||
		strings.Contains(text, ": ") || strings.Contains(text, " #") || strings.HasSuffix(text, ":") ||
		strings.HasSuffix(text, " ") {
		return nil
	}
	n := r.node(yamlv3.ScalarNode, "!!str", text, line, column)
	if class&resolvable != 0 {
		n.Tag = plainTag(n)
	}
	return n
}

// notNumeric holds the bytes that no number or timestamp yaml.v3 resolves has.
var notNumeric = func() (set [256]bool) {
	for c := range set {
		set[c] = !strings.ContainsRune("0123456789abcdefABCDEFxXoOpPtTzZ+-._: ", rune(c))
	}
	return set
}()

// plainTag resolves the tag of a plain scalar n as yaml.v3 does. The cases common in
// manifests are decided here, as yaml.v3's resolution, which tries each kind of number
// and timestamp, took a twentieth of reading them: a decimal integer (8080), text that
// starts with a digit but has a byte no number or timestamp has (100m, 128Mi), and text
// that starts with a letter, which yaml.v3 reads as a boolean or a null only when it is
// one of a few words (and names, namespace, tier, true, start with such letters).
func plainTag(n *yamlv3.Node) string {
	text := n.Value
	if strings.ContainsRune("yYnNtTfFoO~", rune(text[0])) {
		switch text {
		case "true", "True", "TRUE", "false", "False", "FALSE":
			return "!!bool"
		case "~", "null", "Null", "NULL":
			return "!!null"
		}
		return "!!str"
	}
	if text[0] >= '0' && text[0] <= '9' {
		digits, numeric := true, true
		for i := 0; i < len(text); i++ {
			digits = digits && text[i] >= '0' && text[i] <= '9'
			numeric = numeric && !notNumeric[text[i]]
		}
		switch {
		case digits && (text[0] != '0' || len(text) == 1) && len(text) <= 18:
			return "!!int"
		case !numeric:
			return "!!str"
		}
	}
	n.Tag = ""
	return n.ShortTag()
}
