package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/holdfast-dev/holdfast/internal/audit"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/operatorcli"
	"github.com/holdfast-dev/holdfast/internal/predict"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
	"github.com/holdfast-dev/holdfast/internal/snapshot/kustomize"
)

// tableWidth is the width the tables are laid out for when the output is no terminal;
// audit's table follows a terminal's width, down to minTableWidth.
const (
	tableWidth    = 80
	minTableWidth = 60
)

// AuditOptions holds the flags and collaborators of `holdfast audit`.
type AuditOptions struct {
	Filenames []string
	// Kustomization is a folder whose kustomization is built and audited, as kubectl -k.
	Kustomization  string
	AllNamespaces  bool
	FailOn         string
	Explain        string
	Ignore         []string
	ShowSuppressed bool

	// Now is the clock; budgets count pods evicted in the last two minutes as disrupted.
	Now func() time.Time
	// Colour turns on ANSI colours in the table; Complete sets it when Out is a terminal
	// that can show them and the user has not asked for none (terminalOutput).
	Colour bool
	// Width is the columns the table's messages are wrapped to: Complete sets the
	// terminal's width, or tableWidth when Out is no terminal.
	Width int

	// name is holdfast's name as invoked ("kubectl holdfast" as the kubectl plugin).
	name        string
	output      *outputFlags
	table       tableFlags
	printer     printers.ResourcePrinter
	configFlags *genericclioptions.ConfigFlags
	cluster     cluster
	namespace   string
	failOn      audit.Severity
	genericiooptions.IOStreams
}

// terminalOutput returns whether a terminal of the given columns (0 when unknown) shows
// colours, and the width to wrap to. Colours are off when NO_COLOR is set to anything
// (no-color.org) or TERM is dumb, as for other command-line tools; the width is the
// terminal's, but never under minTableWidth, where the fixes' YAML would not fit.
func terminalOutput(columns int, getenv func(string) string) (colour bool, width int) {
	colour = getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
	if columns <= 0 {
		return colour, tableWidth
	}
	return colour, max(columns, minTableWidth)
}

// NewAuditCommand returns `holdfast audit`.
func NewAuditCommand(streams genericiooptions.IOStreams, flags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &AuditOptions{IOStreams: streams, configFlags: flags, Now: time.Now, Width: tableWidth, output: newOutputFlags("table", wide, "compact", "sarif"),
		table: newTableFlags(budgetColumns(false, false))}
	cmd := &cobra.Command{
		Use:   "audit [-f PATH...]",
		Short: "Find what drains, upgrades and node loss would break",
		Long: `Audit a live cluster (the current kube context) or manifests for disruption risks:
budgets that block drains forever or protect nothing, replicas that one node's loss takes
down together, rollouts that hang, probes that are missing. Every finding names the
disruption that breaks the workload and gives the YAML that fixes it.

Manifests given together are judged as one cluster, as kubectl apply -f would create
them. When two files define the same object they are taken for alternatives (a bad and a
fixed version, one folder per environment) and audited apart: each -f path on its own, a
folder by its subfolders, and the files directly in a folder one by one when some of
them define the same object; a note on stderr names the files. Fields a kind does not
have (a typo such as minAvaliable) are warnings on stderr that name the field meant.

A finding can be accepted on the object it names, with the annotations
holdfast.dev/audit-ignore (rule IDs or names, comma-separated) and
holdfast.dev/audit-ignore-reason (why, for the next reader), or everywhere with
--ignore. Suppressed findings do not count for --fail-on; the summary counts them,
--show-suppressed lists them with their reasons, JSON and YAML list them under
"suppressed", and SARIF marks them with suppressions.

Files that are not Kubernetes objects (a Helm values.yaml, a kustomization, a dashboard's
JSON) and kinds holdfast does not know (custom resources) are skipped with a note on
stderr; a document meant as an object but broken is an error. Objects of API versions
Kubernetes removed (apps/v1beta1) are audited as their current version, with a warning.

-o compact prints one line per finding, file:line: severity rule: message, as linters do.

Exit codes: 0 nothing at or above --fail-on, 1 the audit could not run or some input could
not be read, 2 findings at or above --fail-on (also when some input could not be read).`,
		Example: `  holdfast audit -A
  holdfast audit -f manifests/ -o sarif > holdfast.sarif
  holdfast audit -f deploy/ -o compact --fail-on warning
  helm template my-chart | holdfast audit -f - --fail-on warning
  holdfast audit -k overlays/prod -o compact
  holdfast audit -f https://example.com/app.yaml
  holdfast audit -f examples/ --ignore HF012
  holdfast audit -o jsonpath='{.findings[*].rule}'
  holdfast audit --explain HF001`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.name = cmd.Root().DisplayName()
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			ctx := contextOf(cmd)
			return o.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.Filenames, "filename", "f", nil, "manifest files, folders (read recursively) or http(s) URLs to audit instead of the cluster; - reads stdin")
	f.StringVarP(&o.Kustomization, "kustomize", "k", "", "audit what the kustomization in this folder builds, as kubectl apply -k would apply it")
	_ = cmd.MarkFlagDirname("kustomize")
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "audit every namespace of the cluster")
	f.StringVar(&o.FailOn, "fail-on", "error", "exit 2 when a finding has this severity or higher: error, warning or info")
	f.StringVar(&o.Explain, "explain", "", "print why a rule (e.g. HF001) matters, and exit")
	f.StringSliceVar(&o.Ignore, "ignore", nil, "accept every finding of these rules (IDs or names; repeat or separate with commas)")
	f.BoolVar(&o.ShowSuppressed, "show-suppressed", false, "list the suppressed findings and why, after the others")
	operatorcli.AddSettingsFlags(f, &o.cluster.settings)
	o.output.addFlags(cmd)
	o.table.addFlags(cmd)
	registerAuditCompletions(cmd)
	return cmd
}

