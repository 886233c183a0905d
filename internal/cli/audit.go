package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/holdfast-dev/holdfast/internal/audit"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/predict"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
	"github.com/holdfast-dev/holdfast/internal/snapshot/live"
)

// tableWidth is the terminal width the table is laid out for.
const tableWidth = 80

// AuditOptions holds the flags and collaborators of `holdfast audit`.
type AuditOptions struct {
	Filenames     []string
	AllNamespaces bool
	Output        string
	FailOn        string
	Explain       string

	// Now is the clock; budgets count pods evicted in the last two minutes as disrupted.
	Now func() time.Time
	// Colour turns on ANSI colours in the table; Complete sets it when Out is a terminal.
	Colour bool

	configFlags *genericclioptions.ConfigFlags
	namespace   string
	failOn      audit.Severity
	genericiooptions.IOStreams
}

// NewAuditCommand returns `holdfast audit`.
func NewAuditCommand(streams genericiooptions.IOStreams, flags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &AuditOptions{IOStreams: streams, configFlags: flags, Now: time.Now}
	cmd := &cobra.Command{
		Use:   "audit [-f PATH...]",
		Short: "Find what drains, upgrades and node loss would break",
		Long: `Audit a live cluster (the current kube context) or manifests for disruption risks:
budgets that block drains forever or protect nothing, replicas that one node's loss takes
down together, rollouts that hang, probes that are missing. Every finding names the
disruption that breaks the workload and gives the YAML that fixes it.

Exit codes: 0 nothing at or above --fail-on, 1 the audit could not run or some input could
not be read, 2 findings at or above --fail-on.`,
		Example: `  holdfast audit -A
  holdfast audit -f manifests/ -o sarif > holdfast.sarif
  helm template my-chart | holdfast audit -f - --fail-on warning
  holdfast audit --explain HF001`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return o.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.Filenames, "filename", "f", nil, "manifest files or folders (read recursively) to audit instead of the cluster; - reads stdin")
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "audit every namespace of the cluster")
	f.StringVarP(&o.Output, "output", "o", "table", "output format: table, json, yaml or sarif")
	f.StringVar(&o.FailOn, "fail-on", "error", "exit 2 when a finding has this severity or higher: error, warning or info")
	f.StringVar(&o.Explain, "explain", "", "print why a rule (e.g. HF001) matters, and exit")
	return cmd
}

// Complete resolves the namespace and whether the output is a terminal.
func (o *AuditOptions) Complete() error {
	if f, ok := o.Out.(*os.File); ok {
		o.Colour = term.IsTerminal(int(f.Fd()))
	}
	if o.configFlags.Namespace != nil && *o.configFlags.Namespace != "" {
		o.namespace = *o.configFlags.Namespace
	}
	if o.AllNamespaces {
		o.namespace = metav1.NamespaceAll
		return nil
	}
	if o.namespace == "" && len(o.Filenames) == 0 && o.Explain == "" {
		ns, _, err := o.configFlags.ToRawKubeConfigLoader().Namespace()
		if err != nil {
			return fmt.Errorf("reading the namespace of the kube context: %w", err)
		}
		o.namespace = ns
	}
	return nil
}

// Validate checks the flags.
func (o *AuditOptions) Validate() error {
	switch o.Output {
	case "table", "json", "yaml", "sarif":
	default:
		return fmt.Errorf("unknown output format %q: use table, json, yaml or sarif", o.Output)
	}
	var err error
	if o.failOn, err = audit.ParseSeverity(o.FailOn); err != nil {
		return fmt.Errorf("--fail-on: %w", err)
	}
	if o.Explain != "" {
		if _, ok := audit.Lookup(o.Explain); !ok {
			return fmt.Errorf("unknown rule %q: rules are HF001 to HF%03d", o.Explain, len(audit.Rules()))
		}
	}
	if o.AllNamespaces && len(o.Filenames) > 0 {
		return errors.New("-A applies to a cluster; manifests given with -f are read whatever their namespace")
	}
	return nil
}

// Run loads the snapshot, audits it and prints the result.
func (o *AuditOptions) Run(ctx context.Context) error {
	if o.Explain != "" {
		r, _ := audit.Lookup(o.Explain)
		_, err := fmt.Fprintf(o.Out, "%s %s (%s)\n%s\n\n%s\n", r.ID, r.Name, r.Severity, r.Summary, r.Rationale)
		return err
	}
	snap, problems, err := o.load(ctx)
	if err != nil {
		return err
	}
	// Audit the cluster as the operator will make it: with the budgets its policies keep.
	snap, outcomes := predict.Operator(snap, o.Now())
	model := availability.Build(snap, o.Now())
	findings := audit.Run(model, snap.Origins)
	findings = audit.Merge(findings, audit.RunOwn(snap, outcomes, snap.Origins))
	var problemText []string
	for _, p := range problems {
		problemText = append(problemText, p.Error())
		fmt.Fprintln(o.ErrOut, "holdfast: skipped:", p.Error())
	}
	if err := o.print(model, findings, problemText, snap.Origins); err != nil {
		return err
	}
	if len(problems) > 0 {
		return &ExitCodeError{Code: ExitError, Err: fmt.Errorf("%d piece(s) of input could not be read; the rest was audited", len(problems))}
	}
	if worst, ok := audit.Max(findings); ok && worst >= o.failOn {
		return &ExitCodeError{Code: ExitFindings}
	}
	return nil
}

