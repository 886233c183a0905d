// Package framework runs holdfast's end-to-end tests on the testbed: a real etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler, with kwok simulating
// the nodes. Each test binary starts one testbed (Main); each test gets its own
// namespace (New) and waits on conditions, never on fixed sleeps (Eventually).
package framework

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/holdfast-dev/holdfast/internal/policy"
)

// Options shape the testbed of one test binary.
type Options struct {
	Nodes int // kwok nodes, named node-1..node-N
	Zones int // zones zone-a, zone-b, ... assigned round-robin
	// PodReadyDelay is how long kwok waits before marking a pod Running and Ready;
	// zero makes pods Ready within about a second.
	PodReadyDelay time.Duration
	// Karpenter runs Karpenter's kwok provider against the testbed for the whole
	// binary (see NodePool); the testbed then usually starts with no nodes.
	Karpenter bool
	// ClusterAutoscaler runs cluster-autoscaler's kwok provider against the testbed for
	// the whole binary, with the node groups of hack/cluster-autoscaler; the testbed then
	// usually starts with no nodes.
	ClusterAutoscaler bool
	// APIQPS raises the request rate of the control plane's controllers and kwok's
	// workers (testbed up --api-qps), for testbeds of tens of thousands of pods.
	APIQPS int
}

// Cluster is the testbed shared by the tests of one binary.
type Cluster struct {
	Dir        string // the testbed's folder (logs are in Dir/logs)
	Kubeconfig string
	Config     *rest.Config
	Clientset  kubernetes.Interface
	Client     client.Client
	Nodes      []string // the nodes the testbed started with
	// Settings are the flags the operators the tests start are given by default:
	// cluster-autoscaler's node group label and timings where it runs.
	Settings policy.Settings
}

var shared *Cluster

// Main starts a testbed, runs the tests and stops the testbed. Call it from TestMain.
// HOLDFAST_E2E_KUBECONFIG points the tests at a testbed that is already running
// (testbed up) instead, which keeps the edit-test loop fast.
func Main(m *testing.M, opts Options) {
	// The clients and managers the tests start log through controller-runtime's logger.
	ctrl.SetLogger(klog.NewKlogr())
	os.Exit(run(m, opts))
}

func run(m *testing.M, opts Options) int {
	flag.Parse()
	kubeconfig := os.Getenv("HOLDFAST_E2E_KUBECONFIG")
	if kubeconfig == "" {
		dir, err := os.MkdirTemp("", "holdfast-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		args := []string{"up", "--dir", dir, "--nodes", fmt.Sprint(opts.Nodes), "--zones", fmt.Sprint(max(opts.Zones, 1))}
		if opts.PodReadyDelay > 0 {
			args = append(args, "--pod-ready-delay", opts.PodReadyDelay.String())
		}
		if opts.APIQPS > 0 {
			args = append(args, "--api-qps", fmt.Sprint(opts.APIQPS))
		}
		defer func() {
			if out, err := testbed("down", "--dir", dir).CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "e2e: stopping the testbed: %v\n%s", err, out)
			}
		}()
		cmd := testbed(args...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: starting the testbed: %v\n", err)
			return 1
		}
		kubeconfig = filepath.Join(dir, "kubeconfig")
		defer func() {
			// A component that died explains most strange failures: say so.
			if out, err := testbed("status", "--dir", dir).CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "e2e: the testbed is unhealthy:\n%s", out)
			}
		}()
	}
	c, err := connect(kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	shared = c
	defer removeOperatorBinary()
	closeLog, err := logToFile(c.Dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer closeLog()
	if opts.Karpenter {
		stop, err := startKarpenter(c)
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		defer stop()
	}
	if opts.ClusterAutoscaler {
		stop, err := startClusterAutoscaler(c)
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		defer stop()
	}
	code := m.Run()
	if code != 0 {
		keepLogs(c.Dir)
	}
	return code
}

// logToFile sends the log of the clients and in-process operators the tests start to
// dir/logs/tests.log rather than to the test output, so that a failing test's output
// is its own messages.
func logToFile(dir string) (func(), error) {
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(logs, "tests.log"))
	if err != nil {
		return nil, err
	}
	klog.LogToStderr(false)
	klog.SetOutput(f)
	fmt.Fprintf(os.Stderr, "e2e: the operators' and clients' log is %s\n", f.Name())
	return func() { klog.Flush(); f.Close() }, nil
}

