//go:build e2e

// Package speed_test measures a rolling drain of the whole testbed, kubectl drain node by
// node against holdfast's drain, side by side on one testbed whose pods take 5 s to start.
// The times are logged, not asserted: timing depends on the machine.
package speed_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/clock"

	"github.com/holdfast-dev/holdfast/internal/drain"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// The scenario: 12 nodes in 3 zones, pods Ready 5 s after they are scheduled.
func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Nodes: 12, Zones: 3, PodReadyDelay: 5 * time.Second})
}

const (
	deployments = 4
	replicas    = 6
)

// TestRollingDrainSpeed drains and uncordons every node in turn, first with kubectl drain
// node by node, then with holdfast's drain (the drain package, as the command runs it,
// uncordoning each node as soon as it is drained), while a watcher checks every 200 ms
// that no budget goes below its floor. HOLDFAST_SPEED_EVENTS=1 logs holdfast's progress.
func TestRollingDrainSpeed(t *testing.T) {
	f := framework.New(t)
	kubectl, err := framework.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	var ds []*appsv1.Deployment
	for i := range deployments {
		name := fmt.Sprintf("svc-%d", i+1)
		d := f.Deployment(name, replicas)
		framework.HostnameAntiAffinity(d)
		f.Create(d)
		f.Create(f.PDB(name, name, 1))
		ds = append(ds, d)
	}
	settle := func() {
		for _, d := range ds {
			f.WaitReady(d)
			f.WaitBudget(d.Name, 1)
		}
	}
	settle()
	budgets := f.WatchBudgets(200 * time.Millisecond)

	start := time.Now()
	kubectlEvictions := 0
	for _, node := range f.Nodes {
		out, err := exec.CommandContext(f.Ctx, kubectl, "--kubeconfig", f.Kubeconfig, "drain", node,
			"--ignore-daemonsets", "--delete-emptydir-data", "--timeout", "5m").CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl drain %s: %v\n%s", node, err, out)
		}
		kubectlEvictions += strings.Count(string(out), " evicted\n")
		if out, err := exec.CommandContext(f.Ctx, kubectl, "--kubeconfig", f.Kubeconfig, "uncordon", node).CombinedOutput(); err != nil {
			t.Fatalf("kubectl uncordon %s: %v\n%s", node, err, out)
		}
	}
	kubectlTook := time.Since(start)
	settle()

	d := &drain.Drainer{
		Client: f.Clientset,
		Clock:  clock.RealClock{},
		Options: drain.Options{
			Pace:                  true,
			MaxConcurrent:         concurrency,
			CoordinationNamespace: f.Namespace,
			Identity:              "speed-test",
		},
		// The upgrade: a drained node comes back at once.
		Report: func(e drain.Event) {
			if os.Getenv("HOLDFAST_SPEED_EVENTS") != "" {
				t.Logf("%6.1fs %s %s %s %s", time.Since(start).Seconds(), e.Node, e.Pod, e.Kind, e.Message)
			}
			if e.Kind == drain.NodeDrained {
				f.Uncordon(e.Node)
			}
		},
	}
	ctx, cancel := context.WithTimeout(f.Ctx, 5*time.Minute)
	defer cancel()
	start = time.Now()
	// One wave, as `holdfast drain` runs it: the dispatcher orders the nodes live.
	// TODO(plan): compare with internal/plan's waves once it is there.
	res := d.Run(ctx, [][]string{f.Nodes})
	holdfastTook := time.Since(start)
	holdfastEvictions := 0
	for _, n := range res.Nodes {
		holdfastEvictions += n.Evicted
		if !n.Drained {
			t.Errorf("holdfast did not drain %s: %v %+v", n.Node, n.Err, n.Remaining)
		}
	}

	samples, violations := budgets.Stop()
	t.Logf("kubectl drain node by node: %s (%d evictions)", kubectlTook.Round(100*time.Millisecond), kubectlEvictions)
	t.Logf("holdfast drain, %d slots: %s (%d evictions)", concurrency, holdfastTook.Round(100*time.Millisecond), holdfastEvictions)
	t.Logf("holdfast/kubectl = %.2f; %d budget samples, lowest: %s", holdfastTook.Seconds()/kubectlTook.Seconds(), samples, budgets.Lowest())
	if len(violations) > 0 {
		t.Errorf("budgets went below their floor:\n%s", strings.Join(violations, "\n"))
	}
}

// concurrency is the number of drain slots holdfast uses here: with two pods per node on
// average and four budgets of one disruption each, no more than about two nodes can evict
// at once; the other slots let a node wait for its turn without stalling the rest.
const concurrency = 4
