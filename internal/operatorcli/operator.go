// Package operatorcli is the command that runs holdfast's operator, and the flags it
// shares with the CLI's plan and audit: defined once, for cmd/holdfast's `holdfast
// operator` and for cmd/holdfast-operator, the image's operator-only binary, which links
// none of the rest of the CLI.
package operatorcli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	logsapi "k8s.io/component-base/logs/api/v1"
	// The JSON format of --logging-format, beside the text format logsapi always has.
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/holdfast-dev/holdfast/internal/buildinfo"
	"github.com/holdfast-dev/holdfast/internal/operator"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

// RESTConfig gives the client configuration the connection flags (--kubeconfig,
// --context, ...) chose.
type RESTConfig func() (*rest.Config, error)

// Options holds the flags of `holdfast operator`.
type Options struct {
	RESTConfig     RESTConfig
	MetricsAddr    string
	MetricsSecure  bool
	MetricsCertDir string
	LogLevel       string
	// LoggingFormat is component-base's log format: text (klog's) or json.
	LoggingFormat           string
	ProbeAddr               string
	LeaderElection          bool
	LeaderElectionNamespace string
	// APIQPS and APIBurst pace the operator's requests; client-go's default of 5 a second
	// made a first sync of 700 budgets at 1,000 nodes take over two minutes.
	APIQPS   float32
	APIBurst int
	// Verbosity, when set, is klog's verbosity as kubectl's global -v gave it, which
	// --log-level, when given too, overrides; VModule is kubectl's global --vmodule.
	Verbosity *int
	VModule   string
	// Settings are the flags that bound the operator's decisions.
	Settings policy.Settings

	config *rest.Config
	genericiooptions.IOStreams
}

// NewCommand returns `holdfast operator`, which connects with the configuration config
// gives.
func NewCommand(config RESTConfig, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{RESTConfig: config, IOStreams: streams}
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
			if err := o.readKlogFlags(cmd); err != nil {
				return err
			}
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
	cmd.Flags().StringVar(&o.MetricsCertDir, "metrics-cert-dir", "", "with --metrics-secure, serve metrics with the certificate and key in this directory (tls.crt, tls.key, as a kubernetes.io/tls Secret mounts them), read again when they change; empty serves a self-signed certificate")
	cmd.Flags().StringVar(&o.LogLevel, "log-level", "info", "how much to log: info, or debug for every reconcile's decisions; -v N, kubectl's, sets klog's verbosity instead")
	cmd.Flags().StringVar(&o.LoggingFormat, "logging-format", logsapi.DefaultLogFormat, "log format: text (klog's) or json (one JSON object a line, as Kubernetes' components write with the same flag)")
	cmd.Flags().StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz; 0 turns them off")
	cmd.Flags().BoolVar(&o.LeaderElection, "leader-elect", true, "elect a leader so that only one replica reconciles")
	cmd.Flags().StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader Lease; empty means the operator's own namespace (the installed Role allows Leases in holdfast-system only)")
	cmd.Flags().Float32Var(&o.APIQPS, "kube-api-qps", 50, "requests a second the operator may send to the API server, as kube-controller-manager's flag of the same name; the API server's priority and fairness still protects it")
	cmd.Flags().IntVar(&o.APIBurst, "kube-api-burst", 100, "requests the operator may send at once above --kube-api-qps")
	AddSettingsFlags(cmd.Flags(), &o.Settings)
	return cmd
}

// Complete loads the Kubernetes client configuration.
func (o *Options) Complete() error {
	cfg, err := o.RESTConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	o.config = rest.CopyConfig(cfg)
	o.config.QPS, o.config.Burst = o.APIQPS, o.APIBurst
	return nil
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if o.MetricsAddr == "" || o.ProbeAddr == "" {
		return fmt.Errorf("--metrics-bind-address and --health-probe-bind-address need an address, or 0 to turn them off")
	}
	if o.APIQPS <= 0 || o.APIBurst < 1 {
		return fmt.Errorf("--kube-api-qps must be above 0 and --kube-api-burst at least 1, got %g and %d", o.APIQPS, o.APIBurst)
	}
	if err := ValidateSettings(o.Settings); err != nil {
		return err
	}
	if _, ok := logVerbosity[o.LogLevel]; !ok {
		return fmt.Errorf("unknown --log-level %q: use info or debug", o.LogLevel)
	}
	if errs := logsapi.Validate(o.loggingConfiguration(), nil, nil); len(errs) > 0 {
		return fmt.Errorf("unknown --logging-format %q: use text or json", o.LoggingFormat)
	}
	return nil
}