// Complete resolves the namespace and whether the output is a terminal.
func (o *AuditOptions) Complete() error {
	if f, ok := o.Out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		columns, _, err := term.GetSize(int(f.Fd()))
		if err != nil {
			columns = 0
		}
		o.Colour, o.Width = terminalOutput(columns, os.Getenv)
	}
	if o.configFlags.Namespace != nil && *o.configFlags.Namespace != "" {
		o.namespace = *o.configFlags.Namespace
	}
	if o.AllNamespaces {
		o.namespace = metav1.NamespaceAll
		return nil
	}
	if o.namespace == "" && !o.manifests() && o.Explain == "" {
		ns, _, err := o.configFlags.ToRawKubeConfigLoader().Namespace()
		if err != nil {
			return fmt.Errorf("reading the namespace of the kube context: %w", err)
		}
		o.namespace = ns
	}
	return nil
}

// manifests reports whether the audit reads manifests rather than the cluster.
func (o *AuditOptions) manifests() bool { return len(o.Filenames) > 0 || o.Kustomization != "" }

// Validate checks the flags.
func (o *AuditOptions) Validate() error {
	var err error
	if o.printer, err = o.output.printer(); err != nil {
		return err
	}
	o.table.wide = o.output.format == wide
	if err := o.table.validate(); err != nil {
		return err
	}
	if o.failOn, err = audit.ParseSeverity(o.FailOn); err != nil {
		return fmt.Errorf("--fail-on: %w", err)
	}
	if err := operatorcli.ValidateSettings(o.cluster.settings); err != nil {
		return err
	}
	for _, id := range append([]string{o.Explain}, o.Ignore...) {
		if _, ok := audit.Lookup(id); id != "" && !ok {
			return fmt.Errorf("unknown rule %q: rules are HF001 to HF%03d", id, len(audit.Rules()))
		}
	}
	if o.AllNamespaces && o.manifests() {
		return errors.New("-A applies to a cluster; manifests given with -f or -k are read whatever their namespace")
	}
	if len(o.Filenames) > 0 && o.Kustomization != "" {
		return errors.New("-f and -k cannot be given together: audit the kustomization with -k, or the files with -f")
	}
	return nil
}

// audited is one snapshot audited: the input is one, or several alternatives.
type audited struct {
	model    *availability.Model
	origins  map[snapshot.ObjectRef]snapshot.Origin
	findings []audit.Finding
}

// auditResult is everything an audit found, over all its snapshots. A file that several
// alternatives share (a nodes file) is audited with each: its findings, budgets, warnings
// and notes are kept once.
type auditResult struct {
	parts                []audited
	findings, suppressed []audit.Finding
	budgets              []locatedBudget
	input                audit.Input
	seen                 map[seenKey]bool
	// alone says there is one snapshot: its findings and budgets, each of one object,
	// need no keys.
	alone bool
}

// seenKey names what a snapshot's audit gave, for the next snapshot's to leave out: a
// finding, a budget, a warning or an input skipped. (Formatted into strings, the keys
// of 10,000 budgets and their findings took a twentieth of the audit.)
type seenKey struct {
	what, rule, kind, namespace, name, text string
	origin                                  snapshot.Origin
}

// locatedBudget is a budget with its manifest, if any.
type locatedBudget struct {
	*availability.Budget
	origin snapshot.Origin
}

