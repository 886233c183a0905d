// Package operator builds holdfast's controller-runtime manager: the one place that knows
// which controllers run, what the shared cache holds, and how the process elects a leader,
// serves metrics and probes, and shuts down.
//
// To add a controller: append it to controllers, give its reconciler RBAC markers, and if
// it reads a kind not cached yet or needs more of an object than the transforms below
// keep, say so in cacheOptions.
package operator

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/clusterdisruptionpolicy"
	"github.com/holdfast-dev/holdfast/internal/controller/collectors"
	"github.com/holdfast-dev/holdfast/internal/controller/disruptionpolicy"
	"github.com/holdfast-dev/holdfast/internal/controller/drainleftovers"
	"github.com/holdfast-dev/holdfast/internal/controller/nodecompanion"
	"github.com/holdfast-dev/holdfast/internal/controller/rebalance"
	"github.com/holdfast-dev/holdfast/internal/drain"
	"github.com/holdfast-dev/holdfast/internal/policy"
)

const (
	// LeaderElectionID names the Lease that operator replicas compete for.
	LeaderElectionID = "holdfast-operator.holdfast.dev"
	// gracefulShutdown bounds how long in-flight reconciles may run after a stop signal;
	// it is below the default pod termination grace period of 30 s.
	gracefulShutdown = 20 * time.Second
	// cacheSyncCheckTimeout bounds one readiness probe's wait for the caches.
	cacheSyncCheckTimeout = time.Second
	// reconcilers is how many objects of one kind are reconciled at once. With one, a
	// replica change in a quiet namespace waits behind every policy that churn elsewhere
	// has queued: at 1,000 nodes with rolling restarts under way, seconds. A key is never
	// reconciled twice at once, and reconciles spend most of their time waiting on the
	// API server.
	reconcilers = 4
)

// Leader election keeps its Lease in coordination.k8s.io, in the operator's own namespace
// only (a Role there, not the ClusterRole), and reports in core Events.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch,namespace=holdfast-system
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// The secure metrics endpoint asks the apiserver who a scraper is and whether it may get
// /metrics (the holdfast-metrics-reader ClusterRole).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Options configures the operator process.
type Options struct {
	// MetricsAddr serves Prometheus metrics; "0" turns them off.
	MetricsAddr string
	// MetricsSecure serves metrics over HTTPS (a self-signed certificate) to clients
	// whose bearer token the apiserver authenticates and authorises for GET /metrics;
	// false serves them over plain HTTP to anyone.
	MetricsSecure bool
	// Build labels holdfast_build_info: the version, commit and Go version of the binary.
	Build BuildInfo
	// ProbeAddr serves /healthz and /readyz; "0" turns them off.
	ProbeAddr string
	// LeaderElection makes replicas share the work: only the leader reconciles.
	LeaderElection bool
	// LeaderElectionNamespace holds the Lease; empty means the namespace the operator
	// runs in.
	LeaderElectionNamespace string
	// Clock is given to the controllers; nil means the real clock.
	Clock clock.PassiveClock
	// SkipNameValidation lets one process start managers more than once (tests restart
	// the operator in-process); controller names are otherwise unique per process.
	SkipNameValidation bool
	// Settings are the flags that bound the operator's decisions: the node autoscalers'
	// configuration, for hand-offs, and the bounds of the response to lost nodes.
	Settings policy.Settings
}

// BuildInfo describes the running binary in holdfast_build_info.
type BuildInfo struct {
	Version, Commit, GoVersion string
}

// controller is one reconciler the operator runs.
type controller struct {
	name  string
	setup func(ctrl.Manager, clock.PassiveClock) error
}

// controllers lists every controller the operator runs.
func controllers(o Options) []controller {
	return []controller{
		{name: nodecompanion.Name, setup: nodecompanion.SetupWithManager},
		{name: disruptionpolicy.Name, setup: func(mgr ctrl.Manager, clk clock.PassiveClock) error {
			return disruptionpolicy.SetupWithManager(mgr, clk, o.Settings)
		}},
		{name: clusterdisruptionpolicy.Name, setup: clusterdisruptionpolicy.SetupWithManager},
		{name: rebalance.Name, setup: rebalance.SetupWithManager},
		{name: drainleftovers.Name, setup: drainleftovers.SetupWithManager},
	}
}

// Scheme returns the types the operator reads and writes: Kubernetes' built-in kinds and
// holdfast's own.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding Kubernetes types to the scheme: %w", err)
	}
	if err := holdfastv1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding holdfast types to the scheme: %w", err)
	}
	return s, nil
}

