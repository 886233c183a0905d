package snapshot

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"

	sigsjson "sigs.k8s.io/json"
)

// decodeTyped decodes the JSON jsonWriter writes into v, an addressable zero value, as
// sigs.k8s.io/json's strict decoding does, and reports whether it could. It takes only
// what it can decode exactly as that decoding does, with nothing to report: compact
// JSON (no spaces between tokens), each field known to the type. For anything else (an
// unknown field, a value of the wrong type, a syntax error) it gives up, leaving v half
// written, and the caller decodes the JSON as before, for the problems and their paths.
//
// The strict decoder's scanner reads every byte twice (once to check the syntax, once to
// decode) through a state machine, and was a third of `holdfast audit -f all.yaml`'s CPU;
// this reads the JSON once. Types that decode themselves (resource.Quantity, metav1.Time,
// intstr.IntOrString, runtime.RawExtension...) are given their value's text as before.
func decodeTyped(js []byte, v reflect.Value, maps sharedMaps) bool {
	r := typedReader{data: js, maps: maps}
	return r.value(v, planFor(v.Type()), 0) && r.pos == len(js)
}

// maxTypedDepth bounds the nesting decodeTyped follows; deeper JSON, which no manifest
// has, is left to the JSON decoder and its limit.
const maxTypedDepth = 1000

// planKind is how decodeTyped fills a type.
type planKind uint8

const (
	// planDelegate: decoded by sigs.k8s.io/json, as a document of its own: kinds and
	// types that are rare in manifests and whose rules (base64 text for []byte, a
	// TextUnmarshaler, interfaces, ",string" fields, embedded pointers) are not copied.
	// Decoding a value alone does what decoding it inside the object does, as the rules
	// of each of those depend only on the value and its type.
	planDelegate planKind = iota
	// planRefuse: decodeTyped gives up.
	planRefuse
	// planUnmarshaler: the type decodes itself from its value's text.
	planUnmarshaler
	planStruct
	planMap
	// planLabels: map[string]string, labels and annotations, filled without reflection.
	planLabels
	planSlice
	planPointer
	planString
	planBool
	planInt
	planUint
	planFloat
)

// plan is how decodeTyped fills one type.
type plan struct {
	kind planKind
	// elem is the plan of a pointer's, a slice's or a map's values.
	elem *plan
	// fields are a struct's fields by JSON name, those of embedded structs included.
	fields map[string]typedField
}

// typedField is a struct's field: its index, through the structs embedded, and its plan.
type typedField struct {
	index []int
	plan  *plan
}

var (
	plans           sync.Map // reflect.Type to *plan
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// planFor returns the plan of t, built once per type and shared by every core.
func planFor(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	p := buildPlan(t, map[reflect.Type]*plan{})
	actual, _ := plans.LoadOrStore(t, p)
	return actual.(*plan)
}

// buildPlan builds the plan of t; building holds the plans being built, for types that
// contain themselves.
func buildPlan(t reflect.Type, building map[reflect.Type]*plan) *plan {
	if p, ok := building[t]; ok {
		return p
	}
	p := &plan{}
	building[t] = p
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface &&
		(reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)) {
		switch {
		case t.Name() == "":
			// An unnamed type with methods promoted from an embedded one: the JSON
			// decoder reads it as a struct inside an object, but calls its method when
			// it is decoded alone, so it can be neither read here nor delegated.
			p.kind = planRefuse
		case reflect.PointerTo(t).Implements(jsonUnmarshaler):
			p.kind = planUnmarshaler
		}
		return p // else a TextUnmarshaler: planDelegate
	}
	if t == reflect.TypeFor[json.Number]() {
		return p // planDelegate: a string checked to be a number
	}
	switch t.Kind() {
	case reflect.Pointer:
		// A named pointer type or a pointer to a pointer: delegated.
		if t.Name() == "" && t.Elem().Kind() != reflect.Pointer {
			p.kind, p.elem = planPointer, buildPlan(t.Elem(), building)
		}
	case reflect.Slice:
		if t.Elem().Kind() != reflect.Uint8 {
			p.kind, p.elem = planSlice, buildPlan(t.Elem(), building)
		}
	case reflect.Map:
		k := t.Key()
		switch {
		case t == reflect.TypeFor[map[string]string]():
			p.kind = planLabels
		case k.Kind() == reflect.String && !reflect.PointerTo(k).Implements(textUnmarshaler):
			p.kind, p.elem = planMap, buildPlan(t.Elem(), building)
		}
	case reflect.Struct:
		fields := map[string]typedField{}
		if structFields(t, nil, fields, building) {
			p.kind, p.fields = planStruct, fields
		}
	case reflect.String:
		p.kind = planString
	case reflect.Bool:
		p.kind = planBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		p.kind = planInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		p.kind = planUint
	case reflect.Float32, reflect.Float64:
		p.kind = planFloat
	}
	return p
}

