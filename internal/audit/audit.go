// Package audit runs an ordered list of rules over an availability Model and returns
// findings: which disruption breaks which workload, and the YAML that fixes it. It is pure:
// no API calls, no clock, no logging.
package audit

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// Severity ranks findings; --fail-on compares against it.
type Severity int

const (
	// Info is worth knowing; nothing breaks by itself.
	Info Severity = iota
	// Warning is a risk that a common disruption turns into an outage.
	Warning
	// Error is an outage or a blocked drain waiting to happen.
	Error
)

var severityNames = [...]string{"info", "warning", "error"}

// String returns the lowercase name used in flags and output.
func (s Severity) String() string { return severityNames[s] }

// MarshalText renders the severity by name in JSON and YAML.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a severity by name.
func (s *Severity) UnmarshalText(text []byte) error {
	v, err := ParseSeverity(string(text))
	*s = v
	return err
}

// ParseSeverity reads info, warning or error.
func ParseSeverity(name string) (Severity, error) {
	if i := slices.Index(severityNames[:], name); i >= 0 {
		return Severity(i), nil
	}
	return 0, fmt.Errorf("unknown severity %q: use error, warning or info", name)
}

// Finding is one rule violated by one object.
type Finding struct {
	Rule      string   `json:"rule"`
	Severity  Severity `json:"severity"`
	Kind      string   `json:"kind"`
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Message   string   `json:"message"`
	Fix       string   `json:"fix"`
	// File and Line point at the object's manifest when it was read from one.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Suppression is set on a finding the user accepted (Suppress).
	Suppression *Suppression `json:"suppression,omitempty"`
}

// Result is what a rule's check says about one object that violates it.
type Result struct {
	Message string
	Fix     string
}

// Rule is one check with a stable ID. A rule looks at workloads, at budgets or at
// holdfast's own objects: exactly one of Workload, Budget and Own is set.
type Rule struct {
	ID       string
	Name     string
	Severity Severity
	// Summary is one line for tables and SARIF; Rationale is the --explain text.
	Summary   string
	Rationale string
	// LiveOnly rules need pods and status, which manifests do not have.
	LiveOnly bool
	Workload func(*availability.Model, *availability.Workload) *Result
	Budget   func(*availability.Model, *availability.Budget) *Result
	// Own checks one of holdfast's own objects (RunOwn); such a rule sets neither of the
	// above.
	Own func(*Own) *Result
}

// Rules returns the catalogue in its fixed order.
func Rules() []Rule { return slices.Clone(rules) }

// Lookup returns the rule with that ID (case-insensitive) or name.
func Lookup(id string) (Rule, bool) {
	for _, r := range rules {
		if strings.EqualFold(r.ID, id) || r.Name == id {
			return r, true
		}
	}
	return Rule{}, false
}

// Run applies every rule to the model. Findings come sorted by namespace, object and rule,
// so that output is stable; origins, when given, add file and line.
func Run(m *availability.Model, origins map[snapshot.ObjectRef]snapshot.Origin) []Finding {
	var out []Finding
	add := func(r Rule, kind, namespace, name string, res *Result) {
		if res == nil {
			return
		}
		f := Finding{Rule: r.ID, Severity: r.Severity, Kind: kind, Namespace: namespace, Name: name, Message: res.Message, Fix: res.Fix}
		if o, ok := origins[snapshot.ObjectRef{Kind: kind, Namespace: namespace, Name: name}]; ok {
			f.File, f.Line = o.File, o.Line
		}
		out = append(out, f)
	}
	for _, r := range rules {
		if r.LiveOnly && m.Source != snapshot.SourceLive {
			continue
		}
		if r.Workload != nil {
			for _, w := range m.Workloads {
				add(r, w.Kind, w.Namespace, w.Name, r.Workload(m, w))
			}
		}
		if r.Budget != nil {
			for _, b := range m.Budgets {
				add(r, snapshot.KindPodDisruptionBudget, b.Namespace, b.Name, r.Budget(m, b))
			}
		}
	}
	return byObject(out)
}

// byObject orders findings by namespace, object and rule, findings alike keeping their
// order. It sorts their indexes: moving the findings themselves, of eight strings each,
// took a stable sort of 5,000 longer than comparing them.
func byObject(findings []Finding) []Finding {
	order := make([]int, len(findings))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int {
		a, b := &findings[i], &findings[j]
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Rule, b.Rule), cmp.Compare(i, j))
	})
	out := make([]Finding, len(findings))
	for k, i := range order {
		out[k] = findings[i]
	}
	return out
}

// Max returns the highest severity among the findings, and false when there are none.
func Max(findings []Finding) (Severity, bool) {
	if len(findings) == 0 {
		return 0, false
	}
	s := Info
	for _, f := range findings {
		s = max(s, f.Severity)
	}
	return s, true
}

// HelpURI is the rule's section of the rules reference, docs/audit-rules.md, which
// TestRulesReference keeps in step with the catalogue.
func (r Rule) HelpURI() string {
	return informationURI + "/blob/main/docs/audit-rules.md#" + strings.ToLower(r.ID+"-"+r.Name)
}
