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

// Aliases can make a short document expand without end: "billion laughs" documents are
// a few lines that expand to more nodes than memory holds, and one large string repeated
// through aliases expands to more bytes. Both are bounded: the nodes written, which
// bounds the work, and the bytes, which bounds the memory. No object the API server keeps
// comes near either (etcd refuses objects over 1.5 MB).
const (
	maxExpandedNodes = 1 << 20
	maxExpandedBytes = 64 << 20
)

var (
	errTooManyAliases = errors.New("document expands to too many nodes through aliases")
	errTooLarge       = fmt.Errorf("document expands to more than %d MiB of JSON through aliases", maxExpandedBytes>>20)
)

// toJSON renders a parsed YAML document as JSON. Parsing once into nodes serves both the
// JSON decoding of objects and the line numbers of items and bad fields, and writing JSON
// straight from the nodes avoids the generic maps a YAML-to-JSON library builds.
func toJSON(n *yamlv3.Node) ([]byte, error) {
	w := jsonWriter{budget: maxExpandedNodes, maxBytes: maxExpandedBytes}
	if err := w.node(n); err != nil {
		return nil, err
	}
	return w.buf.Bytes(), nil
}

type jsonWriter struct {
	buf bytes.Buffer
	// budget is the nodes left to write, maxBytes the most the output may hold.
	budget   int
	maxBytes int
}

func (w *jsonWriter) node(n *yamlv3.Node) error {
	if w.budget--; w.budget < 0 {
		return errTooManyAliases
	}
	if w.buf.Len() > w.maxBytes {
		return errTooLarge
	}
	switch n.Kind {
	case yamlv3.DocumentNode:
		if len(n.Content) == 0 {
			w.buf.WriteString("null")
			return nil
		}
		return w.node(n.Content[0])
	case yamlv3.AliasNode:
		return w.node(n.Alias)
	case yamlv3.SequenceNode:
		w.buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				w.buf.WriteByte(',')
			}
			if err := w.node(c); err != nil {
				return err
			}
		}
		w.buf.WriteByte(']')
		return nil
	case yamlv3.MappingNode:
		w.buf.WriteByte('{')
		first := true
		if err := w.pairs(n, &first); err != nil {
			return err
		}
		w.buf.WriteByte('}')
		return nil
	case yamlv3.ScalarNode:
		// Checked before writing: a large string repeated through aliases is refused
		// before it is copied once more.
		if w.buf.Len()+len(n.Value) > w.maxBytes {
			return errTooLarge
		}
		w.scalar(n)
		return nil
	}
	w.buf.WriteString("null")
	return nil
}

// pairs writes a mapping's entries. Merge keys (<<) are written first, so that the
// mapping's own keys, written after, win: JSON decoders keep the last duplicate.
func (w *jsonWriter) pairs(n *yamlv3.Node, first *bool) error {
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
			if w.budget -= len(t.Content); w.budget < 0 {
				return errTooManyAliases
			}
			if err := w.pairs(t, first); err != nil {
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
		if w.buf.Len()+len(k.Value) > w.maxBytes {
			return errTooLarge
		}
		w.str(k.Value)
		w.buf.WriteByte(':')
		if err := w.node(v); err != nil {
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
