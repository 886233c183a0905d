package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/holdfast-dev/holdfast/internal/operator"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// OperatorOptions holds the flags of `holdfast operator`.
type OperatorOptions struct {
	ConfigFlags             *genericclioptions.ConfigFlags
	MetricsAddr             string
	MetricsSecure           bool
	LogLevel                string
	ProbeAddr               string
	LeaderElection          bool
	LeaderElectionNamespace string
	// APIQPS and APIBurst pace the operator's requests; client-go's default of 5 a second
	// made a first sync of 700 budgets at 1,000 nodes take over two minutes.
	APIQPS   float32
	APIBurst int
	// KeepVerbosity leaves klog's verbosity as kubectl's global -v set it, when
	// --log-level is not given too.
	KeepVerbosity bool
	// Settings are the flags that bound the operator's decisions.
	Settings policy.Settings

	config *rest.Config
	genericiooptions.IOStreams
}

// NewOperatorCommand returns `holdfast operator`.
func NewOperatorCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &OperatorOptions{ConfigFlags: flags, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Run holdfast's controllers (NodeCompanion, DisruptionPolicy, ClusterDisruptionPolicy, rebalance) until stopped",
		Long: `Run holdfast's controllers:

  NodeCompanion            one companion pod next to every pod of a DaemonSet, run as a
                           Deployment with a budget of one, so drains take its nodes one
                           at a time: DaemonSet pods no budget can protect
  DisruptionPolicy         budgets for the workloads it selects that never deadlock,
                           single replicas surged or protected, maintenance windows and
                           pacing, a fast answer when a node dies
  ClusterDisruptionPolicy  a DisruptionPolicy copied into every namespace it selects
  rebalance                replicas piled onto one node or zone moved, one pod at a time
                           and within budget, for the workloads opted in

Several replicas may run: with leader election (the default) only the leader reconciles.
SIGTERM or SIGINT stops it gracefully and hands the leader Lease over at once.`,
		Example: "  holdfast operator\n  holdfast operator --leader-elect=false --metrics-bind-address=0",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.KeepVerbosity = cmd.Flags().Changed("v") && !cmd.Flags().Changed("log-level")
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.MetricsAddr, "metrics-bind-address", ":8443", "address of the Prometheus metrics endpoint; 0 turns it off")
	cmd.Flags().BoolVar(&o.MetricsSecure, "metrics-secure", true, "serve metrics over HTTPS to clients the apiserver authorises for GET /metrics (the holdfast-metrics-reader ClusterRole); false serves plain HTTP to anyone")
	cmd.Flags().StringVar(&o.LogLevel, "log-level", "info", "how much to log: info, or debug for every reconcile's decisions; -v N, kubectl's, sets klog's verbosity instead")
	cmd.Flags().StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz; 0 turns them off")
	cmd.Flags().BoolVar(&o.LeaderElection, "leader-elect", true, "elect a leader so that only one replica reconciles")
	cmd.Flags().StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader Lease; empty means the operator's own namespace (the installed Role allows Leases in holdfast-system only)")
	cmd.Flags().Float32Var(&o.APIQPS, "kube-api-qps", 50, "requests a second the operator may send to the API server, as kube-controller-manager's flag of the same name; the API server's priority and fairness still protects it")
	cmd.Flags().IntVar(&o.APIBurst, "kube-api-burst", 100, "requests the operator may send at once above --kube-api-qps")
	addSettingsFlags(cmd.Flags(), &o.Settings)
	return cmd
}

// Complete loads the Kubernetes client configuration.
func (o *OperatorOptions) Complete() error {
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	o.config = rest.CopyConfig(cfg)
	o.config.QPS, o.config.Burst = o.APIQPS, o.APIBurst
	return nil
}

// Validate checks the flags.
func (o *OperatorOptions) Validate() error {
	if o.MetricsAddr == "" || o.ProbeAddr == "" {
		return fmt.Errorf("--metrics-bind-address and --health-probe-bind-address need an address, or 0 to turn them off")
	}
	if o.APIQPS <= 0 || o.APIBurst < 1 {
		return fmt.Errorf("--kube-api-qps must be above 0 and --kube-api-burst at least 1, got %g and %d", o.APIQPS, o.APIBurst)
	}
	if err := validateSettings(o.Settings); err != nil {
		return err
	}
	if _, ok := logVerbosity[o.LogLevel]; !ok {
		return fmt.Errorf("unknown --log-level %q: use info or debug", o.LogLevel)
	}
	return nil
}

// Run runs the operator until SIGINT or SIGTERM.
func (o *OperatorOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// controller-runtime logs through a process-wide logger; this is the process.
	if !o.KeepVerbosity {
		if err := setKlogVerbosity(logVerbosity[o.LogLevel]); err != nil {
			return err
		}
	}
	ctrl.SetLogger(klog.NewKlogr())
	setGCPercent()
	info := GetVersionInfo()
	klog.InfoS("Starting holdfast operator", "version", info.Version, "commit", info.Commit, "buildDate", info.BuildDate, "goVersion", info.GoVersion)
	mgr, err := operator.New(o.config, operator.Options{
		MetricsAddr:             o.MetricsAddr,
		MetricsSecure:           o.MetricsSecure,
		Build:                   operator.BuildInfo{Version: info.Version, Commit: info.Commit, GoVersion: info.GoVersion},
		ProbeAddr:               o.ProbeAddr,
		LeaderElection:          o.LeaderElection,
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		Settings:                o.Settings,
	})
	if err != nil {
		return err
	}
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the operator: %w", err)
	}
	return nil
}

// gcPercent is the operator's GOGC when its environment sets none. Its live heap is
// mostly its cache, which changes slowly; the collector's default headroom, as much again
// as the live heap, was resident memory spent for little (see docs/engineering/performance.md), and
// more frequent collections cost a mostly idle process little CPU.
const gcPercent = 50

func setGCPercent() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
}

// logVerbosity maps --log-level to klog's verbosity: controller-runtime logs each
// reconcile at V(1) and holdfast its decisions at V(1) to V(4).
var logVerbosity = map[string]int{"info": 0, "debug": 4}

func setKlogVerbosity(v int) error {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	if err := fs.Set("v", strconv.Itoa(v)); err != nil {
		return fmt.Errorf("setting the log verbosity: %w", err)
	}
	return nil
}
