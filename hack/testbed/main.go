// Command testbed runs a real Kubernetes control plane on loopback for holdfast's
// end-to-end tests and demo: etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler built from the Go module proxy, with kwok simulating the nodes and
// the kubelets. No Docker, no downloads beyond the module proxy.
//
//	testbed build                                  build (or find cached) binaries
//	testbed up --nodes 3 --zones 3 --dir DIR       start, create nodes, wait for Ready
//	testbed status --dir DIR                       report components, with log tails
//	testbed down --dir DIR                         stop what up started, remove DIR
//	testbed crash NODE --dir DIR                   stop the node's simulated kubelet
//	testbed restore NODE --dir DIR                 start it again, as after a reboot
//	testbed finalize-pods --kubeconfig FILE        (started by up) remove deleted pods
//
// A crashed node looks to the control plane like a dead machine: its Lease and status
// are no longer renewed, its pods keep their last status, and its deleted pods are not
// removed. The node lifecycle controller then does what it does in production.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

const usage = `usage: testbed COMMAND [flags]

commands:
  build   build the control plane and kwok, or report where the cached build is
  up      start a control plane with kwok nodes and write DIR/kubeconfig
  status  show the components of a running testbed (with log tails of dead ones)
  down    stop exactly the processes up started and remove DIR
  crash NODE
          stop all a kubelet does for NODE: Lease, status, pods, removing deleted pods
  restore NODE
          bring a crashed NODE back: kwok makes it and its pods Ready again
  finalize-pods
          (started by up) remove deleted pods from the API as a kubelet does, by UID

Run "testbed COMMAND -h" for the flags of a command.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1], os.Args[2:]); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "testbed:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, command string, args []string) error {
	fs := flag.NewFlagSet("testbed "+command, flag.ContinueOnError)
	dir := fs.String("dir", filepath.Join(os.TempDir(), "holdfast-testbed"), "folder for certificates, data, logs, the kubeconfig and the state of the testbed")
	src := fs.String("src", ".", "the hack/testbed module folder (to build from)")
	switch command {
	case "build":
		if err := fs.Parse(args); err != nil {
			return err
		}
		bins, err := ensureBinaries(ctx, *src, os.Stderr)
		if err != nil {
			return err
		}
		fmt.Println(bins.dir)
		return nil
	case "up":
		var o upOptions
		fs.IntVar(&o.nodes, "nodes", 3, "kwok nodes to create")
		fs.IntVar(&o.zones, "zones", 3, "zones to spread the nodes over (topology.kubernetes.io/zone)")
		fs.DurationVar(&o.podReadyDelay, "pod-ready-delay", 0, "how long kwok waits before marking a scheduled pod Running and Ready (a realistic start-up is 5s)")
		fs.IntVar(&o.apiQPS, "api-qps", 0, "raise the request rate of kube-controller-manager and kube-scheduler to this many per second (burst twice that), their workers and kwok's to match, make node Leases last 4 minutes, and let the control plane's Go runtimes collect garbage less often (GOGC=400 under a GOMEMLIMIT each), for testbeds of hundreds of nodes and tens of thousands of pods; 0 keeps the defaults")
		fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long to wait for the API and the nodes (the build is not counted)")
		if err := fs.Parse(args); err != nil {
			return err
		}
		if o.nodes < 0 || o.zones < 1 || o.apiQPS < 0 {
			return fmt.Errorf("--nodes and --api-qps must be at least 0 and --zones at least 1")
		}
		bins, err := ensureBinaries(ctx, *src, os.Stderr)
		if err != nil {
			return err
		}
		o.dir, o.bins = *dir, bins
		return upRetrying(ctx, o)
	case "finalize-pods":
		var o finalizeOptions
		fs.StringVar(&o.kubeconfig, "kubeconfig", "", "the testbed's kubeconfig")
		fs.StringVar(&o.health, "health", "127.0.0.1:0", "address to answer /healthz on once the pods are listed")
		fs.IntVar(&o.qps, "qps", 100, "requests a second (burst twice that)")
		fs.IntVar(&o.workers, "workers", 4, "pods removed at once")
		if err := fs.Parse(args); err != nil {
			return err
		}
		if o.qps < 1 || o.workers < 1 {
			return fmt.Errorf("--qps and --workers must be at least 1")
		}
		return finalizePods(ctx, o)
	case "status":
		if err := fs.Parse(args); err != nil {
			return err
		}
		return status(*dir, os.Stdout)
	case "crash", "restore":
		node, err := nodeArg(fs, args)
		if err != nil {
			return err
		}
		return setCrashed(ctx, *dir, node, command == "crash")
	case "down":
		if err := fs.Parse(args); err != nil {
			return err
		}
		return down(*dir)
	default:
		fmt.Fprint(os.Stderr, usage)
		return fmt.Errorf("unknown command %q", command)
	}
}