// keepLogs copies the testbed's logs of a failed run to HOLDFAST_E2E_LOGS/PACKAGE-TIME
// when that is set (the testbed's folder goes with the testbed).
func keepLogs(dir string) {
	into := os.Getenv("HOLDFAST_E2E_LOGS")
	if into == "" {
		return
	}
	klog.Flush()
	dst := filepath.Join(into, fmt.Sprintf("%s-%s", strings.TrimSuffix(filepath.Base(os.Args[0]), ".test"), time.Now().UTC().Format("20060102T150405")))
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(dir, "logs"))); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: keeping the logs: %v\n", err)
		return
	}
	fmt.Fprintf(os.Stderr, "e2e: the testbed's logs are in %s\n", dst)
}

// testbed runs the testbed command: the binary named by HOLDFAST_TESTBED, or
// `go run` in the repository's hack/testbed module.
func testbed(args ...string) *exec.Cmd {
	if bin := os.Getenv("HOLDFAST_TESTBED"); bin != "" {
		return exec.Command(bin, args...)
	}
	src := filepath.Join(RepoRoot(), "hack", "testbed")
	cmd := exec.Command("go", append([]string{"run", "."}, args...)...)
	cmd.Dir = src
	return cmd
}

// RepoRoot finds the repository from the test's working folder (its package).
func RepoRoot() string {
	dir, _ := os.Getwd()
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "hack", "testbed", "go.mod")); err == nil {
			return d
		}
	}
	return dir
}

func connect(kubeconfig string) (*Cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", kubeconfig, err)
	}
	// Tests create and watch many objects quickly; client-side throttling would only
	// slow them down.
	cfg.QPS, cfg.Burst = 200, 400
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return nil, err
	}
	nodes, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	c := &Cluster{Dir: filepath.Dir(kubeconfig), Kubeconfig: kubeconfig, Config: cfg, Clientset: cs, Client: cl}
	for _, n := range nodes.Items {
		c.Nodes = append(c.Nodes, n.Name)
	}
	sort.Slice(c.Nodes, func(i, j int) bool { return nodeLess(c.Nodes[i], c.Nodes[j]) })
	return c, nil
}

// nodeLess orders node-2 before node-10.
func nodeLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// Framework is one test's view of the testbed.
type Framework struct {
	*Cluster
	T         *testing.T
	Ctx       context.Context
	Namespace string
	down      map[string]bool // the nodes CrashNode stopped, by name
	// Settings are the flags of the operators this test starts: the cluster's, which
	// the test may change before it starts one.
	Settings policy.Settings
}

var unsafeName = regexp.MustCompile(`[^a-z0-9-]+`)

// New gives the test its own namespace, deleted when the test ends.
func New(t *testing.T) *Framework {
	t.Helper()
	if shared == nil {
		t.Fatal("no testbed: call framework.Main from TestMain")
	}
	name := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 40 {
		name = strings.TrimRight(name[:40], "-")
	}
	f := &Framework{Cluster: shared, T: t, Ctx: t.Context(), Namespace: name + "-" + rand.String(5), Settings: shared.Settings}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.Namespace, Labels: map[string]string{"holdfast.dev/e2e": "true"}}}
	if _, err := f.Clientset.CoreV1().Namespaces().Create(f.Ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", f.Namespace, err)
	}
	t.Cleanup(func() {
		// t.Context is already cancelled when cleanups run.
		if err := f.Clientset.CoreV1().Namespaces().Delete(context.Background(), f.Namespace, metav1.DeleteOptions{}); err != nil {
			t.Logf("deleting namespace %s: %v", f.Namespace, err)
		}
	})
	// Pods are refused until the namespace's default ServiceAccount exists.
	f.Eventually(30*time.Second, "the default ServiceAccount", func(ctx context.Context) (bool, error) {
		_, err := f.Clientset.CoreV1().ServiceAccounts(f.Namespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	return f
}

// Eventually polls cond every 100ms until it returns true, and fails the test with
// the last error if timeout passes first. cond's errors are retried, not fatal.
func (f *Framework) Eventually(timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	f.T.Helper()
	var last error
	err := wait.PollUntilContextTimeout(f.Ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		last = err
		return ok && err == nil, nil
	})
	if err != nil {
		f.T.Fatalf("waiting %s for %s: %v (last error: %v)", timeout, what, err, last)
	}
}
