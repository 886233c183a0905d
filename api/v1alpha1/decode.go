package v1alpha1

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"
)

// ReasonInvalidSpec is the reason of a condition, and of a Warning Event, on an object
// whose stored spec holds a value the operator cannot decode: stored before the schema
// refused it. The operator leaves what the object manages as it is until it is fixed.
const ReasonInvalidSpec = "InvalidSpec"

// decodeFields decodes data, a JSON object, into out, and never fails on a field's
// value. The API server validates every object it stores, but only by the schema of the
// day: an object stored before the schema tightened can hold a value the Go types
// cannot decode (a duration "banana", a count beyond int32). One such object would fail
// the decoding of every list of its kind, so the operator's cache of that kind could
// never sync and every controller would stop. Instead, when the whole object does not
// decode, each field is decoded alone, and the fields that do not are left zero and
// returned with why, for the controller to report on that one object.
//
// T must be a type without an UnmarshalJSON method (a defined type over the spec's
// struct), or decoding would recurse.
func decodeFields[T any](data []byte, out *T) ([]string, error) {
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, out); err == nil {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, fmt.Errorf("decoding a spec: %w", err)
	}
	var zero T
	*out = zero
	var bad []string
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		one, err := json.Marshal(map[string]json.RawMessage{name: fields[name]})
		if err != nil {
			return nil, fmt.Errorf("encoding field %s: %w", name, err)
		}
		var probe T
		if err := kjson.UnmarshalCaseSensitivePreserveInts(one, &probe); err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(one, out); err != nil {
			return nil, fmt.Errorf("decoding field %s: %w", name, err)
		}
	}
	return bad, nil
}

// UnmarshalJSON decodes a DisruptionPolicySpec, leaving the fields whose stored values
// cannot be decoded empty and listing them in DecodeErrors (see decodeFields).
func (s *DisruptionPolicySpec) UnmarshalJSON(data []byte) error {
	type plain DisruptionPolicySpec
	bad, err := decodeFields(data, (*plain)(s))
	s.DecodeErrors = bad
	return err
}

// UnmarshalJSON decodes a NodeCompanionSpec, leaving the fields whose stored values
// cannot be decoded empty and listing them in DecodeErrors (see decodeFields), with what
// decodeTemplate finds in the pod template.
func (s *NodeCompanionSpec) UnmarshalJSON(data []byte) error {
	type plain NodeCompanionSpec
	bad, err := decodeFields(data, (*plain)(s))
	if err != nil {
		return err
	}
	s.DecodeErrors = append(bad, decodeTemplate(data)...)
	return nil
}

// decodeTemplate checks spec.template of data, a NodeCompanion spec, strictly against
// the pod template it must be. The CRD keeps the template as given, without its schema
// (hack/crdschema/podtemplate.yaml), so the API server stores fields that no pod has,
// which a plain decoding would drop without a word: a misspelt field would leave the
// companions without, say, their resources or probes. Each such field is returned, to
// be reported as the values that cannot be decoded are. A template that does not decode
// at all is already among those.
func decodeTemplate(data []byte) []string {
	var spec struct {
		Template json.RawMessage `json:"template"`
	}
	if err := json.Unmarshal(data, &spec); err != nil || len(spec.Template) == 0 {
		return nil
	}
	var tmpl corev1.PodTemplateSpec
	strict, err := kjson.UnmarshalStrict(spec.Template, &tmpl, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(strict))
	for _, e := range strict {
		out = append(out, "template: "+e.Error())
	}
	return out
}

// SpecDecodeErrors are the fields of the stored spec that could not be decoded.
func (p *DisruptionPolicy) SpecDecodeErrors() []string { return p.Spec.DecodeErrors }

// SpecDecodeErrors are the fields of the stored spec's template that could not be decoded.
func (p *ClusterDisruptionPolicy) SpecDecodeErrors() []string { return p.Spec.Template.DecodeErrors }

// SpecDecodeErrors are the fields of the stored spec that could not be decoded.
func (nc *NodeCompanion) SpecDecodeErrors() []string { return nc.Spec.DecodeErrors }