// structFields adds the JSON fields of struct t, at index, to fields, and reports whether
// decodeTyped can fill them as encoding/json's rules do. It keeps to the plain case: a
// name given twice (which those rules settle by depth and tags), an embedded pointer or
// unexported struct, the ",string" option or a name with unusual characters make the
// whole struct delegated. Other options (omitempty, Kubernetes' inline) change nothing
// in decoding.
func structFields(t reflect.Type, index []int, fields map[string]typedField, building map[reflect.Type]*plan) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		for opt := range strings.SplitSeq(opts, ",") {
			if opt == "string" {
				return false
			}
		}
		if !plainName(name) {
			return false
		}
		at := append(append([]int(nil), index...), i)
		if f.Anonymous {
			if !f.IsExported() || f.Type.Kind() != reflect.Struct {
				return false
			}
			if name == "" {
				if !structFields(f.Type, at, fields, building) {
					return false
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		if _, twice := fields[name]; twice {
			return false
		}
		fields[name] = typedField{index: at, plan: buildPlan(f.Type, building)}
	}
	return true
}

// plainName reports whether a tag's name is made of the characters Kubernetes' names
// are, which encoding/json takes as they are.
func plainName(name string) bool {
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("_-.$/", c)) {
			return false
		}
	}
	return true
}

// typedReader reads compact JSON.
type typedReader struct {
	data []byte
	pos  int
	maps sharedMaps // nil: every map its own
}

// sharedMaps are the maps decoded so far, by their type and text, for objects to share:
// labels, selectors and resource lists are written alike again and again (a Deployment's
// labels and its template's, every container's requests), and a map, however small, takes
// some 300 bytes: a third of 10,000 Deployments' memory. The snapshot is read-only, as the
// operator's cache is, so that no object's change shows in another's.
type sharedMaps map[sharedKey]any

type sharedKey struct {
	t    reflect.Type
	text string
}

func (r *typedReader) peek() byte {
	if r.pos < len(r.data) {
		return r.data[r.pos]
	}
	return 0
}

// value decodes the value at r.pos into v with plan p.
func (r *typedReader) value(v reflect.Value, p *plan, depth int) bool {
	if depth > maxTypedDepth {
		return false
	}
	switch p.kind {
	case planRefuse:
		return false
	case planUnmarshaler:
		start := r.pos
		return r.skip(depth) && v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(r.data[start:r.pos]) == nil
	case planDelegate:
		start := r.pos
		if !r.skip(depth) {
			return false
		}
		strict, err := sigsjson.UnmarshalStrict(r.data[start:r.pos], v.Addr().Interface(), sigsjson.DisallowUnknownFields)
		return err == nil && len(strict) == 0
	}
	c := r.peek()
	if c == 'n' {
		if !r.literal("null") {
			return false
		}
		// null empties pointers, slices and maps, and leaves other values as they are.
		if p.kind == planPointer || p.kind == planSlice || p.kind == planMap || p.kind == planLabels {
			v.SetZero()
		}
		return true
	}
	switch p.kind {
	case planPointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return r.value(v.Elem(), p.elem, depth)
	case planStruct:
		return c == '{' && r.object(v, p, depth)
	case planMap, planLabels:
		return c == '{' && r.sharedMap(v, p, depth)
	case planSlice:
		return c == '[' && r.array(v, p, depth)
	case planString:
		s, ok := r.str()
		if ok {
			v.SetString(s)
		}
		return ok
	case planBool:
		switch {
		case r.literal("true"):
			v.SetBool(true)
		case r.literal("false"):
			v.SetBool(false)
		default:
			return false
		}
		return true
	case planInt, planUint, planFloat:
		return r.number(v, p.kind)
	}
	return false
}

