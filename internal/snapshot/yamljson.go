package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// Aliases can make a short file expand without end: "billion laughs" documents are a few
// lines that expand to more nodes than memory holds, Lists of aliases of Lists to more
// objects, and one large string repeated through aliases to more bytes. Each file has
// one budget, spent by the flattening of its Lists and the conversion of its objects to
// JSON: the nodes visited, which bound the work, and the bytes written, which bound the
// memory, each at most maxExpansion times the file's size.
//
// Without aliases a file comes nowhere near: it holds fewer nodes than bytes (a tenth
// in this repository's manifests), and its JSON is about its size, as JSON drops YAML's
// indentation and adds quotes (0.94 times at most here; contrived strings reach six
// times, each & escaped as \u0026). Eight leaves room for that and for anchors shared by
// a few objects, and keeps what a file's aliases can cost within a small multiple of what
// a file of its size costs without them.
const maxExpansion = 8

// maxDepth bounds the nesting of the JSON written. YAML parsers and JSON decoders stop at
// it (this one's parser and sigs.k8s.io/json alike), so only an alias can go deeper, and
// an alias of a node inside itself goes on without end.
const maxDepth = 10000

var (
	errExpansion = fmt.Errorf("the file expands past %d times its size here (YAML aliases?); none of it is read", maxExpansion)
	errTooDeep   = fmt.Errorf("nested more than %d deep through aliases", maxDepth)
)

// budget is what one file has left to expand to.
type budget struct {
	nodes, bytes int
}

func newBudget(size int) budget {
	return budget{nodes: maxExpansion * size, bytes: maxExpansion * size}
}

// take spends nodes, or reports that the budget does not have them.
func (b *budget) take(nodes int) error {
	if b.nodes -= nodes; b.nodes < 0 {
		return errExpansion
	}
	return nil
}

// jsonWriter renders parsed YAML as JSON. Parsing once into nodes serves both the JSON
// decoding of objects and the line numbers of items and bad fields, and writing JSON
// straight from the nodes avoids the generic maps a YAML-to-JSON library builds. One
// writer serves a file, reusing its buffer, and spends the file's budget.
type jsonWriter struct {
	buf    bytes.Buffer
	budget *budget
}

// toJSON renders n. The JSON is valid until the next call.
func (w *jsonWriter) toJSON(n *yamlv3.Node) ([]byte, error) {
	w.buf.Reset()
	if err := w.node(n, 0); err != nil {
		return nil, err
	}
	w.budget.bytes -= w.buf.Len()
	return w.buf.Bytes(), nil
}

// room checks that n more bytes fit in the budget, before they are written: a large
// string repeated through aliases is refused before it is copied once more.
func (w *jsonWriter) room(n int) error {
	if w.buf.Len()+n > w.budget.bytes {
		return errExpansion
	}
	return nil
}

func (w *jsonWriter) node(n *yamlv3.Node, depth int) error {
	if depth > maxDepth {
		return errTooDeep
	}
	if err := w.budget.take(1); err != nil {
		return err
	}
	if err := w.room(0); err != nil {
		return err
	}
	switch n.Kind {
	case yamlv3.DocumentNode:
		if len(n.Content) == 0 {
			w.buf.WriteString("null")
			return nil
		}
		return w.node(n.Content[0], depth)
	case yamlv3.AliasNode:
		return w.node(n.Alias, depth)
	case yamlv3.SequenceNode:
		w.buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				w.buf.WriteByte(',')
			}
			if err := w.node(c, depth+1); err != nil {
				return err
			}
		}
		w.buf.WriteByte(']')
		return nil
	case yamlv3.MappingNode:
		w.buf.WriteByte('{')
		first := true
		if err := w.pairs(n, &first, depth+1); err != nil {
			return err
		}
		w.buf.WriteByte('}')
		return nil
	case yamlv3.ScalarNode:
		if err := w.room(len(n.Value)); err != nil {
			return err
		}
		w.scalar(n)
		return nil
	}
	w.buf.WriteString("null")
	return nil
}

// pairs writes a mapping's entries. Merge keys (<<) are written first, so that the
// mapping's own keys, written after, win: JSON decoders keep the last duplicate. depth is
// that of the values; the pairs merged count as a level deeper, for a merge key can merge
// the mapping it is in.
func (w *jsonWriter) pairs(n *yamlv3.Node, first *bool, depth int) error {
	if depth > maxDepth {
		return errTooDeep
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.ShortTag() != "!!merge" {
			continue
		}
		for v.Kind == yamlv3.AliasNode {
			v = v.Alias
		}
		targets := []*yamlv3.Node{v}
		if v.Kind == yamlv3.SequenceNode {
			targets = v.Content
		}
		for _, t := range targets {
			for t.Kind == yamlv3.AliasNode {
				t = t.Alias
			}
			if t.Kind != yamlv3.MappingNode {
				return errors.New("merge key (<<) on something other than a mapping")
			}
			if err := w.budget.take(len(t.Content)); err != nil {
				return err
			}
			if err := w.pairs(t, first, depth+1); err != nil {
				return err
			}
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.ShortTag() == "!!merge" {
			continue
		}
		if !*first {
			w.buf.WriteByte(',')
		}
		*first = false
		for k.Kind == yamlv3.AliasNode {
			k = k.Alias
		}
		if k.Kind != yamlv3.ScalarNode {
			return errors.New("mapping key that is not a scalar")
		}
		if err := w.room(len(k.Value)); err != nil {
			return err
		}
		w.str(k.Value)
		w.buf.WriteByte(':')
		if err := w.node(v, depth); err != nil {
			return err
		}
	}
	return nil
}

func (w *jsonWriter) scalar(n *yamlv3.Node) {
	switch n.ShortTag() {
	case "!!null":
		w.buf.WriteString("null")
		return
	case "!!bool":
		if b, err := strconv.ParseBool(n.Value); err == nil {
			w.buf.WriteString(strconv.FormatBool(b))
			return
		}
	case "!!int":
		if i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64); err == nil {
			w.buf.WriteString(strconv.FormatInt(i, 10))
			return
		}
	case "!!float":
		if f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			w.buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
			return
		}
	}
	// Strings, timestamps, binary and anything JSON has no form for stay text.
	w.str(n.Value)
}

func (w *jsonWriter) str(s string) {
	// Most strings in manifests need no escaping; only the others pay for json.Marshal.
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			out, _ := json.Marshal(s)
			w.buf.Write(out)
			return
		}
	}
	w.buf.WriteByte('"')
	w.buf.WriteString(s)
	w.buf.WriteByte('"')
}
