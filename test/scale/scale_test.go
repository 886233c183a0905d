//go:build scale

package scale

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/disruptionpolicy"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/test/bench"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

const (
	// drainConcurrency is holdfast drain's --max-concurrent, as the issue states it.
	drainConcurrency = 10
	// latencySamples is how many replica changes each way are timed.
	latencySamples = 20
	// steadyWindow is how long the operator's requests are counted at rest.
	steadyWindow = time.Minute
	// sampleEvery is the budget sampler's period.
	sampleEvery = 200 * time.Millisecond
	batchLabel  = "holdfast.dev/scale-batch"
)

// report prints each figure as it is measured, with the command that reproduces it, and
// all of them again at the end, when it writes them as data (package bench).
type report struct {
	t *testing.T
	bench.Report
}

// add records a figure told in words.
func (r *report) add(what, figure, command string) {
	r.Add(r.t, bench.Figure{Name: what, Note: figure, Command: command})
}

// Targets of the issue on plans that reach their bound, at 1,000 nodes and 50,000 pods.
const (
	planTarget     = 3.0   // s, holdfast plan drain --all
	operatorTarget = 150.0 // MB resident after the first sync
	waveRatio      = 1.2   // the planner's waves per wave of the lower bound
)

func TestScale(t *testing.T) {
	testbedUp := time.Since(started)
	f := framework.New(t)
	ctx := f.Ctx
	s := shape
	rerun := fmt.Sprintf("make bench-scale SCALE=%g CHURN=%s", s.scale, s.churn)
	r := &report{t: t, Report: bench.Report{Benchmark: "bench-scale", Command: rerun}}
	defer func() {
		var rows []string
		for _, f := range r.Figures {
			rows = append(rows, f.String())
		}
		t.Logf("scale %g: %d nodes, load average at the end %s\n%s", s.scale, s.nodes, loadAverage(), strings.Join(rows, "\n"))
		r.Finish(t)
	}()
	t.Logf("load average at the start: %s", loadAverage())

	hc := f.HoldfastClient()
	f.InstallCRDs(hc, &holdfastv1alpha1.DisruptionPolicyList{}, &holdfastv1alpha1.NodeCompanionList{}, &holdfastv1alpha1.ClusterDisruptionPolicyList{})
	nodes, err := f.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inZone := map[string][]string{}
	for _, n := range nodes.Items {
		z := n.Labels[corev1.LabelTopologyZone]
		inZone[z] = append(inZone[z], n.Name)
	}
	counts := map[string]int{}
	for z, ns := range inZone {
		slices.SortFunc(ns, nodeOrder)
		counts[z] = len(ns)
	}
	fl := buildFleet(s, counts)

	// Set-up: the testbed, then every object, then every pod Ready and every budget counted.
	start := time.Now()
	view, err := watchCluster(ctx, f.Clientset)
	if err != nil {
		t.Fatal(err)
	}
	if err := fl.create(ctx, hc); err != nil {
		t.Fatal(err)
	}
	created := time.Since(start)
	withoutCompanions := fl.pods - companionPods(s, counts)
	if _, err := view.waitSettled(ctx, withoutCompanions, fl.handBudgets, 40*time.Minute, progress(t, "set-up")); err != nil {
		t.Fatalf("set-up: %v", err)
	}
	r.add("set-up", fmt.Sprintf("%s: testbed with %d nodes up %s, %d objects created %s, %d pods Ready and budgets counted %s (load %s)",
		(testbedUp+time.Since(start)).Round(time.Second), s.nodes, testbedUp.Round(time.Second), len(fl.stages[0])+len(fl.stages[1])+len(fl.stages[2]),
		created.Round(time.Second), withoutCompanions, time.Since(start).Round(time.Second), loadAverage()), rerun)

	// The operator: first sync, memory, requests at rest, reconcile latency.
	opStart := time.Now()
	op, err := startOperator(f.Kubeconfig, f.Dir+"/logs/holdfast-operator.log")
	if err != nil {
		t.Fatal(err)
	}
	defer op.stop()
	if err := op.waitReady(ctx, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	synced := time.Since(opStart)
	if _, err := view.waitSettled(ctx, fl.pods, fl.budgets, 20*time.Minute, progress(t, "operator")); err != nil {
		t.Fatalf("the operator's budgets and companions: %v", err)
	}
	r.add("operator: time to first full sync", fmt.Sprintf("%s from start to every budget made and counted and every companion Ready (/readyz after %s)",
		time.Since(opStart).Round(100*time.Millisecond), synced.Round(100*time.Millisecond)), rerun)
	memAfterSync := op.mustMemory(t)
	r.Add(t, bench.Of("operator: resident memory after sync", memAfterSync.rss/1e6, "MB").AtMost(operatorTarget).With(memAfterSync.String()).By(rerun))

	before := op.mustMetric(t, "rest_client_requests_total")
	time.Sleep(steadyWindow) // a rate over a fixed window, not a wait for a condition
	after := op.mustMetric(t, "rest_client_requests_total")
	r.add("operator: API requests at rest", fmt.Sprintf("%.2f/s over %s (rest_client_requests_total)", (after-before)/steadyWindow.Seconds(), steadyWindow), rerun)

	if len(fl.singles) == 0 {
		t.Fatal("no 1-replica Deployment under a policy to time")
	}
	lat := timeBudgets(ctx, t, f.Clientset, fl.singles, latencySamples)
	r.add("operator: replica change -> budget, at rest", lat.String(), rerun)

	// audit and plan.
	ctr, stopCounter, err := startCounter(f.Config, f.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer stopCounter()
	// Each keeps a CPU profile, named, for a look at where the time goes; sampling costs
	// little.
	measure := func(what, name string, target float64, args ...string) []byte {
		c0 := ctr.read()
		profile := filepath.Join(os.TempDir(), "holdfast-scale-"+name+".pprof")
		res, err := runMeasured(ctx, holdfastBin(), append(args, "--kubeconfig", ctr.Kubeconfig, "--profile=cpu", "--profile-output="+profile)...)
		t.Logf("%s: CPU profile: go tool pprof %s %s", what, holdfastBin(), profile)
		if err != nil || res.exitCode > 2 || res.exitCode == 1 {
			t.Errorf("holdfast %s: exit %d, %v\n%s", strings.Join(args, " "), res.exitCode, err, tail(res.stderr))
		}
		n := ctr.since(c0)
		f := bench.Of(what+": wall", res.took.Seconds(), "s").With(fmt.Sprintf("peak RSS %s, %d API requests (exit code %d)", mb(res.peak), n.requests, res.exitCode))
		if target > 0 {
			f = f.AtMost(target)
		}
		r.Add(t, f.By("holdfast "+strings.Join(args, " ")))
		return res.stdout
	}
	measure("holdfast audit -A", "audit", 0, "audit", "-A", "-o", "json")
	// The API server gzips large responses unless asked not to: over loopback that is
	// CPU on both sides for nothing, which this shows.
	measure("holdfast audit -A, uncompressed", "audit-uncompressed", 0, "audit", "-A", "-o", "json", "--disable-compression")
	planned := measure("holdfast plan drain --all", "plan", planTarget, "plan", "drain", "--all", "-o", "json")
	var p struct {
		Waves   [][]string `json:"waves"`
		Blocked []struct {
			Reasons []struct {
				Type string `json:"type"`
			} `json:"reasons"`
		} `json:"blocked"`
		LowerBound struct {
			Waves int `json:"waves"`
		} `json:"lowerBound"`
	}
	if err := json.Unmarshal(planned, &p); err != nil {
		t.Errorf("reading the plan: %v", err)
	}
	why := map[string]int{}
	for _, b := range p.Blocked {
		for _, reason := range b.Reasons {
			why[reason.Type]++
		}
	}
	waves := bench.Of("plan drain --all: waves / lower bound", float64(len(p.Waves))/float64(max(p.LowerBound.Waves, 1)), "x").AtMost(waveRatio).
		With(fmt.Sprintf("%d waves, lower bound %d; %d nodes blocked (reasons: %v)", len(p.Waves), p.LowerBound.Waves, len(p.Blocked), why))
	r.Add(t, waves.By("holdfast plan drain --all -o json"))

	// Churn: rolling restarts of a tenth of the Deployments and nodes cordoned and
	// uncordoned, with replica changes timed meanwhile.
	churnNodes := inZone["zone-c"][:min(s.churnNodes, len(inZone["zone-c"]))]
	queued, err := op.queueTimes(disruptionpolicy.Name)
	if err != nil {
		t.Fatal(err)
	}
	var churnLat latencies
	var wg sync.WaitGroup
	churnCtx, endChurn := context.WithCancel(ctx)
	wg.Add(1)
	go func() {
		defer wg.Done()
		churnLat = timeBudgetsUntil(ctx, churnCtx, t, f.Clientset, fl.singles)
	}()
	if err := churn(ctx, f.Clientset, fl.restartable, churnNodes, s.churn); err != nil {
		t.Fatalf("churn: %v", err)
	}
	endChurn()
	wg.Wait()
	r.add("operator: memory after churn", fmt.Sprintf("%s, after %s of churn (%d rolling restarts, %d nodes cordoned and uncordoned)",
		op.mustMemory(t), s.churn, len(fl.restartable), len(churnNodes)), rerun)
	r.add("operator: replica change -> budget, in churn", churnLat.String(), rerun)
	if q, err := op.queueTimes(disruptionpolicy.Name); err == nil {
		r.add("operator: DisruptionPolicy reconciles in churn", q.since(queued), rerun)
	}
	if _, err := view.waitSettled(ctx, fl.pods, fl.budgets, 20*time.Minute, progress(t, "after churn")); err != nil {
		t.Fatalf("settling after the churn: %v", err)
	}

	// The drains: holdfast's over one batch of zone-a, kubectl's node by node over the next.
	zoneA := inZone["zone-a"]
	if len(zoneA) < 2*s.batch {
		t.Fatalf("zone-a has %d nodes, fewer than two batches of %d", len(zoneA), s.batch)
	}
	for i, node := range zoneA[:2*s.batch] {
		batch := "holdfast"
		if i >= s.batch {
			batch = "kubectl"
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, batchLabel, batch)
		if _, err := f.Clientset.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	selector := corev1.LabelTopologyZone + "=zone-a," + batchLabel + "=holdfast"
	budgets := view.watchBudgets(ctx, sampleEvery)
	c0 := ctr.read()
	drainArgs := []string{"drain", "--selector", selector, "--ignore-daemonsets", "--max-concurrent", fmt.Sprint(drainConcurrency), "--timeout", "30m"}
	res, err := runMeasured(ctx, holdfastBin(), append(drainArgs, "--kubeconfig", ctr.Kubeconfig)...)
	if err != nil || res.exitCode != 0 {
		t.Errorf("holdfast drain: exit %d, %v\n%s", res.exitCode, err, tail(res.stderr))
	}
	holdfastTook := res.took
	// The drain's progress, for a look at what it waited for.
	if path := filepath.Join(os.TempDir(), "holdfast-scale-drain.log"); os.WriteFile(path, res.stderr, 0o644) == nil {
		t.Logf("holdfast drain's progress: %s", path)
	}
	hd := ctr.since(c0)
	samples, violations := budgets.Stop()
	r.add(fmt.Sprintf("holdfast drain, %d nodes", s.batch), fmt.Sprintf("%s, %d evictions, %d API requests (%s), %d budget violations in %d samples",
		holdfastTook.Round(100*time.Millisecond), hd.evictions, hd.requests, hd.top(5), len(violations), samples), "holdfast "+strings.Join(drainArgs, " "))
	reportViolations(t, violations)
	for _, node := range zoneA[:s.batch] {
		f.Uncordon(node)
	}
	if _, err := view.waitSettled(ctx, fl.pods, fl.budgets, 20*time.Minute, progress(t, "after holdfast drain")); err != nil {
		t.Fatalf("settling after holdfast's drain: %v", err)
	}

	kubectl, err := framework.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	budgets = view.watchBudgets(ctx, sampleEvery)
	c0 = ctr.read()
	start = time.Now()
	for _, node := range zoneA[s.batch : 2*s.batch] {
		out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", ctr.Kubeconfig, "drain", node,
			"--ignore-daemonsets", "--delete-emptydir-data", "--timeout", "10m").CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl drain %s: %v\n%s", node, err, tail(out))
		}
		if out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", ctr.Kubeconfig, "uncordon", node).CombinedOutput(); err != nil {
			t.Fatalf("kubectl uncordon %s: %v\n%s", node, err, out)
		}
	}
	kubectlTook := time.Since(start)
	kd := ctr.since(c0)
	samples, violations = budgets.Stop()
	r.add(fmt.Sprintf("kubectl drain node by node, %d nodes", s.batch), fmt.Sprintf("%s, %d evictions, %d API requests (%s), %d budget violations in %d samples",
		kubectlTook.Round(100*time.Millisecond), kd.evictions, kd.requests, kd.top(5), len(violations), samples),
		"kubectl drain NODE --ignore-daemonsets --delete-emptydir-data; kubectl uncordon NODE")
	reportViolations(t, violations)
	r.add("holdfast drain / kubectl drain", fmt.Sprintf("%.2f of kubectl's time", holdfastTook.Seconds()/kubectlTook.Seconds()), rerun)
}