// add adds one snapshot's audit, leaving out what an earlier snapshot gave.
func (r *auditResult) add(model *availability.Model, origins map[snapshot.ObjectRef]snapshot.Origin, kept, suppressed []audit.Finding, warnings, skipped []snapshot.Problem) {
	if r.seen == nil {
		r.seen = map[seenKey]bool{}
	}
	first := func(key seenKey) bool {
		seen := r.seen[key]
		r.seen[key] = true
		return !seen
	}
	repeated := func(f audit.Finding) bool {
		return !r.alone && !first(seenKey{what: "finding", rule: f.Rule, kind: f.Kind, namespace: f.Namespace, name: f.Name, text: f.Message,
			origin: snapshot.Origin{File: f.File, Line: f.Line}})
	}
	kept = slices.DeleteFunc(kept, repeated)
	r.parts = append(r.parts, audited{model: model, origins: origins, findings: kept})
	r.findings = append(r.findings, kept...)
	r.suppressed = append(r.suppressed, slices.DeleteFunc(suppressed, repeated)...)
	for _, b := range model.Budgets {
		o := origins[snapshot.ObjectRef{Kind: snapshot.KindPodDisruptionBudget, Namespace: b.Namespace, Name: b.Name}]
		if r.alone || first(seenKey{what: "budget", namespace: b.Namespace, name: b.Name, origin: o}) {
			r.budgets = append(r.budgets, locatedBudget{Budget: b, origin: o})
		}
	}
	for _, w := range warnings {
		if first(seenKey{what: "warning", text: w.Error()}) {
			r.input.Warnings = append(r.input.Warnings, w)
		}
	}
	for _, n := range skipped {
		if first(seenKey{what: "skipped", text: n.Error()}) {
			r.input.Skipped = append(r.input.Skipped, n)
		}
	}
}

// Run loads the snapshots, audits them and prints the result.
func (o *AuditOptions) Run(ctx context.Context) error {
	if o.Explain != "" {
		r, _ := audit.Lookup(o.Explain)
		_, err := fmt.Fprintf(o.Out, "%s %s (%s)\n%s\n\n%s\n", r.ID, r.Name, r.Severity, r.Summary, r.Rationale)
		return err
	}
	views, problems, err := o.load(ctx)
	if err != nil {
		return err
	}
	res := auditResult{input: audit.Input{Problems: problems}, alone: len(views) == 1}
	for _, v := range views {
		snap := v.snap
		model := availability.Build(snap.Snapshot, o.Now())
		findings := audit.Merge(audit.Run(model, snap.Origins), audit.RunOwn(snap, v.outcomes, snap.Origins))
		kept, suppressed, suppressWarnings := audit.Suppress(findings, snap.Snapshot, o.Ignore)
		var warnings []snapshot.Problem
		for _, w := range suppressWarnings {
			warnings = append(warnings, snapshot.Problem{Err: errors.New(w)})
		}
		res.add(model, snap.Origins, kept, suppressed, append(slices.Clone(snap.Warnings), warnings...), snap.Skipped)
	}
	reportInput(o.ErrOut, res.input)
	if err := o.print(&res); err != nil {
		return err
	}
	// Findings come first: a pipeline that fails on them must see them, whatever else
	// went wrong.
	if worst, ok := audit.Max(res.findings); ok && worst >= o.failOn {
		return &ExitCodeError{Code: ExitFindings, Err: unread(problems)}
	}
	if err := unread(problems); err != nil {
		return &ExitCodeError{Code: ExitError, Err: err}
	}
	return nil
}

// view is a snapshot as the operator will make it, with the budgets its policies keep,
// and the operator's decision for each policy in effect.
type view struct {
	snap     snapshot.Predicted
	outcomes []predict.Outcome
}

// load reads the cluster, or the manifests as one snapshot or as alternatives, each as
// the operator will make it.
func (o *AuditOptions) load(ctx context.Context) ([]view, []snapshot.Problem, error) {
	if o.manifests() {
		paths, opts := o.Filenames, snapshot.ManifestOptions{DefaultNamespace: o.namespace, Stdin: o.In}
		if o.Kustomization != "" {
			paths, opts.Kustomize = []string{o.Kustomization}, kustomize.Build
		}
		snaps, problems, redefs := snapshot.LoadAlternatives(paths, opts)
		for _, r := range redefs {
			fmt.Fprintf(o.ErrOut, "holdfast: %s and %s both define %s: audited apart, as alternatives\n", r.First, r.Again, r.Ref)
		}
		views := make([]view, len(snaps))
		for i, s := range snaps {
			views[i].snap, views[i].outcomes = predict.Operator(s, o.Now(), o.cluster.settings)
		}
		return views, problems, nil
	}
	if err := o.cluster.connect(o.configFlags); err != nil {
		return nil, nil, err
	}
	snap, outcomes, err := o.cluster.load(ctx, o.namespace, o.Now(), o.ErrOut)
	if err != nil {
		return nil, nil, err
	}
	return []view{{snap: snap, outcomes: outcomes}}, nil, nil
}
