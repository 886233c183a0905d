package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/holdfast-dev/holdfast/internal/audit"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/buildinfo"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

func (o *AuditOptions) print(res *auditResult) error {
	if o.printer != nil {
		source := snapshot.SourceLive
		if o.manifests() {
			source = snapshot.SourceManifests
		}
		r := audit.NewReport(source, res.findings)
		for _, b := range res.budgets {
			r.AddBudget(b.Budget, b.origin)
		}
		r.Suppressed = res.suppressed
		r.Problems, r.Warnings, r.Skipped = texts(res.input.Problems), texts(res.input.Warnings), texts(res.input.Skipped)
		if o.output.format == "json" {
			return writeReportJSON(o.Out, &r)
		}
		return printValue(o.printer, r, o.Out)
	}
	switch o.output.format {
	case "sarif":
		enc := json.NewEncoder(o.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(audit.SARIF(append(slices.Clone(res.findings), res.suppressed...), buildinfo.Version, res.input))
	case "compact":
		return printCompact(o.Out, res.findings)
	}
	return o.printTable(res)
}

// writeReportJSON writes the report as kubectl's JSON printer writes it, indented by
// four spaces, a finding and a budget at a time. Marshalling the report whole and then
// indenting it held the report three times over in buffers: megabytes at 10,000 budgets,
// in a process whose memory peaks as it prints.
func writeReportJSON(out io.Writer, r *audit.Report) error {
	w := bufio.NewWriterSize(out, 64<<10)
	var compact bytes.Buffer
	var indented []byte
	enc := json.NewEncoder(&compact)
	source, err := json.Marshal(r.Source)
	if err != nil {
		return err
	}
	apiVersion, _ := json.Marshal(r.APIVersion) // strings always marshal
	kind, _ := json.Marshal(r.Kind)
	fmt.Fprintf(w, "{\n    \"apiVersion\": %s,\n    \"kind\": %s,\n    \"source\": ", apiVersion, kind)
	w.Write(source)
	for _, f := range []struct {
		name       string
		items      []any
		null, omit bool
	}{
		{"findings", items(r.Findings), r.Findings == nil, false},
		{"budgets", items(r.Budgets), r.Budgets == nil, false},
		{"suppressed", items(r.Suppressed), r.Suppressed == nil, true},
		{"problems", items(r.Problems), r.Problems == nil, true},
		{"warnings", items(r.Warnings), r.Warnings == nil, true},
		{"skipped", items(r.Skipped), r.Skipped == nil, true},
	} {
		if f.omit && len(f.items) == 0 {
			continue
		}
		fmt.Fprintf(w, ",\n    %q: ", f.name)
		switch {
		case f.null:
			w.WriteString("null")
			continue
		case len(f.items) == 0:
			w.WriteString("[]")
			continue
		}
		w.WriteString("[\n")
		for i, item := range f.items {
			compact.Reset()
			if err := enc.Encode(item); err != nil {
				return err
			}
			w.WriteString("        ")
			indented = indentJSON(indented[:0], bytes.TrimSuffix(compact.Bytes(), []byte("\n")), "        ", "    ")
			w.Write(indented)
			if i < len(f.items)-1 {
				w.WriteByte(',')
			}
			w.WriteByte('\n')
		}
		w.WriteString("    ]")
	}
	w.WriteString("\n}\n")
	return w.Flush()
}

// indentJSON appends src, compact JSON as json.Marshal writes it, to dst, indented as
// json.Indent indents it. json.Indent checks every byte with its scanner, which took
// three quarters of writing a report of 10,000 budgets; what Marshal wrote needs no
// checking.
func indentJSON(dst, src []byte, prefix, indent string) []byte {
	depth := 0
	newline := func() {
		dst = append(append(dst, '\n'), prefix...)
		for range depth {
			dst = append(dst, indent...)
		}
	}
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '"':
			end := i + 1
			for ; src[end] != '"'; end++ {
				if src[end] == '\\' {
					end++
				}
			}
			dst, i = append(dst, src[i:end+1]...), end
		case '{', '[':
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				dst, i = append(dst, c, src[i+1]), i+1
				continue
			}
			dst = append(dst, c)
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, ':', ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

func items[T any](s []T) []any {
	out := make([]any, len(s))
	for i := range s {
		out[i] = &s[i]
	}
	return out
}

func texts(problems []snapshot.Problem) []string {
	var out []string
	for _, p := range problems {
		out = append(out, inputText(p))
	}
	return out
}

// printCompact prints one line per finding, as linters do, so that CI logs and editors
// link each to its place: file:line: severity rule: message (object). A live object,
// which has no file, is named in the file's place.
func printCompact(out io.Writer, findings []audit.Finding) error {
	w := &errWriter{w: out}
	findings = slices.Clone(findings)
	slices.SortStableFunc(findings, func(a, b audit.Finding) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	for _, f := range findings {
		ref := snapshot.ObjectRef{Kind: f.Kind, Namespace: f.Namespace, Name: f.Name}
		line := fmt.Sprintf("%s: %s %s: %s", ref, f.Severity, f.Rule, f.Message)
		if f.File != "" {
			line = fmt.Sprintf("%s: %s %s: %s (%s)", snapshot.Origin{File: f.File, Line: max(1, f.Line)}, f.Severity, f.Rule, f.Message, ref)
		}
		w.println(line)
	}
	return w.err
}

// ANSI colours per severity, used only on a terminal.
var severityColour = map[audit.Severity]string{audit.Error: "\x1b[31m", audit.Warning: "\x1b[33m", audit.Info: "\x1b[36m"}

const colourReset = "\x1b[0m"

// tableGroup is one workload with its findings and its budgets' findings; a budget that
// covers no workload makes a group of its own. origin is the workload's manifest, which
// tells alternatives of one workload apart.
type tableGroup struct {
	ref      snapshot.ObjectRef
	origin   snapshot.Origin
	findings []audit.Finding
}

func groupByWorkload(m *availability.Model, findings []audit.Finding, origins map[snapshot.ObjectRef]snapshot.Origin) []tableGroup {
	budgets := make(map[snapshot.ObjectRef]*availability.Budget, len(m.Budgets))
	for _, b := range m.Budgets {
		budgets[snapshot.ObjectRef{Kind: snapshot.KindPodDisruptionBudget, Namespace: b.Namespace, Name: b.Name}] = b
	}
	index := map[snapshot.ObjectRef]int{}
	var groups []tableGroup
	for _, f := range findings {
		ref := snapshot.ObjectRef{Kind: f.Kind, Namespace: f.Namespace, Name: f.Name}
		if b, ok := budgets[ref]; ok && len(b.Workloads) > 0 {
			w := b.Workloads[0]
			ref = snapshot.ObjectRef{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name}
		}
		i, ok := index[ref]
		if !ok {
			i = len(groups)
			index[ref] = i
			groups = append(groups, tableGroup{ref: ref, origin: origins[ref]})
		}
		groups[i].findings = append(groups[i].findings, f)
	}
	for _, g := range groups {
		// The workload's own findings first, then its budgets'.
		slices.SortStableFunc(g.findings, func(a, b audit.Finding) int {
			return cmp.Compare(boolInt(a.Kind != g.ref.Kind), boolInt(b.Kind != g.ref.Kind))
		})
	}
	return groups
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// printTable groups findings by workload: a heading per workload, then each finding's
// severity, rule, wrapped message and fix, all within o.Width columns. A budget's
// findings sit under the workload it covers, with the budget's own location.
func (o *AuditOptions) printTable(res *auditResult) error {
	w := &errWriter{w: o.Out}
	counts := map[audit.Severity]int{}
	var groups []tableGroup
	for _, p := range res.parts {
		groups = append(groups, groupByWorkload(p.model, p.findings, p.origins)...)
	}
	slices.SortStableFunc(groups, func(a, b tableGroup) int {
		return cmp.Or(cmp.Compare(a.ref.Namespace, b.ref.Namespace), cmp.Compare(a.ref.Kind, b.ref.Kind), cmp.Compare(a.ref.Name, b.ref.Name),
			cmp.Compare(a.origin.File, b.origin.File))
	})
	for i, g := range groups {
		if i > 0 {
			w.println("")
		}
		heading := g.ref.String()
		if g.origin.File != "" {
			heading += "  (" + g.origin.String() + ")"
		}
		w.println(heading)
		for _, f := range g.findings {
			counts[f.Severity]++
			o.printFinding(w, f, g.ref)
		}
	}
	if len(groups) > 0 {
		w.println("")
	}
	summary := fmt.Sprintf("%s, %s, %d info in %s; %s computed from %s.",
		count(counts[audit.Error], "error"), count(counts[audit.Warning], "warning"), counts[audit.Info],
		count(len(groups), "object"), count(len(res.budgets), "budget"), res.parts[0].model.Source)
	for _, line := range wrap(summary, o.Width) {
		w.println(line)
	}
	if n := len(res.suppressed); n > 0 && !o.ShowSuppressed {
		w.println(fmt.Sprintf("%s suppressed (--show-suppressed lists them).", count(n, "finding")))
	}
	if len(res.findings) > 0 {
		w.println("Run " + cmp.Or(o.name, "holdfast") + " audit --explain RULE for why a rule matters.")
	}
	if o.ShowSuppressed && len(res.suppressed) > 0 {
		w.println("")
		w.println(fmt.Sprintf("Suppressed (%d):", len(res.suppressed)))
		for _, f := range res.suppressed {
			ref := snapshot.ObjectRef{Kind: f.Kind, Namespace: f.Namespace, Name: f.Name}
			where := ref.String()
			if f.File != "" {
				where += " (" + snapshot.Origin{File: f.File, Line: f.Line}.String() + ")"
			}
			why := "by --ignore"
			if f.Suppression.By == audit.SuppressedByAnnotation {
				why = "by " + audit.AnnotationIgnore + ": " + cmp.Or(f.Suppression.Reason, "no reason given")
			}
			w.println(fmt.Sprintf("  %-7s %s  %s", strings.ToUpper(f.Severity.String()), f.Rule, where))
			for _, line := range wrap(why, o.Width-17) {
				w.println("                 " + line)
			}
		}
	}
	if len(res.budgets) > 0 {
		w.println("")
		if err := o.table.print(w, budgetTable(res.budgets, len(res.parts) > 1)); err != nil {
			return err
		}
	}
	return w.err
}

// printFinding prints one finding under the heading of the group ref.
func (o *AuditOptions) printFinding(w *errWriter, f audit.Finding, ref snapshot.ObjectRef) {
	const indent, fixIndent = "                 ", "    " // under the message; under the heading
	label := fmt.Sprintf("%-7s", strings.ToUpper(f.Severity.String()))
	if o.Colour {
		label = severityColour[f.Severity] + label + colourReset
	}
	for i, line := range wrap(f.Message, o.Width-len(indent)) {
		if i == 0 {
			w.println(fmt.Sprintf("  %s %s  %s", label, f.Rule, line))
		} else {
			w.println(indent + line)
		}
	}
	if own := (snapshot.ObjectRef{Kind: f.Kind, Namespace: f.Namespace, Name: f.Name}); own != ref {
		where := own.String()
		if f.File != "" {
			where += " at " + snapshot.Origin{File: f.File, Line: f.Line}.String()
		}
		for _, line := range wrap("("+where+")", o.Width-len(indent)) {
			w.println(indent + line)
		}
	}
	for _, line := range strings.Split(f.Fix, "\n") {
		// Fixes are indented less than messages so that nested YAML stays within
		// the width; long comment lines are wrapped as comments.
		comment, isComment := strings.CutPrefix(line, "# ")
		if !isComment || len(fixIndent)+len(line) <= o.Width {
			w.println(fixIndent + line)
			continue
		}
		for _, part := range wrap(comment, o.Width-len(fixIndent)-2) {
			w.println(fixIndent + "# " + part)
		}
	}
}

// budgetColumns are the columns of the budgets' table: who manages a budget shows when
// a DisruptionPolicy keeps one, its file with alternatives; -o wide shows both.
func budgetColumns(managed, files bool) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		column("Budget", false), column("Expected", false), column("Desired", false), column("Healthy", false),
		column("Allowed", false), column("Managed By", !managed), column("File", !files),
	}
}

// budgetTable is holdfast's computation of every budget; with alternatives, the file of
// each.
func budgetTable(budgets []locatedBudget, files bool) *metav1.Table {
	managed := slices.ContainsFunc(budgets, func(b locatedBudget) bool { return b.Policy() != "" })
	table := &metav1.Table{ColumnDefinitions: budgetColumns(managed, files)}
	for _, b := range budgets {
		allowed := fmt.Sprint(b.Status.DisruptionsAllowed)
		if b.SyncError != "" {
			allowed = "0 (sync fails)"
		}
		managedBy, file := "", ""
		if b.Policy() != "" {
			managedBy = "DisruptionPolicy " + b.Policy()
		}
		if b.origin.File != "" {
			file = b.origin.String()
		}
		table.Rows = append(table.Rows, metav1.TableRow{Cells: []any{
			b.Namespace + "/" + b.Name, b.Status.ExpectedPods, b.Status.DesiredHealthy, b.Status.CurrentHealthy, allowed, managedBy, file,
		}})
	}
	return table
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// wrap breaks text into lines of at most width characters at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) > width:
			lines = append(lines, line)
			line = word
		default:
			line += " " + word
		}
	}
	return append(lines, line)
}

// errWriter keeps the first write error so that printing code stays linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) println(s string) { _, _ = io.WriteString(e, s+"\n") }

// registerAuditCompletions completes --fail-on with the severities and --explain and
// --ignore with the rules.
func registerAuditCompletions(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("fail-on", cobra.FixedCompletions([]string{"error", "warning", "info"}, cobra.ShellCompDirectiveNoFileComp))
	var rules []string
	for _, r := range audit.Rules() {
		rules = append(rules, r.ID+"\t"+r.Summary)
	}
	for _, flag := range []string{"explain", "ignore"} {
		_ = cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(rules, cobra.ShellCompDirectiveNoFileComp))
	}
}