// nodeOrder orders node-2 before node-10.
func nodeOrder(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

func companionPods(s size, nodesInZone map[string]int) int {
	n := 0
	for i, z := range companionZones {
		if i < s.daemonSets {
			n += nodesInZone[z]
		}
	}
	return n
}

func progress(t *testing.T, phase string) func(string) {
	return func(msg string) { t.Logf("%s: %s", phase, msg) }
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func tail(out []byte) string {
	const keep = 4000
	if len(out) > keep {
		return "..." + string(out[len(out)-keep:])
	}
	return string(out)
}

func reportViolations(t *testing.T, violations []string) {
	t.Helper()
	if len(violations) > 0 {
		t.Errorf("%d budget samples below their floor, the first: %s", len(violations), strings.Join(violations[:min(20, len(violations))], "\n"))
	}
}

// run is one command's output, wall time and peak resident memory.
type run struct {
	stdout, stderr []byte
	took           time.Duration
	peak           float64 // bytes
	exitCode       int
}

// runMeasured runs a command to its end. An exit code is no error: audit and plan say
// with 2 that they found something.
func runMeasured(ctx context.Context, bin string, args ...string) (run, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := run{stdout: stdout.Bytes(), stderr: stderr.Bytes(), took: time.Since(start)}
	if cmd.ProcessState == nil {
		return r, fmt.Errorf("running %s: %w", bin, err)
	}
	r.exitCode = cmd.ProcessState.ExitCode()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.peak = float64(ru.Maxrss) * 1024
	}
	return r, nil
}

// churn restarts the Deployments and cordons the nodes evenly over d, each node
// uncordoned a tenth of d after its cordon, then waits for nothing.
func churn(ctx context.Context, cs kubernetes.Interface, restarts []ref, nodes []string, d time.Duration) error {
	steps := max(len(restarts), len(nodes), 1)
	every := d / time.Duration(steps)
	cordoned := map[string]time.Time{}
	setCordon := func(node string, on bool) error {
		patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
		_, err := cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := range steps {
		if i < len(restarts) {
			w := restarts[i]
			patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"holdfast.dev/scale-restart":%q}}}}}`, time.Now().Format(time.RFC3339Nano))
			if _, err := cs.AppsV1().Deployments(w.namespace).Patch(ctx, w.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("restarting %s/%s: %w", w.namespace, w.name, err)
			}
		}
		if i < len(nodes) {
			if err := setCordon(nodes[i], true); err != nil {
				return err
			}
			cordoned[nodes[i]] = time.Now()
		}
		for node, at := range cordoned {
			if time.Since(at) >= d/10 {
				if err := setCordon(node, false); err != nil {
					return err
				}
				delete(cordoned, node)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	for node := range cordoned {
		if err := setCordon(node, false); err != nil {
			return err
		}
	}
	return nil
}

// latencies are replica changes timed to the operator's budget change, each way.
type latencies struct {
	created, deleted []time.Duration
	missed           int
}

func (l latencies) String() string {
	s := fmt.Sprintf("1->2 to budget created %s; 2->1 to budget deleted %s", distribution(l.created), distribution(l.deleted))
	if l.missed > 0 {
		s += fmt.Sprintf("; %d changes not followed within a minute", l.missed)
	}
	return s
}

func distribution(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))].Round(time.Millisecond) }
	return fmt.Sprintf("p50 %s p99 %s max %s (n=%d)", at(0.5), at(0.99), s[len(s)-1].Round(time.Millisecond), len(s))
}

// timeBudgets times n replica changes each way.
func timeBudgets(ctx context.Context, t *testing.T, cs kubernetes.Interface, singles []ref, n int) latencies {
	var l latencies
	for i := range n {
		l.add(ctx, t, cs, singles[i%len(singles)])
	}
	return l
}

// timeBudgetsUntil times replica changes until stop ends; the last one is finished, so
// that every Deployment is back at one replica.
func timeBudgetsUntil(ctx, stop context.Context, t *testing.T, cs kubernetes.Interface, singles []ref) latencies {
	var l latencies
	for i := 0; stop.Err() == nil; i++ {
		l.add(ctx, t, cs, singles[i%len(singles)])
	}
	return l
}

// add scales d to 2 and back to 1, timing each change from the API server's answer to
// the watch event of the budget the operator creates or deletes.
func (l *latencies) add(ctx context.Context, t *testing.T, cs kubernetes.Interface, d ref) {
	name := policy.BudgetName(holdfastv1alpha1.KindDeployment, d.name)
	for _, step := range []struct {
		replicas int32
		event    watch.EventType
		into     *[]time.Duration
	}{{2, watch.Added, &l.created}, {1, watch.Deleted, &l.deleted}} {
		took, err := timeScale(ctx, cs, d, name, step.replicas, step.event)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			t.Logf("timing %s/%s to %d replicas: %v", d.namespace, d.name, step.replicas, err)
			l.missed++
		default:
			*step.into = append(*step.into, took)
		}
	}
}

func timeScale(ctx context.Context, cs kubernetes.Interface, d ref, budget string, replicas int32, want watch.EventType) (time.Duration, error) {
	pdbs := cs.PolicyV1().PodDisruptionBudgets(d.namespace)
	w, err := pdbs.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + budget})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	// After a change that was not followed in time the budget may already be as
	// wanted: the change is still made, to keep the fleet's size, but not timed.
	_, err = pdbs.Get(ctx, budget, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, err
	}
	already := (err == nil) == (want == watch.Added)
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if _, err := cs.AppsV1().Deployments(d.namespace).Patch(ctx, d.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return 0, err
	}
	if already {
		return 0, fmt.Errorf("budget %s was already as %d replicas want", budget, replicas)
	}
	changed := time.Now()
	timeout := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return 0, fmt.Errorf("the watch of %s ended", budget)
			}
			if ev.Type == want {
				return time.Since(changed), nil
			}
		case <-timeout:
			return 0, fmt.Errorf("no %s of budget %s within a minute", want, budget)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}