// members reads an object's members, calling member with each key once the reader is at
// its value; member reads the value. The key's bytes are valid until the next read: a
// struct's field is looked up without making it a string, which took an allocation per
// key. It reports whether the object was read whole.
func (r *typedReader) members(member func(key []byte) bool) bool {
	r.pos++ // {
	if r.peek() == '}' {
		r.pos++
		return true
	}
	for {
		key, ok := r.text()
		if !ok || r.peek() != ':' {
			return false
		}
		r.pos++
		if !member(key) || !r.next('}') {
			return false
		}
		if r.data[r.pos-1] == '}' {
			return true
		}
	}
}

func (r *typedReader) object(v reflect.Value, p *plan, depth int) bool {
	return r.members(func(key []byte) bool {
		// A field given twice is decoded twice, into the same place, as the JSON
		// decoder decodes it.
		f, known := p.fields[string(key)]
		if !known {
			return false // for the JSON decoder to list, with its path
		}
		return r.value(v.FieldByIndex(f.index), f.plan, depth+1)
	})
}

// sharedMap decodes a map, or gives v the one decoded before from the same text.
func (r *typedReader) sharedMap(v reflect.Value, p *plan, depth int) bool {
	decode := func() bool {
		if p.kind == planLabels {
			return r.labels(v)
		}
		return r.mapping(v, p, depth)
	}
	if r.maps == nil {
		return decode()
	}
	if !v.IsNil() {
		// A field given twice: the JSON decoder adds the second map's keys to the first,
		// which may be shared.
		return false
	}
	start := r.pos
	if !r.skip(depth) {
		return false
	}
	key := sharedKey{v.Type(), string(r.data[start:r.pos])}
	if m, ok := r.maps[key]; ok {
		v.Set(reflect.ValueOf(m))
		return true
	}
	r.pos = start
	if !decode() {
		return false
	}
	r.maps[key] = v.Interface()
	return true
}

func (r *typedReader) mapping(v reflect.Value, p *plan, depth int) bool {
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	t := v.Type()
	return r.members(func(key []byte) bool {
		elem := reflect.New(t.Elem()).Elem()
		if !r.value(elem, p.elem, depth+1) {
			return false
		}
		k := reflect.New(t.Key()).Elem()
		k.SetString(string(key))
		// A key given twice keeps its last value, as the JSON decoder keeps it.
		v.SetMapIndex(k, elem)
		return true
	})
}

// labels is mapping for map[string]string.
func (r *typedReader) labels(v reflect.Value) bool {
	if v.IsNil() {
		v.Set(reflect.ValueOf(map[string]string{}))
	}
	m := v.Interface().(map[string]string)
	return r.members(func(key []byte) bool {
		value, ok := "", true
		// null leaves the value empty; the JSON decoder refuses numbers and booleans.
		if !r.literal("null") {
			if value, ok = r.str(); !ok {
				return false
			}
		}
		m[string(key)] = value
		return true
	})
}

func (r *typedReader) array(v reflect.Value, p *plan, depth int) bool {
	r.pos++ // [
	if r.peek() == ']' {
		r.pos++
		// An empty list is an empty slice, not nil, as the JSON decoder makes it.
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		return true
	}
	for i := 0; ; i++ {
		if i >= v.Cap() {
			v.Grow(1)
		}
		v.SetLen(i + 1)
		if !r.value(v.Index(i), p.elem, depth+1) || !r.next(']') {
			return false
		}
		if r.data[r.pos-1] == ']' {
			return true
		}
	}
}