// readKlogFlags reads kubectl's global -v and --vmodule, which the logging
// configuration applied by Run replaces in klog.
func (o *Options) readKlogFlags(cmd *cobra.Command) error {
	if f := cmd.Flag("v"); f != nil && f.Changed && !cmd.Flags().Changed("log-level") {
		v, err := strconv.Atoi(f.Value.String())
		if err != nil {
			return fmt.Errorf("-v %s: %w", f.Value, err)
		}
		o.Verbosity = &v
	}
	if f := cmd.Flag("vmodule"); f != nil {
		o.VModule = f.Value.String()
	}
	return nil
}

// loggingConfiguration is component-base's configuration for the flags.
func (o *Options) loggingConfiguration() *logsapi.LoggingConfiguration {
	c := logsapi.NewLoggingConfiguration()
	c.Format = o.LoggingFormat
	c.Verbosity = logsapi.VerbosityLevel(logVerbosity[o.LogLevel])
	if o.Verbosity != nil {
		c.Verbosity = logsapi.VerbosityLevel(*o.Verbosity)
	}
	// The flag's value was accepted by klog's own --vmodule already.
	_ = logsapi.VModuleConfigurationPflag(&c.VModule).Set(o.VModule)
	return c
}

// applyLogging makes klog, and so controller-runtime, which logs through it, write in
// the chosen format to the error stream, where klog writes by default. It can be done
// once per process.
func (o *Options) applyLogging() error {
	streams := &logsapi.LoggingOptions{ErrorStream: o.ErrOut, InfoStream: o.Out}
	if err := logsapi.ValidateAndApplyWithOptions(o.loggingConfiguration(), streams, nil); err != nil {
		return fmt.Errorf("applying --logging-format=%s: %w", o.LoggingFormat, err)
	}
	ctrl.SetLogger(klog.NewKlogr())
	return nil
}

// Run runs the operator until SIGINT or SIGTERM.
func (o *Options) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// klog and controller-runtime log through process-wide loggers; this is the process.
	if err := o.applyLogging(); err != nil {
		return err
	}
	setGCPercent()
	if err := setMemoryLimit(); err != nil {
		return err
	}
	info := buildinfo.Get()
	klog.InfoS("Starting holdfast operator", "version", info.Version, "commit", info.Commit, "buildDate", info.BuildDate, "goVersion", info.GoVersion)
	mgr, err := operator.New(o.config, operator.Options{
		MetricsAddr:             o.MetricsAddr,
		MetricsSecure:           o.MetricsSecure,
		MetricsCertDir:          o.MetricsCertDir,
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

// MemoryLimitEnv names the variable in which the operator's manifests pass it its
// container's memory limit, in bytes (the downward API's limits.memory).
const MemoryLimitEnv = "HOLDFAST_MEMORY_LIMIT"

// memoryLimitPercent is the share of the container's memory limit that the Go runtime's
// soft limit is set to. The runtime collects harder as the memory it manages nears its
// soft limit; at the container's limit itself there would be no room left for what it
// does not count (the binary's pages, memory returned but not yet released), and the
// kernel would kill the operator before the runtime had tried.
const memoryLimitPercent = 90

// setMemoryLimit sets the runtime's soft limit to memoryLimitPercent of the limit in
// MemoryLimitEnv, unless GOMEMLIMIT chooses one.
func setMemoryLimit() error {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return nil
	}
	v, set := os.LookupEnv(MemoryLimitEnv)
	if !set {
		return nil
	}
	limit, err := strconv.ParseInt(v, 10, 64)
	if err != nil || limit <= 0 {
		return fmt.Errorf("%s=%q: want the container's memory limit in bytes", MemoryLimitEnv, v)
	}
	debug.SetMemoryLimit(limit / 100 * memoryLimitPercent)
	return nil
}

// logVerbosity maps --log-level to klog's verbosity: controller-runtime logs each
// reconcile at V(1) and holdfast its decisions at V(1) to V(4).
var logVerbosity = map[string]int{"info": 0, "debug": 4}
