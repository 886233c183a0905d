package docs

import (
	"go/ast"
	"regexp"
	"strings"
	"testing"
)

// The tables of docs/reference are written by hand, for their meanings; these tests
// keep the names in them in step with the code's constants, both ways, so that a new
// condition, reason, Event, metric or exit code cannot ship unlisted and a removed one
// cannot stay listed.

func TestConditionsReference(t *testing.T) {
	const file = "docs/reference/conditions.md"
	src := parseSource(t, "api/v1alpha1", "internal/policy", "internal/drain")
	types := src.constsNamed("api/v1alpha1", false, regexp.MustCompile(`^Condition[A-Z]`))
	// The drain writes the nodes' maintenance conditions of Kubernetes itself
	// (corev1.NodeDrainInProgress, whose value is its name without "Node", as every
	// NodeConditionType's); they are found where the drain sets them.
	src.calls("internal/drain", func(_ string, _ *ast.File, call *ast.CallExpr) {
		if !strings.HasSuffix(callee(call), ".condition") || len(call.Args) < 2 {
			return
		}
		if sel, ok := call.Args[1].(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "Node") {
			types = append(types, strings.TrimPrefix(sel.Sel.Name, "Node"))
		}
	})
	sameSet(t, file, "condition type", types, tableRows(t, file, "Condition types"))

	reason := regexp.MustCompile(`^Reason[A-Z]`)
	var reasons []string
	for _, dir := range []string{"api/v1alpha1", "internal/policy", "internal/drain"} {
		reasons = append(reasons, src.constsNamed(dir, false, reason)...)
	}
	sameSet(t, file, "reason", reasons, tableRows(t, file, "Reasons"))
}

func TestEventsReference(t *testing.T) {
	const file = "docs/reference/events.md"
	src := parseSource(t, "api/v1alpha1", "internal/controller", "internal/drain")
	event := regexp.MustCompile(`^Event[A-Z]`)
	reasons := append(src.constsNamed("internal/controller", true, event), src.constsNamed("internal/drain", false, event)...)
	// Events recorded with a reason that is not an Event* constant (a condition's reason
	// reused as the Event's).
	src.calls("internal/controller", func(dir string, f *ast.File, call *ast.CallExpr) {
		var arg int
		switch name := callee(call); {
		case name == "announce.Warning" || name == "announce.Normal":
			arg = 0
		case strings.HasSuffix(name, ".Eventf"):
			arg = 3
		default:
			return
		}
		if len(call.Args) <= arg {
			return
		}
		if v, ok := src.value(dir, f, call.Args[arg]); ok {
			reasons = append(reasons, v)
		}
	})
	sameSet(t, file, "Event reason", reasons, tableRows(t, file, ""))
}

func TestMetricsReference(t *testing.T) {
	const file = "docs/reference/metrics.md"
	src := parseSource(t, "internal")
	var families []string
	src.calls("internal", func(dir string, f *ast.File, call *ast.CallExpr) {
		var name, labels ast.Expr
		switch callee(call) {
		case "prometheus.NewGaugeVec", "prometheus.NewCounterVec", "prometheus.NewHistogramVec":
			if len(call.Args) != 2 {
				return
			}
			opts, ok := call.Args[0].(*ast.CompositeLit)
			if !ok {
				t.Errorf("%s: the options of a metric are not a literal: the test cannot read its name", src.fset.Position(call.Pos()))
				return
			}
			for _, e := range opts.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok && kv.Key.(*ast.Ident).Name == "Name" {
					name = kv.Value
				}
			}
			labels = call.Args[1]
		case "prometheus.NewDesc":
			name, labels = call.Args[0], call.Args[2]
		default:
			return
		}
		n, ok := src.value(dir, f, name)
		if !ok || !strings.HasPrefix(n, "holdfast_") {
			return
		}
		list, ok := labels.(*ast.CompositeLit)
		if !ok {
			t.Errorf("%s: the labels of %s are not a literal: the test cannot read them", src.fset.Position(call.Pos()), n)
			return
		}
		var ls []string
		for _, e := range list.Elts {
			l, ok := src.value(dir, f, e)
			if !ok {
				t.Errorf("%s: a label of %s is not a constant", src.fset.Position(e.Pos()), n)
			}
			ls = append(ls, l)
		}
		families = append(families, n+"{"+strings.Join(ls, ",")+"}")
	})
	sameSet(t, file, "metric", families, tableRows(t, file, ""))
}

func TestExitCodesReference(t *testing.T) {
	const file = "docs/reference/exit-codes.md"
	src := parseSource(t, "internal/cli")
	sameSet(t, file, "exit code", src.constsNamed("internal/cli", false, regexp.MustCompile(`^Exit[A-Z]`)), tableRows(t, file, ""))
}