// next reads the comma between members, or the closing bracket.
func (r *typedReader) next(closing byte) bool {
	if c := r.peek(); c == ',' || c == closing {
		r.pos++
		return true
	}
	return false
}

func (r *typedReader) literal(word string) bool {
	if len(r.data)-r.pos >= len(word) && string(r.data[r.pos:r.pos+len(word)]) == word {
		r.pos += len(word)
		return true
	}
	return false
}

// str reads a string. Strings with escapes or bytes outside printable ASCII, rare in
// manifests, are unquoted by encoding/json, whose rules (invalid UTF-8, surrogates) the
// strict decoder shares.
func (r *typedReader) str() (string, bool) {
	text, ok := r.text()
	return string(text), ok
}

// text is str's bytes, a part of the JSON when the string has no escapes.
func (r *typedReader) text() ([]byte, bool) {
	if r.peek() != '"' {
		return nil, false
	}
	start, plain := r.pos, true
	for r.pos++; r.pos < len(r.data); r.pos++ {
		switch c := r.data[r.pos]; {
		case c == '"':
			r.pos++
			if plain {
				return r.data[start+1 : r.pos-1], true
			}
			var s string
			err := json.Unmarshal(r.data[start:r.pos], &s)
			return []byte(s), err == nil
		case c == '\\':
			plain = false
			r.pos++
		case c < 0x20 || c >= 0x7f:
			plain = false
		}
	}
	return nil, false
}

// number reads a number into an integer or a float, as the JSON decoder converts it.
func (r *typedReader) number(v reflect.Value, kind planKind) bool {
	start := r.pos
	if !r.numberToken() {
		return false
	}
	text := string(r.data[start:r.pos])
	switch kind {
	case planInt:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || v.OverflowInt(n) {
			return false
		}
		v.SetInt(n)
	case planUint:
		n, err := strconv.ParseUint(text, 10, 64)
		if err != nil || v.OverflowUint(n) {
			return false
		}
		v.SetUint(n)
	default:
		n, err := strconv.ParseFloat(text, v.Type().Bits())
		if err != nil || v.OverflowFloat(n) {
			return false
		}
		v.SetFloat(n)
	}
	return true
}

// numberToken reads a number as JSON writes them: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *typedReader) numberToken() bool {
	if r.peek() == '-' {
		r.pos++
	}
	switch c := r.peek(); {
	case c == '0':
		r.pos++
	case '1' <= c && c <= '9':
		r.digits()
	default:
		return false
	}
	if r.peek() == '.' {
		r.pos++
		if !r.digits() {
			return false
		}
	}
	if c := r.peek(); c == 'e' || c == 'E' {
		r.pos++
		if c := r.peek(); c == '+' || c == '-' {
			r.pos++
		}
		if !r.digits() {
			return false
		}
	}
	return true
}

// digits reads one digit or more.
func (r *typedReader) digits() bool {
	start := r.pos
	for c := r.peek(); '0' <= c && c <= '9'; c = r.peek() {
		r.pos++
	}
	return r.pos > start
}

// skip reads a value without decoding it, checking its syntax, for the types that are
// given its text.
func (r *typedReader) skip(depth int) bool {
	if depth > maxTypedDepth {
		return false
	}
	switch c := r.peek(); c {
	case '"':
		_, ok := r.str()
		return ok
	case 'n':
		return r.literal("null")
	case 't':
		return r.literal("true")
	case 'f':
		return r.literal("false")
	case '{', '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		r.pos++
		if r.peek() == closing {
			r.pos++
			return true
		}
		for {
			if c == '{' {
				if _, ok := r.str(); !ok || r.peek() != ':' {
					return false
				}
				r.pos++
			}
			if !r.skip(depth+1) || !r.next(closing) {
				return false
			}
			if r.data[r.pos-1] == closing {
				return true
			}
		}
	default:
		return r.numberToken()
	}
}
