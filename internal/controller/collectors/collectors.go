// Package collectors registers the operator's Prometheus collectors.
package collectors

import (
	"errors"
	"strings"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c with reg and returns it, or, when a process builds the operator
// more than once (tests restart it), the collector of the same kind registered the
// first time, so that its series carry on. The caller's error says whose metrics.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}

// The label names of every holdfast_* family: one name for one thing across families, so
// that series join on them (a policy is always `policy`, never `name`).
const (
	LabelNamespace  = "namespace"
	LabelPolicy     = "policy"
	LabelCompanion  = "companion"
	LabelWorkload   = "workload"
	LabelKind       = "kind"
	LabelBudget     = "budget"
	LabelState      = "state"
	LabelOutcome    = "outcome"
	LabelType       = "type"
	LabelStatus     = "status"
	LabelReason     = "reason"
	LabelNode       = "node"
	LabelZone       = "zone"
	LabelAutoscaler = "autoscaler"
)

// LabelValue turns an API constant such as "NoBetterPlace" into the snake_case of every
// label value holdfast exports ("no_better_place"); Kind label values are left as
// Kubernetes spells them.
func LabelValue(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