// New builds the manager with every controller registered. Start it with mgr.Start(ctx);
// cancelling ctx shuts it down gracefully and releases the leader Lease.
func New(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	cacheOpts, err := cacheOptions()
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cacheOpts,
		Metrics:                       metricsOptions(o),
		HealthProbeBindAddress:        o.ProbeAddr,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptr.To(gracefulShutdown),
		Controller:                    config.Controller{SkipNameValidation: ptr.To(o.SkipNameValidation), MaxConcurrentReconciles: reconcilers},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("caches", cachesSynced(mgr.GetCache())); err != nil {
		return nil, fmt.Errorf("adding the readiness check: %w", err)
	}
	if err := registerBuildInfo(o.Build); err != nil {
		return nil, err
	}
	clk := o.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	for _, c := range controllers(o) {
		if err := c.setup(mgr, clk); err != nil {
			return nil, fmt.Errorf("setting up controller %s: %w", c.name, err)
		}
	}
	return mgr, nil
}

// cacheOptions trims what the shared cache holds, since the operator's memory is mostly
// its cache. managedFields are never read. Pods are the largest set by far and the
// controllers only read companions from the cache (the DisruptionPolicy controller reads
// the pods of the few workloads in motion straight from the apiserver, by label
// selector; the rebalance controller the pods of opted-in workloads, and all pods only to
// simulate a move). Of the ReplicaSets, only holdfast's surge sets are cached. Nodes keep their labels, taints and conditions, but not the image
// lists and volumes that make most of a real node's size.
func cacheOptions() (cache.Options, error) {
	companions, err := labels.NewRequirement(holdfastv1alpha1.CompanionLabel, selection.Exists, nil)
	if err != nil {
		return cache.Options{}, fmt.Errorf("building the companion pod selector: %w", err)
	}
	surgeSets, err := labels.NewRequirement(holdfastv1alpha1.SurgeOfLabel, selection.Exists, nil)
	if err != nil {
		return cache.Options{}, fmt.Errorf("building the surge set selector: %w", err)
	}
	strip := cache.TransformStripManagedFields()
	return cache.Options{
		DefaultTransform: strip,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {
				Label:     labels.NewSelector().Add(*companions),
				Transform: strip,
			},
			// holdfast's surge sets, not the cluster's many ReplicaSets.
			&appsv1.ReplicaSet{}: {
				Label:     labels.NewSelector().Add(*surgeSets),
				Transform: strip,
			},
			// The nodes' Leases, which say when a kubelet was last heard of, and the drain
			// runs', wherever their slot namespace is.
			&coordinationv1.Lease{}: {Namespaces: map[string]cache.Config{
				corev1.NamespaceNodeLease: {},
				cache.AllNamespaces:       {LabelSelector: labels.SelectorFromSet(labels.Set{drain.RunLabel: "true"})},
			}},
			&corev1.Node{}: {
				Transform: func(obj any) (any, error) {
					if node, ok := obj.(*corev1.Node); ok {
						node.ManagedFields = nil
						node.Status.Images = nil
						node.Status.VolumesInUse = nil
						node.Status.VolumesAttached = nil
					}
					return obj, nil
				},
			},
		},
	}, nil
}

// cachesSynced is ready once the informers have synced, so that a new leader does not
// receive traffic (or get counted Ready) before it can see the cluster.
func cachesSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), cacheSyncCheckTimeout)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return fmt.Errorf("caches not synced")
		}
		return nil
	}
}

// metricsOptions serves /metrics over HTTPS behind a TokenReview and a
// SubjectAccessReview when secure, as kube-controller-manager does; the certificate is
// self-signed and kept in memory, so the read-only root filesystem is no obstacle.
func metricsOptions(o Options) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: o.MetricsAddr}
	if o.MetricsSecure {
		opts.SecureServing = true
		opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return opts
}

// buildInfo is holdfast_build_info, 1 for the running binary: dashboards show the
// version each replica runs, and an upgrade shows as the labels change.
var buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "holdfast_build_info",
	Help: "1, labelled with the version, commit and Go version of the running operator.",
}, []string{"version", "commit", "go_version"})

func registerBuildInfo(b BuildInfo) error {
	g, err := collectors.Register(ctrlmetrics.Registry, buildInfo)
	if err != nil {
		return fmt.Errorf("registering holdfast_build_info: %w", err)
	}
	g.Reset()
	g.WithLabelValues(b.Version, b.Commit, b.GoVersion).Set(1)
	return nil
}