func (o *AuditOptions) load(ctx context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
	if len(o.Filenames) > 0 {
		snap, problems := snapshot.LoadManifests(o.Filenames, snapshot.ManifestOptions{DefaultNamespace: o.namespace, Stdin: o.In})
		return snap, problems, nil
	}
	config, err := o.configFlags.ToRESTConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the kube context: %w", err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, nil, fmt.Errorf("creating a client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, nil, fmt.Errorf("creating a client: %w", err)
	}
	snap, err := live.Load(ctx, client, dyn, o.namespace)
	if err != nil {
		return nil, nil, err
	}
	return snap, nil, nil
}

func (o *AuditOptions) print(m *availability.Model, findings []audit.Finding, problems []string, origins map[snapshot.ObjectRef]snapshot.Origin) error {
	switch o.Output {
	case "json":
		enc := json.NewEncoder(o.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(audit.NewReport(m, findings, problems))
	case "yaml":
		out, err := yaml.Marshal(audit.NewReport(m, findings, problems))
		if err != nil {
			return err
		}
		_, err = o.Out.Write(out)
		return err
	case "sarif":
		enc := json.NewEncoder(o.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(audit.SARIF(findings, Version))
	}
	return o.printTable(m, findings, origins)
}

// ANSI colours per severity, used only on a terminal.
var severityColour = map[audit.Severity]string{audit.Error: "\x1b[31m", audit.Warning: "\x1b[33m", audit.Info: "\x1b[36m"}

const colourReset = "\x1b[0m"

// tableGroup is one workload with its findings and its budgets' findings; a budget that
// covers no workload makes a group of its own.
type tableGroup struct {
	ref      snapshot.ObjectRef
	findings []audit.Finding
}

func groupByWorkload(m *availability.Model, findings []audit.Finding) []tableGroup {
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
			groups = append(groups, tableGroup{ref: ref})
		}
		groups[i].findings = append(groups[i].findings, f)
	}
	slices.SortFunc(groups, func(a, b tableGroup) int {
		return cmp.Or(cmp.Compare(a.ref.Namespace, b.ref.Namespace), cmp.Compare(a.ref.Kind, b.ref.Kind), cmp.Compare(a.ref.Name, b.ref.Name))
	})
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
// severity, rule, wrapped message and fix, all within tableWidth columns. A budget's
// findings sit under the workload it covers, with the budget's own location.
func (o *AuditOptions) printTable(m *availability.Model, findings []audit.Finding, origins map[snapshot.ObjectRef]snapshot.Origin) error {
	w := &errWriter{w: o.Out}
	counts := map[audit.Severity]int{}
	const indent, fixIndent = "                 ", "    " // under the message; under the heading
	groups := groupByWorkload(m, findings)
	for i, g := range groups {
		if i > 0 {
			w.println("")
		}
		heading := g.ref.String()
		if origin, ok := origins[g.ref]; ok {
			heading += "  (" + origin.String() + ")"
		}
		w.println(heading)
		for _, f := range g.findings {
			counts[f.Severity]++
			label := fmt.Sprintf("%-7s", strings.ToUpper(f.Severity.String()))
			if o.Colour {
				label = severityColour[f.Severity] + label + colourReset
			}
			for i, line := range wrap(f.Message, tableWidth-len(indent)) {
				if i == 0 {
					w.println(fmt.Sprintf("  %s %s  %s", label, f.Rule, line))
				} else {
					w.println(indent + line)
				}
			}
			if ref := (snapshot.ObjectRef{Kind: f.Kind, Namespace: f.Namespace, Name: f.Name}); ref != g.ref {
				where := ref.String()
				if f.File != "" {
					where += " at " + snapshot.Origin{File: f.File, Line: f.Line}.String()
				}
				w.println(indent + "(" + where + ")")
			}
			for _, line := range strings.Split(f.Fix, "\n") {
				// Fixes are indented less than messages so that nested YAML stays within
				// the width; long comment lines are wrapped as comments.
				comment, isComment := strings.CutPrefix(line, "# ")
				if !isComment || len(fixIndent)+len(line) <= tableWidth {
					w.println(fixIndent + line)
					continue
				}
				for _, part := range wrap(comment, tableWidth-len(fixIndent)-2) {
					w.println(fixIndent + "# " + part)
				}
			}
		}
	}
	objects := len(groups)
	if len(findings) > 0 {
		w.println("")
	}
	w.println(fmt.Sprintf("%s, %s, %d info in %s; %s computed from %s.",
		count(counts[audit.Error], "error"), count(counts[audit.Warning], "warning"), counts[audit.Info],
		count(objects, "object"), count(len(m.Budgets), "budget"), m.Source))
	if len(findings) > 0 {
		w.println("Run holdfast audit --explain RULE for why a rule matters.")
	}
	if len(m.Budgets) > 0 {
		w.println("")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		managed := slices.ContainsFunc(m.Budgets, func(b *availability.Budget) bool { return b.Policy() != "" })
		header := "BUDGET\tEXPECTED\tDESIRED\tHEALTHY\tALLOWED"
		if managed {
			// Only then: the column says which budgets a DisruptionPolicy will keep.
			header += "\tMANAGED BY"
		}
		fmt.Fprintln(tw, header)
		for _, b := range m.Budgets {
			allowed := fmt.Sprint(b.Status.DisruptionsAllowed)
			if b.SyncError != "" {
				allowed = "0 (sync fails)"
			}
			row := fmt.Sprintf("%s/%s\t%d\t%d\t%d\t%s", b.Namespace, b.Name, b.Status.ExpectedPods, b.Status.DesiredHealthy, b.Status.CurrentHealthy, allowed)
			if managed && b.Policy() != "" {
				row += "\tDisruptionPolicy " + b.Policy()
			}
			fmt.Fprintln(tw, row)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return w.err
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
