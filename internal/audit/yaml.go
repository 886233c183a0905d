package audit

import (
	"slices"
	"strconv"
	"strings"
)

// The fixes are small trees of maps, lists, strings and numbers built in this package.
// Rendering them here, in the block style kubectl users read, costs a fraction of a
// generic YAML marshaller, which dominated the audit of large clusters.

// plain reports whether YAML reads the string back unchanged without quotes: a letter,
// underscore or slash, then letters, digits and _ . / -. A hand-written test, because the
// audit renders one fix per finding and a regular expression showed in its profile.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '/':
		case i > 0 && (c >= '0' && c <= '9' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	return s != ""
}

// reserved are plain-looking words that YAML 1.1 readers take as booleans or null.
var reserved = map[string]bool{
	"true": true, "false": true, "yes": true, "no": true, "on": true, "off": true,
	"y": true, "n": true, "null": true, "~": true,
}

// longestReserved is the length of the longest reserved word: longer strings (most keys,
// matchLabels) are not looked up, which made them lower case first.
var longestReserved = func() (n int) {
	for w := range reserved {
		n = max(n, len(w))
	}
	return n
}()

func scalar(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		if plain(v) && (len(v) > longestReserved || !reserved[strings.ToLower(v)]) {
			return v
		}
		return strconv.Quote(v)
	case int:
		return strconv.Itoa(v)
	case int32:
		return strconv.Itoa(int(v))
	case bool:
		return strconv.FormatBool(v)
	}
	panic("audit: cannot render a fix value of this type")
}

// renderYAML writes v at the given indentation. Maps have their keys sorted; list items
// sit at their key's indentation, as kubectl prints them. It writes a piece at a time:
// one fix per finding, and joining the pieces first took most of the time of the fixes.
func renderYAML(b *strings.Builder, v any, indent int) {
	switch v := v.(type) {
	case obj:
		renderMap(b, v, indent, false)
	case map[string]string:
		var buf [8]string
		for _, k := range sortedKeys(buf[:0], v) {
			pad(b, indent)
			b.WriteString(scalar(k))
			b.WriteString(": ")
			b.WriteString(scalar(v[k]))
			b.WriteByte('\n')
		}
	case []obj:
		for _, item := range v {
			renderMap(b, item, indent+2, true)
		}
	case []string:
		for _, item := range v {
			pad(b, indent)
			b.WriteString("- ")
			b.WriteString(scalar(item))
			b.WriteByte('\n')
		}
	default:
		pad(b, indent)
		b.WriteString(scalar(v))
		b.WriteByte('\n')
	}
}

// renderMap writes a map's entries at indent; item makes it a list item, its first
// entry after "- ".
func renderMap(b *strings.Builder, m obj, indent int, item bool) {
	prefix := func(first bool) {
		if first && item {
			pad(b, indent-2)
			b.WriteString("- ")
			return
		}
		pad(b, indent)
	}
	if len(m) == 0 {
		prefix(true)
		b.WriteString("{}\n")
		return
	}
	var buf [8]string
	for i, k := range sortedKeys(buf[:0], m) {
		prefix(i == 0)
		b.WriteString(scalar(k))
		b.WriteByte(':')
		switch v := m[k].(type) {
		case obj, map[string]string:
			if isEmpty(v) {
				b.WriteString(" {}\n")
				continue
			}
			b.WriteByte('\n')
			renderYAML(b, v, indent+2)
		case []obj, []string:
			b.WriteByte('\n')
			renderYAML(b, v, indent)
		default:
			b.WriteByte(' ')
			b.WriteString(scalar(v))
			b.WriteByte('\n')
		}
	}
}

// sortedKeys appends m's keys to keys, sorted. A fix's maps are small: given an array
// on the caller's stack, it allocates nothing.
func sortedKeys[V any](keys []string, m map[string]V) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// pad writes n spaces.
func pad(b *strings.Builder, n int) {
	const spaces = "                                "
	for ; n > len(spaces); n -= len(spaces) {
		b.WriteString(spaces)
	}
	b.WriteString(spaces[:n])
}

func isEmpty(v any) bool {
	switch v := v.(type) {
	case obj:
		return len(v) == 0
	case map[string]string:
		return len(v) == 0
	}
	return false
}
