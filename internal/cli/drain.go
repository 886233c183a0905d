package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/holdfast-dev/holdfast/internal/drain"
	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// ExitIncomplete is drain's exit code when it ended with a node not drained: a budget that
// never allows an eviction, a pod that needs --force, --delete-emptydir-data or
// --ignore-daemonsets, a pod under two budgets, --timeout, or Ctrl-C. The nodes stay cordoned; the same command
// resumes.
const ExitIncomplete = 3

var errTimeout = errors.New("--timeout reached")

// DefaultSlotNamespace holds the drain slot and run Leases: a namespace of their own, so
// that whoever drains needs no write access next to a leader Lease, neither the control
// plane's in kube-system nor the operator's in holdfast-system (config/rbac, the chart).
const DefaultSlotNamespace = "holdfast-drain"

// MaxConcurrentLimit bounds --max-concurrent of drain and plan drain: each slot is a Lease
// read on every poll, and a plan's arithmetic stays far from overflow. A thousand nodes
// drained at once is already more than any budget-respecting drain can use.
const MaxConcurrentLimit = 1000

// The values of --dry-run, kubectl's.
const (
	DryRunNone   = "none"
	DryRunClient = "client"
	DryRunServer = "server"
)

// DrainOptions holds the flags and collaborators of `holdfast drain`.
type DrainOptions struct {
	Nodes              []string
	Selector           string
	MaxConcurrent      int
	DryRun             string
	Timeout            time.Duration
	Pace               bool
	Force              bool
	DeleteEmptyDirData bool
	SlotNamespace      string
	WaveByWave         bool
	EvictUnplaceable   bool
	// Output is "" for text for people, "wide" for text with the tables' every column,
	// or "json" for one JSON object per event.
	Output string
	table  tableFlags

	// kubectl drain's flags, with kubectl's meaning where holdfast's allows.
	PodSelector string
	// GracePeriod is the seconds each evicted pod gets to stop; negative: its own.
	GracePeriod              int
	SkipWaitForDeleteTimeout int
	IgnoreDaemonSets         bool
	DisableEviction          bool
	ChunkSize                int64

	// Clock drives waits and timestamps; tests give a fake one.
	Clock clock.WithTicker
	// Live redraws progress in place; Complete sets it when ErrOut is a terminal.
	Live bool
	// Identity names this process in the slot Leases; Complete sets host/pid.
	Identity string

	configFlags *genericclioptions.ConfigFlags
	cluster     cluster
	genericiooptions.IOStreams
}

// NewDrainCommand returns `holdfast drain`.
func NewDrainCommand(streams genericiooptions.IOStreams, flags *genericclioptions.ConfigFlags) *cobra.Command {
	return newDrainCommand(&DrainOptions{IOStreams: streams, configFlags: flags, Clock: clock.RealClock{}})
}

