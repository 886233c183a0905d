package framework

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/operator"
)

// HoldfastClient returns a client that knows holdfast's types as well as Kubernetes'.
func (f *Framework) HoldfastClient() client.Client {
	f.T.Helper()
	scheme, err := operator.Scheme()
	if err != nil {
		f.T.Fatal(err)
	}
	c, err := client.New(f.Config, client.Options{Scheme: scheme})
	if err != nil {
		f.T.Fatal(err)
	}
	return c
}

// Holdfast returns a client of holdfast's kinds once the CRDs are installed and every one
// of lists is served (InstallCRDs), and deletes the test namespace's DisruptionPolicies
// and NodeCompanions when the test ends. Registered before the test starts its operator,
// that cleanup runs after the operator has stopped (cleanups run last-registered
// first), so that the next test's operator finds none of them in a namespace being
// deleted.
func (f *Framework) Holdfast(lists ...client.ObjectList) client.Client {
	f.T.Helper()
	c := f.HoldfastClient()
	f.InstallCRDs(c, lists...)
	f.T.Cleanup(func() {
		for _, obj := range []client.Object{&holdfastv1alpha1.DisruptionPolicy{}, &holdfastv1alpha1.NodeCompanion{}} {
			if err := c.DeleteAllOf(context.Background(), obj, client.InNamespace(f.Namespace)); err != nil && !meta.IsNoMatchError(err) {
				f.T.Logf("deleting the test's %T: %v", obj, err)
			}
		}
	})
	return c
}

// CRDs returns holdfast's CustomResourceDefinitions, as config/crd/bases holds them.
func (f *Framework) CRDs() []*unstructured.Unstructured {
	f.T.Helper()
	files, err := filepath.Glob(filepath.Join(RepoRoot(), "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		f.T.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	var out []*unstructured.Unstructured
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.T.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			f.T.Fatalf("decoding %s: %v", file, err)
		}
		out = append(out, u)
	}
	return out
}

// InstallCRDs applies config/crd/bases with c, as `make deploy` would, and waits until
// the apiserver serves every one of lists (one list type per kind the test needs: the
// operator starts only once every kind it watches is served).
func (f *Framework) InstallCRDs(c client.Client, lists ...client.ObjectList) {
	f.T.Helper()
	var crds []string
	for _, u := range f.CRDs() {
		if err := c.Apply(f.Ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("holdfast-e2e"), client.ForceOwnership); err != nil {
			f.T.Fatalf("applying CRD %s: %v", u.GetName(), err)
		}
		crds = append(crds, u.GetName())
	}
	// The operator watches every kind of the group, also those this test does not list.
	f.Eventually(defaultTimeout, "the CRDs established", func(ctx context.Context) (bool, error) {
		for _, name := range crds {
			crd := &unstructured.Unstructured{}
			crd.SetAPIVersion("apiextensions.k8s.io/v1")
			crd.SetKind("CustomResourceDefinition")
			if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return false, err
			}
			if !established(crd) {
				return false, nil
			}
		}
		return true, nil
	})
	f.Eventually(defaultTimeout, "the CRDs served", func(ctx context.Context) (bool, error) {
		for _, l := range lists {
			if err := c.List(ctx, l); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// StartOperator runs holdfast's manager in-process, as `holdfast operator` does, with
// leader election in the test's namespace. The returned function stops it and waits
// until it has stopped (as a killed operator would, but releasing its Lease); it also
// runs when the test ends.
func (f *Framework) StartOperator() (stop func()) {
	f.T.Helper()
	return f.StartOperatorAs(f.Config)
}

// StartOperatorAs is StartOperator with the credentials of cfg, such as a
// ServiceAccount's bound to the operator's ClusterRole, where RBAC is under test.
func (f *Framework) StartOperatorAs(cfg *rest.Config) (stop func()) {
	f.T.Helper()
	mgr, err := operator.New(cfg, operator.Options{
		MetricsAddr:             "0",
		ProbeAddr:               "0",
		LeaderElection:          true,
		LeaderElectionNamespace: f.Namespace,
		SkipNameValidation:      true,
		Settings:                f.Settings,
	})
	if err != nil {
		f.T.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := mgr.Start(ctx); err != nil {
			f.T.Errorf("operator: %v", err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	f.T.Cleanup(stop)
	// The operator is useful once it leads; until then it watches without acting.
	select {
	case <-mgr.Elected():
	case <-time.After(defaultTimeout):
		f.T.Fatal("the operator was not elected leader within a minute")
	}
	return stop
}

// operatorBinary is holdfast's binary, built once per test binary by OperatorBinary and
// removed by Main.
var operatorBinary struct {
	once      sync.Once
	dir, path string
	err       error
}

// OperatorBinary builds cmd/holdfast from the repository once per test binary and
// returns its path. Call it before anything timed: the first build takes a while.
func (f *Framework) OperatorBinary() string {
	f.T.Helper()
	b := &operatorBinary
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "holdfast-bin-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "holdfast")
		cmd := exec.Command("go", "build", "-o", b.path, "./cmd/holdfast")
		cmd.Dir = RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build ./cmd/holdfast: %w\n%s", err, out)
		}
	})
	if b.err != nil {
		f.T.Fatal(b.err)
	}
	return b.path
}

func removeOperatorBinary() {
	if operatorBinary.dir != "" {
		_ = os.RemoveAll(operatorBinary.dir)
	}
}

// OperatorProcess is `holdfast operator` run as a process of its own, for tests in
// which the operator must die as a process does (at a failpoint), not stop in-process.
type OperatorProcess struct {
	f    *Framework
	cmd  *exec.Cmd
	logs string
	done chan struct{}
}

// StartOperatorProcess runs `holdfast operator` against the testbed with env added to
// the test's environment, until it exits or the test ends (SIGTERM then). It runs
// without leader election, so that a restart acts at once rather than after the Lease
// of a killed predecessor expires: the tests of a package run one at a time, so one
// operator acts at a time. Its output is logged if the test fails.
func (f *Framework) StartOperatorProcess(env ...string) *OperatorProcess {
	f.T.Helper()
	out, err := os.CreateTemp(filepath.Join(shared.Dir, "logs"), "operator-"+strings.ReplaceAll(f.T.Name(), "/", "_")+"-*.log")
	if err != nil {
		f.T.Fatal(err)
	}
	p := &OperatorProcess{f: f, logs: out.Name(), done: make(chan struct{})}
	p.cmd = exec.Command(f.OperatorBinary(), "operator", "--kubeconfig", f.Kubeconfig,
		"--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address=0")
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		f.T.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		out.Close()
		close(p.done)
	}()
	f.T.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
		if f.T.Failed() {
			f.T.Logf("the log of the operator %v is %s", env, p.logs)
		}
	})
	return p
}

// WaitExit waits until the process exits, at most timeout, and returns its exit code.
func (p *OperatorProcess) WaitExit(timeout time.Duration) int {
	p.f.T.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		p.f.T.Fatalf("the operator did not exit within %s", timeout)
		return 0
	}
}
