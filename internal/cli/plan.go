package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/holdfast-dev/holdfast/internal/audit"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/operatorcli"
	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/predict"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// capacityRows caps the workloads shown per wave in the table: the most hurt come first,
// and on a large cluster a wave touches thousands.
const capacityRows = 5

// NewPlanCommand returns `holdfast plan` with its drain and failure subcommands.
func NewPlanCommand(streams genericiooptions.IOStreams, flags *genericclioptions.ConfigFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Plan node drains and see what node or zone failures would do",
		Long: `Plan from a live cluster (the current kube context) or from manifests and a nodes file
(Node objects among the -f inputs). Nothing is changed.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newPlanDrainCommand(streams, flags), newPlanFailureCommand(streams, flags))
	return cmd
}

// planInput is what both plan subcommands read: manifests or the cluster, at a time.
type planInput struct {
	Filenames     []string
	AllNamespaces bool
	// Now is the clock; budgets count pods evicted in the last two minutes as disrupted.
	Now func() time.Time

	// namespace narrows what is reported to the workloads of one namespace; empty for
	// all of them.
	namespace   string
	output      *outputFlags
	printer     printers.ResourcePrinter
	configFlags *genericclioptions.ConfigFlags
	cluster     cluster
	genericiooptions.IOStreams
}

func (in *planInput) addFlags(cmd *cobra.Command) {
	in.output = newOutputFlags("table")
	cmd.Flags().StringSliceVarP(&in.Filenames, "filename", "f", nil, "manifest files or folders (Node objects included) to plan on instead of the cluster; - reads stdin")
	cmd.Flags().BoolVarP(&in.AllNamespaces, "all-namespaces", "A", false, "report the workloads of every namespace (the default: a drain moves pods of all of them)")
	operatorcli.AddSettingsFlags(cmd.Flags(), &in.cluster.settings)
	in.output.addFlags(cmd)
}

// complete reads -n: plans always read every namespace, since a drain or a failure hits
// the pods of all of them, and -n narrows the report to one; -A wins over -n, as in
// kubectl.
func (in *planInput) complete() error {
	if !in.AllNamespaces && in.configFlags.Namespace != nil {
		in.namespace = *in.configFlags.Namespace
	}
	if err := operatorcli.ValidateSettings(in.cluster.settings); err != nil {
		return err
	}
	var err error
	in.printer, err = in.output.printer()
	return err
}

// load reads the snapshot the way audit does, from every namespace (a drain moves pods of
// all of them), as the operator will make it: with the budgets its policies keep. Pieces
// of input that cannot be read are reported on ErrOut and counted, for inputError to turn
// into the exit code after the output.
func (in *planInput) load(ctx context.Context) (snapshot.Predicted, int, error) {
	var snap snapshot.Predicted
	var problems []snapshot.Problem
	if len(in.Filenames) > 0 {
		var read *snapshot.Snapshot
		read, problems = snapshot.LoadManifests(in.Filenames, snapshot.ManifestOptions{DefaultNamespace: in.namespace, Stdin: in.In})
		reportInput(in.ErrOut, audit.Input{Problems: problems, Warnings: read.Warnings, Skipped: read.Skipped})
		snap, _ = predict.Operator(read, in.Now(), in.cluster.settings)
	} else {
		if err := in.cluster.connect(in.configFlags); err != nil {
			return snapshot.Predicted{}, 0, err
		}
		var err error
		if snap, _, err = in.cluster.load(ctx, metav1.NamespaceAll, in.Now(), in.ErrOut); err != nil {
			return snapshot.Predicted{}, 0, err
		}
	}
	if len(snap.Nodes) == 0 {
		return snapshot.Predicted{}, 0, errors.New("no Node in the input: add a nodes file with -f, e.g. the output of kubectl get nodes -o yaml")
	}
	return snap, len(problems), nil
}

// inNamespace reports whether a workload of namespace ns is to be reported.
func (in *planInput) inNamespace(ns string) bool { return in.namespace == "" || ns == in.namespace }

// inputError is the error for input that could not all be read, or nil.
func inputError(problems int) error {
	if problems == 0 {
		return nil
	}
	return &ExitCodeError{Code: ExitError, Err: fmt.Errorf("%d piece(s) of input could not be read; the rest was planned", problems)}
}

// PlanDrainOptions holds the flags and collaborators of `holdfast plan drain`.
type PlanDrainOptions struct {
	Nodes              []string
	Selector           string
	All                bool
	MaxConcurrent      int
	Uncordon           bool
	Force              bool
	DeleteEmptyDirData bool

	selector labels.Selector
	planInput
}

func newPlanDrainCommand(streams genericiooptions.IOStreams, flags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &PlanDrainOptions{planInput: planInput{IOStreams: streams, configFlags: flags, Now: time.Now}}
	cmd := &cobra.Command{
		Use:   "drain NODE... | --selector SEL | --all",
		Short: "Order nodes into waves that drain without breaking a budget, and explain the rest",
		Long: `Plan the drain of nodes: waves of nodes that can be drained at the same time without any
PodDisruptionBudget going below its floor (counting pods already unavailable and pods
under several budgets) and with every evicted pod fitting on another node, as a small
scheduling simulation judges it (requests, taints, node selectors and affinity, required
anti-affinity, DoNotSchedule topology spread, cordoned nodes). Waves run one after the
other; before the next starts, the evicted pods run Ready where the plan put them.

Drained nodes stay cordoned for the rest of the plan, as holdfast drain leaves them, so
later waves have less room; --uncordon plans a rolling upgrade instead, where each node
comes back empty after its wave.

A workload with several replicas and no budget is planned as if a budget kept one of
them ready, so that no wave empties it (a loop that drains every node at once); holdfast drain's
pacing keeps the same promise.

Each wave lists the workloads it hurts most with their ready replicas against those asked
for (a workload under a budget loses at most what the budget allows at once). Each node
that cannot be drained is listed with every reason: a budget with nothing to give now or
ever (a single replica under minAvailable 1), a pod under two budgets, a pod with no
controller or with emptyDir data, an unready pod its budget will not let go, no room for
an evicted pod, or a one-per-node companion that would stay Pending.

The lower bound is the fewest waves any order could reach for the nodes the plan
drains (blocked nodes are not counted): a budget allowing a disruptions with pods on n
nodes needs at least ceil(n/a) waves, more when a node holds several of its pods, and
nodes no two of which can share a wave need one each (docs/planning.md).

Exit codes: 0 every node is in a wave, 1 error (bad flags, unreadable input, cluster
unreachable), 2 some node is blocked.`,
		Example: `  # Every node of the cluster, two at a time at most.
  holdfast plan drain --all --max-concurrent 2

  # A node pool, as a rolling upgrade that brings each node back.
  holdfast plan drain --selector pool=blue --uncordon

  # From manifests and a nodes file, as JSON.
  kubectl get nodes -o yaml > nodes.yaml
  holdfast plan drain --all -f manifests/ -f nodes.yaml -o json`,
		ValidArgsFunction: completeNodeNames(flags),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Nodes = args
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
	f.StringVarP(&o.Selector, "selector", "l", "", "plan the nodes with these labels, besides any named")
	f.BoolVar(&o.All, "all", false, "plan every node")
	f.IntVar(&o.MaxConcurrent, "max-concurrent", 0, "most nodes in one wave (0: as many as the budgets allow)")
	f.BoolVar(&o.Uncordon, "uncordon", false, "nodes come back empty and schedulable after their wave (a rolling upgrade)")
	f.BoolVar(&o.Force, "force", false, "pods with no controller may be evicted (and are lost)")
	f.BoolVar(&o.DeleteEmptyDirData, "delete-emptydir-data", false, "pods with emptyDir volumes may be evicted")
	o.addFlags(cmd)
	return cmd
}

// Complete parses the selector and reads -n and -o.
func (o *PlanDrainOptions) Complete() error {
	if err := o.complete(); err != nil {
		return err
	}
	if o.Selector == "" {
		return nil
	}
	sel, err := labels.Parse(o.Selector)
	if err != nil {
		return fmt.Errorf("--selector: %w", err)
	}
	o.selector = sel
	return nil
}

// Validate checks the flags.
func (o *PlanDrainOptions) Validate() error {
	if len(o.Nodes) == 0 && o.Selector == "" && !o.All {
		return errors.New("name at least one node, or give --selector or --all")
	}
	if o.MaxConcurrent < 0 || o.MaxConcurrent > MaxConcurrentLimit {
		return fmt.Errorf("--max-concurrent must be from 0 (as many as the budgets allow) to %d, not %d", MaxConcurrentLimit, o.MaxConcurrent)
	}
	return nil
}

// drainReport is the JSON form of a plan: waves as lists of node names, the capacity of
// each wave and what the drain does with each of its pods alongside.
type drainReport struct {
	Waves      [][]string        `json:"waves"`
	Blocked    []plan.Blocker    `json:"blocked"`
	LowerBound plan.LowerBound   `json:"lowerBound"`
	Capacity   [][]plan.Capacity `json:"capacity"`
	Steps      [][]plan.Step     `json:"steps"`
}

// Run loads the snapshot, plans and prints the plan.
func (o *PlanDrainOptions) Run(ctx context.Context) error {
	snap, problems, err := o.load(ctx)
	if err != nil {
		return err
	}
	// DaemonSet pods stay, as in the drains upgrades and autoscalers run (kubectl drain
	// --ignore-daemonsets): a plan that every DaemonSet blocks would say nothing.
	filter := availability.DrainFilter{Force: o.Force, DeleteEmptyDirData: o.DeleteEmptyDirData, IgnoreDaemonSets: true}
	p, err := plan.DrainWaves(snap, o.Now(), plan.Targets{Names: o.Nodes, Selector: o.selector, All: o.All},
		plan.Options{MaxConcurrent: o.MaxConcurrent, Uncordon: o.Uncordon, DrainFilter: filter})
	if err != nil {
		return err
	}
	// -n narrows the workloads listed per wave; a blocker is listed whatever its
	// namespace, since it holds the node.
	for i := range p.Waves {
		p.Waves[i].Capacity = slices.DeleteFunc(p.Waves[i].Capacity, func(c plan.Capacity) bool { return !o.inNamespace(c.Namespace) })
		p.Waves[i].Steps = slices.DeleteFunc(p.Waves[i].Steps, func(s plan.Step) bool { return !o.inNamespace(s.Namespace) })
	}
	if o.printer != nil {
		r := drainReport{Waves: [][]string{}, Blocked: p.Blocked, LowerBound: p.LowerBound, Capacity: [][]plan.Capacity{}, Steps: [][]plan.Step{}}
		for _, w := range p.Waves {
			r.Waves = append(r.Waves, w.Nodes)
			r.Capacity = append(r.Capacity, w.Capacity)
			r.Steps = append(r.Steps, w.Steps)
		}
		err = printValue(o.printer, r, o.Out)
	} else {
		err = o.printTable(p)
	}
	switch {
	case err != nil:
		return err
	case problems > 0:
		return inputError(problems)
	case len(p.Blocked) > 0:
		return &ExitCodeError{Code: ExitFindings, Err: fmt.Errorf("%s cannot be drained", count(len(p.Blocked), "node"))}
	}
	return nil
}

func (o *PlanDrainOptions) printTable(p *plan.Plan) error {
	w := &errWriter{w: o.Out}
	nodes := 0
	for i, wave := range p.Waves {
		nodes += len(wave.Nodes)
		printWords(w, fmt.Sprintf("Wave %d (%s):", i+1, count(len(wave.Nodes), "node")), wave.Nodes)
		for j, c := range wave.Capacity {
			if j == capacityRows {
				w.println(fmt.Sprintf("  ... and %d more", len(wave.Capacity)-capacityRows))
				break
			}
			w.println(row(c.Kind+"/"+c.Namespace+"/"+c.Name, capacityText(c)))
		}
	}
	for _, b := range p.Blocked {
		w.println("Blocked: " + b.Node)
		for _, r := range b.Reasons {
			when := "until it changes"
			if !r.Permanent {
				when = "for now"
			}
			w.println(fmt.Sprintf("  %s %s, %s", r.Type, strings.TrimPrefix(r.Kind+"/"+r.Namespace+"/"+r.Name, "/"), when))
			for _, line := range wrap(r.Message, tableWidth-4) {
				w.println("    " + line)
			}
		}
	}
	if len(p.Waves)+len(p.Blocked) > 0 {
		w.println("")
	}
	summary := fmt.Sprintf("%s in %s", count(nodes, "node"), count(len(p.Waves), "wave"))
	if len(p.Blocked) > 0 {
		summary += fmt.Sprintf("; %s blocked", count(len(p.Blocked), "node"))
	}
	summary += fmt.Sprintf(". Lower bound: %s", count(p.LowerBound.Waves, "wave"))
	switch lb := p.LowerBound; {
	case len(lb.Budgets) > 0:
		b := lb.Budgets[0]
		what := fmt.Sprintf("%s %s/%s", b.Kind, b.Namespace, b.Name)
		if b.Kind != snapshot.KindPodDisruptionBudget {
			what += ", with no budget, keeps one ready and"
		}
		summary += fmt.Sprintf(" (%s has pods on %s and lets %d go at once", what, count(b.Nodes, "node"), b.Allowed)
		if lb.BudgetsAtBound > 1 {
			summary += fmt.Sprintf("; %d more need as many", lb.BudgetsAtBound-1)
		}
		summary += ")"
	case lb.Conflicting > 0:
		summary += fmt.Sprintf(" (%s of which no two can share a wave: each pair holds more pods of a budget than it lets go at once)",
			count(lb.Conflicting, "node"))
	case lb.LargestWave > 0:
		summary += fmt.Sprintf(" (no wave can hold more than %d of them: among any %d, two hold more pods of a budget than it lets go at once)",
			lb.LargestWave, lb.LargestWave+1)
	case o.MaxConcurrent > 0 && lb.Waves > 1:
		summary += fmt.Sprintf(" (at most %s at a time)", count(o.MaxConcurrent, "node"))
	}
	for _, line := range wrap(summary+".", tableWidth) {
		w.println(line)
	}
	return w.err
}

// row lays out an object and what happens to it on one line of tableWidth, or on two
// when the object's name is long.
func row(object, what string) string {
	const objectWidth = 50
	if len(object) <= objectWidth {
		return fmt.Sprintf("  %-*s  %s", objectWidth, object, what)
	}
	return fmt.Sprintf("  %s\n  %*s  %s", object, objectWidth, "", what)
}

// printWords prints a heading followed by words, wrapped within tableWidth and indented
// under the first word.
func printWords(w *errWriter, heading string, words []string) {
	lines := wrap(heading+" "+strings.Join(words, " "), tableWidth-2)
	for i, line := range lines {
		if i > 0 {
			line = "  " + line
		}
		w.println(line)
	}
}

// PlanFailureOptions holds the flags and collaborators of `holdfast plan failure`.
type PlanFailureOptions struct {
	Zone    bool
	Startup time.Duration
	// Domains are the nodes (zones with --zone) named on the command line.
	Domains []string
	planInput
}

func newPlanFailureCommand(streams genericiooptions.IOStreams, flags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &PlanFailureOptions{planInput: planInput{IOStreams: streams, configFlags: flags, Now: time.Now}}
	cmd := &cobra.Command{
		Use:   "failure [NODE... | --zone [ZONE...]]",
		Short: "Show what a node's (or zone's) sudden loss does, and how long each workload takes to be whole again",
		Long: `Without arguments, for each node, or with --zone each zone, list the workloads whose
sudden loss of that node or zone would leave no replica running, or fewer than half of
those they ask for. With nodes (or zones) named, list every workload each one hurts.
Budgets do not help here: a crash is not an eviction. DaemonSets are left out, their
pods serve their own node. From manifests, replicas are first placed the way the
scheduler spreads them.

Each workload comes with the seconds from the failure to full strength, Kubernetes
alone and with holdfast's response, predicted by the model the operator acts on:
Kubernetes marks the node unreachable after 50 s and replaces a Deployment's pods once
their unreachable toleration (300 s unless the pods set their own) runs out, and never
replaces a StatefulSet's; holdfast surges a Deployment once the node's Lease is
nodeFailure.lostAfter old (30 s) and fences a StatefulSet's node under
nodeFailure.fencing: Verified. Start-up is the quickest of each workload's pods from
creation to Ready, or --start-up.

Exit codes: 0 no single failure leaves a workload without a replica, 1 error, 2 some
failure would.`,
		Example: `  holdfast plan failure
  holdfast plan failure node-3
  holdfast plan failure --zone eu-west-1a -o json
  holdfast plan failure -f manifests/ -f nodes.yaml --start-up 20s`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(); err != nil {
				return err
			}
			if o.Startup < 0 {
				return fmt.Errorf("--start-up must not be negative, got %s", o.Startup)
			}
			o.Domains = args
			ctx := contextOf(cmd)
			return o.Run(ctx)
		},
	}
	cmd.Flags().BoolVar(&o.Zone, "zone", false, "fail whole zones (topology.kubernetes.io/zone) instead of nodes")
	cmd.Flags().DurationVar(&o.Startup, "start-up", 0, "how long a replacement pod takes to be Ready (default: the quickest of each workload's pods, 10s from manifests)")
	o.addFlags(cmd)
	return cmd
}

// Run loads the snapshot and prints what each failure does.
func (o *PlanFailureOptions) Run(ctx context.Context) error {
	snap, problems, err := o.load(ctx)
	if err != nil {
		return err
	}
	all, err := plan.Failures(snap, o.Now(), plan.FailureOptions{Zones: o.Zone, Domains: o.Domains, Startup: o.Startup, Settings: o.cluster.settings.Failure})
	if err != nil {
		return err
	}
	failures := []plan.Failure{}
	for _, f := range all {
		f.Losses = slices.DeleteFunc(f.Losses, func(l plan.Loss) bool { return !o.inNamespace(l.Namespace) })
		if len(f.Losses) > 0 {
			failures = append(failures, f)
		}
	}
	if o.printer != nil {
		err = printValue(o.printer, failures, o.Out)
	} else {
		err = o.printTable(failures)
	}
	if err != nil {
		return err
	}
	if problems > 0 {
		return inputError(problems)
	}
	for _, f := range failures {
		for _, l := range f.Losses {
			if l.All {
				return &ExitCodeError{Code: ExitFindings, Err: fmt.Errorf("losing %s %s leaves %s/%s/%s with no replica", f.Topology, f.Domain, l.Kind, l.Namespace, l.Name)}
			}
		}
	}
	return nil
}

func (o *PlanFailureOptions) printTable(failures []plan.Failure) error {
	w := &errWriter{w: o.Out}
	topology := plan.TopologyNode
	if o.Zone {
		topology = plan.TopologyZone
	}
	if len(failures) == 0 {
		if len(o.Domains) > 0 {
			w.println(fmt.Sprintf("Losing %s %s hurts no workload.", topology, strings.Join(o.Domains, ", ")))
		} else {
			w.println(fmt.Sprintf("No single %s's loss takes any workload below half of its replicas.", topology))
		}
		return w.err
	}
	for _, f := range failures {
		w.println(fmt.Sprintf("Losing %s %s:", f.Topology, f.Domain))
		for _, l := range f.Losses {
			left := fmt.Sprintf("%d/%d left", l.Running-l.Lost, l.Desired)
			if l.All {
				left = fmt.Sprintf("0/%d left, down", l.Desired)
			}
			w.println(row(l.Kind+"/"+l.Namespace+"/"+l.Name, left+"; "+recoveryText(l)))
		}
	}
	return w.err
}

// recoveryText says how long a workload takes to be whole again, with holdfast and
// alone when that differs, and what holdfast does.
func recoveryText(l plan.Loss) string {
	alone, with := l.AloneSeconds, l.WithHoldfastSeconds
	switch {
	case with == nil && alone == nil:
		return fmt.Sprintf("not whole again until the node returns (%s)", l.Response)
	case alone != nil && with != nil && *alone == *with:
		return fmt.Sprintf("whole again after %d s (%s)", *alone, l.Response)
	case with == nil:
		return fmt.Sprintf("not whole again until the node returns (%s; Kubernetes alone: %d s)", l.Response, *alone)
	case alone == nil:
		return fmt.Sprintf("whole again after %d s with holdfast (%s; Kubernetes alone: never)", *with, l.Response)
	}
	return fmt.Sprintf("whole again after %d s with holdfast (%s; Kubernetes alone: %d s)", *with, l.Response, *alone)
}

// capacityText is a capacity row's numbers, marking a workload its policy surges.
func capacityText(c plan.Capacity) string {
	text := fmt.Sprintf("%d/%d ready, %d evicted", c.Ready, c.Desired, c.Evicted)
	if c.Surged {
		text += ", surged"
	}
	return text
}