// newDrainCommand binds the flags to o; tests give one with a client.
func newDrainCommand(o *DrainOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "drain NODE... | --selector SEL",
		Short: "Drain nodes without taking any workload below its budget",
		Long: `Cordon nodes and move their pods off through the Eviction API, never by deleting them,
so that every PodDisruptionBudget holds.

Safe to start on every node at once: each node's drain takes one of --max-concurrent
slots, Leases named holdfast-drain-slot-N in --slot-namespace (holdfast-drain, which
holdfast install and the chart create; a drain creates it if missing and allowed to)
shared by every holdfast drain of the cluster, and the others wait their turn. A slot is
renewed every 10s while its drain runs; a drain that cannot renew it within 20s stops
evicting (exit 1). Others take the slot of a drain that died 30s after they last saw its
Lease change, on their own clock: a holder's clock skew does not matter.

Pacing (on by default): the next eviction from a workload waits until the replacement of
the previous one is Ready, and a node keeps its slot until its pods' replacements are
Ready, so the next node starts from full strength.

Given several nodes, one run takes them in the order of the waves holdfast plan drain
computes from the same cluster (no budget below its floor, every evicted pod fitting
somewhere, at most --max-concurrent nodes a wave; the budgets holdfast's
DisruptionPolicies keep counted, and a single replica a policy surges drained in its
wave), the nodes it finds blocked last, so that each says what stops it. A node starts
as soon as a slot is free, without waiting for the rest of its wave: one whose
workloads are all free goes first, the lightest first, and pacing keeps each budget
whole. --wave-by-wave follows the waves strictly
instead, as --dry-run prints them. Until its turn, each node carries the taint
holdfast.dev/drain-queued with effect PreferNoSchedule, so that replacements land on
nodes already drained rather than on nodes that would have to move them again; the
taint goes when the node is cordoned, and from every node when the run ends.

A refused eviction (429) is retried with backoff, honouring Retry-After, and the budget
that refused it is named. A budget that can never allow an eviction (minAvailable 1 on
one replica) or a pod under two budgets stops that pod at once with what to change.
kubectl drain's rules decide which pods go, and as with kubectl a node with a pod that
needs a flag is left cordoned with nothing evicted (the other nodes are drained): pods
with no controller need --force, pods with emptyDir volumes --delete-emptydir-data,
DaemonSet pods --ignore-daemonsets (which leaves them), and a DaemonSet's orphan (its
DaemonSet deleted) --force. Mirror pods are left.

Ctrl-C or --timeout leaves the nodes cordoned, releases their slots and says what
remains; running the same command again resumes.

--dry-run (or --dry-run=client) prints that plan: for each wave what would be evicted, skipped, refused or
blocked, counting each budget's disruptions across the wave, and the capacity each
workload keeps; then each node that cannot be drained, with every reason.

Before evicting, each node asks the planner's scheduling simulation whether each pod's
replacement fits on another node now. One that fits nowhere (every other node cordoned
or full, a pod pinned to its node) is said so and kept: evicting it would spend its
budget on a replacement that stays Pending. It is evicted once room appears (checked
every 10s: an uncordon, a new node); --evict-unplaceable evicts it at once, which is
right when a cluster autoscaler adds nodes for Pending pods.

A drop-in for kubectl drain: a script written for it runs unchanged. --force,
--delete-emptydir-data, --ignore-daemonsets, --grace-period, --pod-selector,
--skip-wait-for-delete-timeout and -l/--selector mean what they mean to kubectl, and so do
kubectl's global -v, --warnings-as-errors and --match-server-version; --chunk-size is
accepted and changes nothing; --dry-run takes none, client or server; --timeout bounds
the whole run rather than each node's evictions; --disable-eviction is refused, because
it deletes pods past their budgets. Unlike kubectl, a node may be named and --selector
given together, and a pod refused by its budget is retried until --timeout, never
deleted. Standard output has kubectl's lines (node/N cordoned, evicting pod NS/P, pod/P
evicted, node/N drained) as the drain goes, then holdfast's summary; standard error has
holdfast's progress, and kubectl's "error: unable to drain node" for a refused node.

While a node drains, its condition DrainInProgress is True, with the reason Blocked and
a message naming the pod and the budget (with its numbers) when one stops it; once
drained, Drained is True and DrainInProgress False. The next drain of the node resets
them. The Events DrainStarted, DrainBlocked (once per change of what blocks it) and
Drained (or DrainStopped) go on the node: kubectl describe node shows them.

-o json writes one JSON object per event on standard output instead of the text (slot
taken, cordoned, evicting, refused with the budget and its numbers, evicted, gone,
drained, released, timeout or interrupted, and a last line of type result); docs/drain.md
lists the types and fields.

A 409 Conflict from the Eviction API is not taken as the pod gone: the pod is read
again, and only a pod not found, or replaced by another of the same name, has left.

Needs what the ClusterRole holdfast-drainer and the Role holdfast-drainer in
holdfast-drain grant (config/rbac, or the chart with drainerRole.create): nodes get,
list, watch, patch; pods get, list, watch; pods/eviction create; workloads, budgets,
autoscalers, priority classes, namespaces and holdfast's own kinds read; leases in
--slot-namespace. Optional: nodes/status patch and events create, patch, for the
node's drain conditions and Events; without them the drain ends with a warning. Also
optional: leases and Karpenter's nodeclaims and nodepools list, for the nodes' health
and Karpenter's consolidation; without them the drain notes what it left out.

Exit codes: 0 every node drained (or, with --dry-run, would be); 1 error: bad flags, or
an API call failed (unreachable, not allowed); 3 a node is not drained: a pod needs a
flag, is blocked or refused, --timeout, Ctrl-C. A node not drained stays cordoned; run the same command
again to resume.`,
		Example: `  # Drain one node; progress on the terminal, a summary at the end.
  holdfast drain node-1

  # A loop over every node, made safe: every drain waits for its slot.
  for node in $(kubectl get nodes -o name); do holdfast drain "${node#node/}" & done; wait

  # Two nodes of a pool at a time, giving up after ten minutes.
  holdfast drain --selector pool=blue --max-concurrent 2 --timeout 10m

  # What would happen, with each budget's disruptions counted across the nodes.
  holdfast drain node-1 node-2 --dry-run

  # A runbook's kubectl drain line, unchanged but for the command.
  holdfast drain node-1 --ignore-daemonsets --delete-emptydir-data --force --grace-period=30 --timeout=5m

  # Every refusal as JSON, for a pipeline.
  holdfast drain node-1 -o json | jq 'select(.type == "refused") | .budget'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Nodes = args
			// Flags are judged before connecting: a refused flag says so without a cluster.
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(); err != nil {
				return err
			}
			ctx := contextOf(cmd)
			return o.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Selector, "selector", "l", "", "drain the nodes with these labels (as kubectl get nodes -l), besides any named")
	f.IntVar(&o.MaxConcurrent, "max-concurrent", 1, "nodes drained at once in the whole cluster by every holdfast drain using the same number")
	f.StringVar(&o.DryRun, "dry-run", DryRunNone, "none, client or server. client (or --dry-run alone) prints the plan: what would be evicted, skipped or blocked, "+
		"each budget counted across the pods of a wave. server adds the API server's own answer to a dry-run eviction of each pod the plan would evict. "+
		"Neither changes anything, the cordon included")
	f.Lookup("dry-run").NoOptDefVal = DryRunClient
	f.DurationVar(&o.Timeout, "timeout", 0, "give up after this long (0: never). Unlike kubectl's, which bounds the evictions of each node, it bounds the whole run, waiting for a slot included; "+
		"the nodes not drained stay cordoned and the same command resumes")
	f.BoolVar(&o.Pace, "pace", true, "wait for each replacement to be Ready before the next eviction from its workload")
	f.BoolVar(&o.Force, "force", false, "also evict pods that no controller will recreate (as kubectl; still through the Eviction API)")
	f.BoolVar(&o.DeleteEmptyDirData, "delete-emptydir-data", false, "also evict pods with emptyDir volumes, whose data is lost (as kubectl)")
	f.StringVar(&o.PodSelector, "pod-selector", "", "evict only the pods with these labels; the others stay on the node, which counts as drained without them (as kubectl)")
	f.IntVar(&o.GracePeriod, "grace-period", -1, "seconds each evicted pod is given to stop; negative: the pod's own terminationGracePeriodSeconds (as kubectl)")
	f.IntVar(&o.SkipWaitForDeleteTimeout, "skip-wait-for-delete-timeout", 0, "stop waiting for a pod that has been deleting for more than this many seconds, "+
		"and count it as skipped: its kubelet may be gone (as kubectl; 0: always wait)")
	f.BoolVar(&o.IgnoreDaemonSets, "ignore-daemonsets", false, "leave DaemonSet pods on the node, which the DaemonSet would put back; without it a node with one is refused, nothing evicted (as kubectl)")
	f.BoolVar(&o.DisableEviction, "disable-eviction", false, "refused: kubectl deletes pods with it, bypassing every PodDisruptionBudget; holdfast drain only evicts")
	f.Int64Var(&o.ChunkSize, "chunk-size", 500, "accepted for kubectl's scripts, and changes nothing: holdfast reads pods from one watch, not from paged lists")
	f.StringVarP(&o.Output, "output", "o", "", "json: one JSON object per event on standard output, for pipelines (see docs/drain.md); wide: the text with more columns; default: text for people")
	o.table = newTableFlags(dryRunColumns, summaryColumns)
	o.table.addFlags(cmd)
	f.StringVar(&o.SlotNamespace, "slot-namespace", DefaultSlotNamespace, "namespace of the drain slot Leases, shared by every holdfast drain of the cluster")
	// The old name, for scripts written against it; its default was kube-system.
	f.StringVar(&o.SlotNamespace, "coordination-namespace", DefaultSlotNamespace, "")
	_ = f.MarkDeprecated("coordination-namespace", "use --slot-namespace")
	f.BoolVar(&o.EvictUnplaceable, "evict-unplaceable", false, "also evict pods whose replacement fits on no other node now, leaving it Pending; "+
		"give it when a cluster autoscaler adds nodes for Pending pods. Off by default: the pod is kept, its budget unspent, until room appears (an uncordon, a new node)")
	f.BoolVar(&o.WaveByWave, "wave-by-wave", false, "drain the planner's waves one after the other, as --dry-run prints them, each finished before the next starts (slower)")
	return cmd
}

// Complete connects to the cluster, resolves --selector and names this process.
func (o *DrainOptions) Complete() error {
	if f, ok := o.ErrOut.(*os.File); ok {
		o.Live = term.IsTerminal(int(f.Fd()))
	}
	if o.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			host = "unknown-host"
		}
		o.Identity = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	return o.cluster.connect(o.configFlags)
}

// Validate checks the flags.
func (o *DrainOptions) Validate() error {
	if o.DisableEviction {
		return errors.New("--disable-eviction is refused: it would delete pods instead of evicting them, bypassing every PodDisruptionBudget, " +
			"and holdfast drain never takes a workload below its budget. Fix what blocks the drain (holdfast drain --dry-run says what), " +
			"or use kubectl drain --disable-eviction knowingly")
	}
	switch o.DryRun {
	case DryRunNone, DryRunClient, DryRunServer:
	// The values of the old boolean --dry-run, for scripts written against it.
	case "true":
		o.DryRun = DryRunClient
	case "false", "":
		o.DryRun = DryRunNone
	default:
		return fmt.Errorf("--dry-run must be none, client or server, not %q", o.DryRun)
	}
	switch o.Output {
	case "", wide, "json":
	default:
		return fmt.Errorf("-o %q: drain prints text (-o wide with more columns), or with -o json one JSON object per event", o.Output)
	}
	o.table.wide = o.Output == wide
	if err := o.table.validate(); err != nil {
		return err
	}
	if o.Output == "json" && o.DryRun != DryRunNone {
		return errors.New("-o json streams a drain's events; for the plan of a dry run as JSON, use holdfast plan drain -o json")
	}
	if o.PodSelector != "" {
		if _, err := labels.Parse(o.PodSelector); err != nil {
			return fmt.Errorf("--pod-selector: %w", err)
		}
	}
	if o.ChunkSize < 0 {
		return fmt.Errorf("--chunk-size must not be negative, not %d", o.ChunkSize)
	}
	if len(o.Nodes) == 0 && o.Selector == "" {
		return errors.New("name at least one node, or give --selector")
	}
	if o.Selector != "" {
		if _, err := labels.Parse(o.Selector); err != nil {
			return fmt.Errorf("--selector: %w", err)
		}
	}
	if o.MaxConcurrent < 1 || o.MaxConcurrent > MaxConcurrentLimit {
		return fmt.Errorf("--max-concurrent must be from 1 to %d, not %d", MaxConcurrentLimit, o.MaxConcurrent)
	}
	if o.Timeout < 0 {
		return fmt.Errorf("--timeout must not be negative")
	}
	return nil
}

// Run drains the nodes (or prints the plan with --dry-run) and prints a summary.
func (o *DrainOptions) Run(ctx context.Context) error {
	// The signal's cause (Ctrl-C, SIGTERM) and --timeout's tell the two apart wherever
	// the drain is when its context ends.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.Timeout, errTimeout)
		defer cancel()
	}
	nodes, err := resolveNodes(ctx, o.cluster.kube, o.Nodes, o.Selector)
	if err != nil {
		return o.stoppedEarly(ctx, err)
	}
	snap, p, err := o.planDrain(ctx, nodes)
	if err != nil {
		return o.stoppedEarly(ctx, err)
	}
	if o.DryRun == DryRunClient || o.DryRun == DryRunServer {
		return o.dryRun(ctx, snap, p)
	}
	report := newProgress(o.ErrOut, o.Out, o.Live, nodes).event
	var stream *eventStream
	if o.Output == "json" {
		stream = &eventStream{w: o.Out}
		report = stream.event
	}
	d := &drain.Drainer{
		Client: o.cluster.kube,
		Clock:  o.Clock,
		Options: drain.Options{
			Filter:                   o.filter(),
			Pace:                     o.Pace,
			MaxConcurrent:            o.MaxConcurrent,
			SlotNamespace:            o.SlotNamespace,
			Identity:                 o.Identity,
			EvictUnplaceable:         o.EvictUnplaceable,
			SkipWaitForDeleteTimeout: time.Duration(o.SkipWaitForDeleteTimeout) * time.Second,
			NodeStatus:               true,
		},
		Report: report,
	}
	if o.GracePeriod >= 0 {
		d.GracePeriod = ptr.To(int64(o.GracePeriod))
	}
	start := o.Clock.Now()
	res := d.Run(ctx, o.waves(p))
	cause := stopCause(ctx)
	if stream != nil {
		if err := stream.result(res, o.Clock.Now(), o.Clock.Since(start), cause); err != nil {
			return err
		}
	} else if err := o.summary(res, o.Clock.Since(start), cause); err != nil {
		return err
	}
	return exitCode(res, cause)
}

// planDrain reads the cluster as plan drain does, DisruptionPolicies and the budgets
// they keep included, and plans the nodes' drain on it: the dry run prints this plan, and
// the drain takes the nodes in its order, so that a single replica a policy surges is
// drained in its wave rather than held to the end as if its budget blocked it.
func (o *DrainOptions) planDrain(ctx context.Context, nodes []string) (snapshot.Predicted, *plan.Plan, error) {
	now := o.Clock.Now()
	snap, _, err := o.cluster.load(ctx, metav1.NamespaceAll, now, o.ErrOut)
	if err != nil {
		return snapshot.Predicted{}, nil, err
	}
	p, err := plan.DrainWaves(snap, now, plan.Targets{Names: nodes}, plan.Options{MaxConcurrent: o.MaxConcurrent, DrainFilter: o.filter()})
	if err != nil {
		return snapshot.Predicted{}, nil, fmt.Errorf("planning the drain: %w", err)
	}
	return snap, p, nil
}

// waves are the nodes as the drain takes them: the plan's waves, then its blocked nodes,
// so that each says what stops it; in one wave unless --wave-by-wave.
func (o *DrainOptions) waves(p *plan.Plan) [][]string {
	waves := drain.WavesOf(p)
	if !o.WaveByWave {
		return drain.InOneWave(waves)
	}
	return waves
}

// filter is which pods the drain evicts, from kubectl's flags; Validate has parsed
// --pod-selector.
func (o *DrainOptions) filter() drain.Filter {
	f := drain.Filter{Force: o.Force, DeleteEmptyDirData: o.DeleteEmptyDirData, IgnoreDaemonSets: o.IgnoreDaemonSets}
	if o.PodSelector != "" {
		f.PodSelector, _ = labels.Parse(o.PodSelector)
	}
	return f
}

// stopCause is why the drain's context ended (errTimeout, the signal, context.Canceled),
// or nil while it runs.
func stopCause(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	return context.Cause(ctx)
}

// stopReason says what stopped a drain in the words of the summary.
func stopReason(cause error) string {
	if errors.Is(cause, errTimeout) {
		return "Stopped by --timeout"
	}
	return "Interrupted"
}

// stoppedEarly turns an error met before any node was touched into ExitIncomplete when
// the drain was stopped meanwhile: the request failed because of the stop.
func (o *DrainOptions) stoppedEarly(ctx context.Context, err error) error {
	cause := stopCause(ctx)
	if cause == nil {
		return err
	}
	if o.Output == "json" {
		if werr := (&eventStream{w: o.Out}).result(drain.Result{}, o.Clock.Now(), 0, cause); werr != nil {
			return werr
		}
	} else if _, werr := fmt.Fprintln(o.Out, stopReason(cause)+" before any node was cordoned; nothing was evicted."); werr != nil {
		return werr
	}
	return &ExitCodeError{Code: ExitIncomplete}
}

// exitCode is ExitError when a node's drain failed on an error (the API refused a call,
// say), else ExitIncomplete when a node is not drained (a pod blocked or refused,
// --timeout, Ctrl-C); the summary has already said why. cause is why the run was
// stopped, if it was: a node that ended on it was stopped, not failed.
func exitCode(res drain.Result, cause error) error {
	for _, n := range res.Nodes {
		if n.Err == nil || errors.Is(n.Err, errTimeout) || errors.Is(n.Err, context.Canceled) {
			continue
		}
		if cause != nil && errors.Is(n.Err, cause) {
			continue
		}
		return &ExitCodeError{Code: ExitError}
	}
	if !res.Drained() {
		return &ExitCodeError{Code: ExitIncomplete}
	}
	return nil
}

// resolveNodes returns the nodes named, then those selector (kubectl's -l) adds, without
// repeats; every one must exist.
func resolveNodes(ctx context.Context, kube kubernetes.Interface, names []string, selector string) ([]string, error) {
	var nodes []string
	for _, n := range names {
		if !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	// Nodes found by the selector exist; the named ones are checked below.
	named := len(nodes)
	if selector != "" {
		list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return nil, fmt.Errorf("listing nodes with %s: %w", selector, err)
		}
		var selected []string
		for _, n := range list.Items {
			selected = append(selected, n.Name)
		}
		slices.Sort(selected)
		if len(selected) == 0 {
			return nil, fmt.Errorf("no node has labels %s", selector)
		}
		for _, n := range selected {
			if !slices.Contains(nodes, n) {
				nodes = append(nodes, n)
			}
		}
	}
	for _, n := range nodes[:named] {
		if _, err := kube.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("reading node %s: %w", n, err)
		}
	}
	return nodes, nil
}
