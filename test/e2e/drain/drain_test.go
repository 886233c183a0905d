//go:build e2e

// Package drain_test runs holdfast drain on the testbed: an upgrade loop that drains
// every node at once, a single replica's budget that never allows an eviction, a refusal
// that is retried until the budget allows it, and a drain stopped by --timeout and
// resumed.
package drain_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/holdfast-dev/holdfast/config"
	"github.com/holdfast-dev/holdfast/internal/cli"
	"github.com/holdfast-dev/holdfast/internal/drain"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Nodes: 6, Zones: 3})
}

// syncBuffer is a bytes.Buffer that a running command writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// run is one holdfast command run in-process, as the binary would run it.
type run struct {
	out, errOut syncBuffer
	code        int
	done        chan struct{}
}

// holdfast starts `holdfast ARGS... --kubeconfig K` and returns at once; wait on done.
func holdfast(ctx context.Context, f *framework.Framework, args ...string) *run {
	return holdfastAs(ctx, f.Kubeconfig, args...)
}

// holdfastAs is holdfast with the credentials of kubeconfig.
func holdfastAs(ctx context.Context, kubeconfig string, args ...string) *run {
	r := &run{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		cmd := cli.NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &r.out, ErrOut: &r.errOut})
		cmd.SetArgs(append(args, "--kubeconfig", kubeconfig))
		err := cmd.ExecuteContext(ctx)
		var coded *cli.ExitCodeError
		switch {
		case err == nil:
			r.code = cli.ExitOK
		case errors.As(err, &coded):
			r.code = coded.Code
		default:
			r.code = cli.ExitError
			fmt.Fprintln(&r.errOut, "holdfast:", err)
		}
	}()
	return r
}

func (r *run) wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(timeout):
		t.Fatalf("holdfast did not end within %s; stderr so far:\n%s", timeout, r.errOut.String())
	}
}

func (r *run) output() string { return r.out.String() + r.errOut.String() }

// hasRow reports whether a table in out has a row with these cells one after the other,
// as kubectl's table printer separates them.
func hasRow(out string, cells ...string) bool {
	quoted := make([]string, len(cells))
	for i, c := range cells {
		quoted[i] = regexp.QuoteMeta(c)
	}
	return regexp.MustCompile(`(?m)(^|\s)` + strings.Join(quoted, `\s{3,}`) + `(\s|$)`).MatchString(out)
}

// interruptOnceSaid runs holdfast, interrupts it as Ctrl-C does once its progress says
// said, and checks that it then ends with exit code 3.
func interruptOnceSaid(t *testing.T, f *framework.Framework, said string, args ...string) *run {
	t.Helper()
	ctx, interrupt := context.WithCancel(f.Ctx)
	defer interrupt()
	r := holdfast(ctx, f, args...)
	f.Eventually(3*time.Minute, "holdfast to say "+said, func(context.Context) (bool, error) {
		return strings.Contains(r.errOut.String(), said), nil
	})
	interrupt()
	r.wait(t, time.Minute)
	t.Logf("exit %d:\n%s", r.code, r.output())
	if r.code != cli.ExitIncomplete {
		t.Errorf("exit code %d, want %d", r.code, cli.ExitIncomplete)
	}
	return r
}

// uncordonAtEnd gives the nodes back when the test ends, whatever the drains left.
func uncordonAtEnd(f *framework.Framework, nodes ...string) {
	f.T.Cleanup(func() {
		for _, n := range nodes {
			f.Uncordon(n)
		}
	})
}

// An upgrade loop starts a drain on every node at the same moment. With holdfast each
// drain waits for the one slot, so the nodes are drained one at a time, and no budget
// ever goes below its floor. Three extra nodes outside the loop stand for the surge
// capacity an upgrade adds, so that the evicted pods have somewhere to go.
func TestEveryNodeAtOnce(t *testing.T) {
	f := framework.New(t)
	platform := f.Deployment("platform", 3)
	framework.HostnameAntiAffinity(platform)
	f.Create(platform)
	platformPDB := f.PDB("platform-pdb", "platform", 0)
	platformPDB.Spec.MaxUnavailable = nil
	platformPDB.Spec.MinAvailable = ptr.To(intstr.FromInt32(2)) // one down at a time
	f.Create(platformPDB)
	api := f.Deployment("api", 4)
	f.Create(api)
	f.Create(f.PDB("api-pdb", "api", 1))
	f.WaitReady(platform)
	f.WaitReady(api)
	f.WaitBudget("platform-pdb", 1)
	f.WaitBudget("api-pdb", 1)
	for i, zone := range []string{"zone-a", "zone-b", "zone-c"} {
		f.AddNode(fmt.Sprintf("surge-%d", i+1), zone, nil)
	}
	loop := f.Nodes
	uncordonAtEnd(f, loop...)

	budgets := f.WatchBudgets(200 * time.Millisecond)
	tl := watchTimeline(t, f, loop)
	start := time.Now()
	var runs []*run
	for _, n := range loop {
		runs = append(runs, holdfast(f.Ctx, f, "drain", n, "--slot-namespace", f.Namespace, "--timeout", "4m"))
	}
	for i, r := range runs {
		r.wait(t, 5*time.Minute)
		if r.code != cli.ExitOK {
			t.Errorf("holdfast drain %s exited %d:\n%s", loop[i], r.code, r.output())
		}
	}
	samples, violations := budgets.Stop()
	t.Logf("%d nodes drained in %s; %d budget samples: %s", len(loop), time.Since(start).Round(time.Second), samples, budgets.Lowest())
	if len(violations) > 0 {
		t.Errorf("budgets went below their floor:\n%s", strings.Join(violations, "\n"))
	}
	tl.check(t, 1)
	for _, n := range loop {
		if empty, err := f.NodeDrained(f.Ctx, n); err != nil || !empty {
			t.Errorf("node %s still runs pods of the test (err %v)", n, err)
		}
	}
	if out := runs[0].output(); !strings.Contains(out, "took drain slot") {
		t.Errorf("the first drain's output does not show its slot:\n%s", out)
	}
}

// A budget of minAvailable 1 over one replica never allows an eviction. kubectl drain
// retries until its timeout (forever by default); holdfast stops at once, names the
// budget and says what to change, and leaves the node cordoned.
func TestSingleReplicaBudgetStopsWithItsName(t *testing.T) {
	f := framework.New(t)
	d := f.Deployment("single", 1)
	f.Create(d)
	pdb := f.PDB("single-pdb", "single", 0)
	pdb.Spec.MaxUnavailable = nil
	pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(1))
	f.Create(pdb)
	f.WaitReady(d)
	f.WaitBudget("single-pdb", 0)
	node := podsOf(t, f, d)[0].Spec.NodeName
	uncordonAtEnd(f, node)

	start := time.Now()
	r := holdfast(f.Ctx, f, "drain", node, "--slot-namespace", f.Namespace, "--timeout", "2m")
	r.wait(t, 3*time.Minute)
	took := time.Since(start)
	out := r.output()
	t.Logf("exit %d after %s:\n%s", r.code, took.Round(time.Millisecond), out)
	if r.code != cli.ExitIncomplete {
		t.Errorf("exit code %d, want %d", r.code, cli.ExitIncomplete)
	}
	if took > 30*time.Second {
		t.Errorf("took %s to give up on a budget that never allows an eviction; want well under the 2m timeout", took)
	}
	for _, want := range []string{
		"PodDisruptionBudget " + f.Namespace + "/single-pdb (minAvailable 1) wants 1 healthy of 1 expected pods, so it never allows an eviction",
		"kubectl uncordon " + node,
		"run the same command again",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output does not say %q", want)
		}
	}
	n, err := f.Clientset.CoreV1().Nodes().Get(f.Ctx, node, metav1.GetOptions{})
	if err != nil || !n.Spec.Unschedulable {
		t.Errorf("node %s should stay cordoned (err %v)", node, err)
	}
	assertSlotsFree(t, f)
}

// A refused eviction is retried, and the budget that refuses it is named while it does:
// three replicas on a pool of four nodes with hostname anti-affinity; one replica is
// evicted while the two free nodes are cordoned, so its replacement stays Pending and
// the budget has nothing to give. A first drain gives up at --timeout, leaves its node
// cordoned and releases its slot; the same command run again is refused too, until the
// two nodes come back, and then finishes.
func TestRefusedRetriedTimedOutAndResumed(t *testing.T) {
	f := framework.New(t)
	var pool []string
	for i, zone := range []string{"zone-a", "zone-b", "zone-c", "zone-a"} {
		name := fmt.Sprintf("pool-%d", i+1)
		f.AddNode(name, zone, map[string]string{"pool": "web"})
		pool = append(pool, name)
	}
	d := f.Deployment("web", 3)
	framework.HostnameAntiAffinity(d)
	d.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "web"}
	f.Create(d)
	f.Create(f.PDB("web-pdb", "web", 1))
	f.WaitReady(d)
	f.WaitBudget("web-pdb", 1)
	pods := podsOf(t, f, d)
	held, target := pods[0], pods[1]
	uncordonAtEnd(f, target.Spec.NodeName)

	spare := ""
	for _, n := range pool {
		if !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Spec.NodeName == n }) {
			spare = n
		}
	}
	// The replacement of held's pod can go nowhere while these two are cordoned.
	f.Cordon(spare)
	f.Cordon(held.Spec.NodeName)
	if err := f.Evict(f.Ctx, &held); err != nil {
		t.Fatalf("evicting %s: %v", held.Name, err)
	}
	f.WaitBudget("web-pdb", 0)

	// The replacement fits nowhere while the two nodes are cordoned: without
	// --evict-unplaceable the pod would be kept rather than refused.
	args := []string{"drain", target.Spec.NodeName, "--slot-namespace", f.Namespace, "--evict-unplaceable"}
	first := holdfast(f.Ctx, f, append(args, "--timeout", "6s")...)
	first.wait(t, time.Minute)
	out := first.output()
	t.Logf("first run, exit %d:\n%s", first.code, out)
	blockedBy := "blocked by PodDisruptionBudget " + f.Namespace + "/web-pdb (maxUnavailable 1): 2 of 3 healthy, needs 2, allows 0; retrying"
	for _, want := range []string{blockedBy, "Stopped by --timeout", "kubectl uncordon " + target.Spec.NodeName, "run the same command again"} {
		if !strings.Contains(out, want) {
			t.Errorf("the first run does not say %q", want)
		}
	}
	if first.code != cli.ExitIncomplete {
		t.Errorf("first run exit code %d, want %d", first.code, cli.ExitIncomplete)
	}
	// Refused every time, the pod is still there, and the node is not reported drained.
	if still, err := f.Clientset.CoreV1().Pods(f.Namespace).Get(f.Ctx, target.Name, metav1.GetOptions{}); err != nil || still.UID != target.UID || still.DeletionTimestamp != nil {
		t.Errorf("pod %s: %v; want it still running on %s", target.Name, err, target.Spec.NodeName)
	}
	if !hasRow(first.out.String(), target.Spec.NodeName, "NOT drained, cordoned") {
		t.Errorf("the first run does not report %s not drained", target.Spec.NodeName)
	}
	assertSlotsFree(t, f)

	second := holdfast(f.Ctx, f, args...)
	f.Eventually(time.Minute, "the second run to be refused", func(context.Context) (bool, error) {
		return strings.Contains(second.errOut.String(), blockedBy), nil
	})
	f.Uncordon(held.Spec.NodeName)
	f.Uncordon(spare)
	second.wait(t, 2*time.Minute)
	t.Logf("second run, exit %d:\n%s", second.code, second.output())
	if second.code != cli.ExitOK {
		t.Errorf("second run exit code %d, want 0", second.code)
	}
	if !strings.Contains(second.output(), "already cordoned") {
		t.Errorf("the second run does not say it found the node already cordoned")
	}
	if empty, err := f.NodeDrained(f.Ctx, target.Spec.NodeName); err != nil || !empty {
		t.Errorf("node %s still runs pods of the test (err %v)", target.Spec.NodeName, err)
	}
}

// timeline records, from watches of the cluster rather than from the drains' own words,
// when each node was cordoned, when its last pod left, and who took the drain slot.
type timeline struct {
	f        *framework.Framework
	nodes    []string
	mu       sync.Mutex
	cordoned map[string]mark
	lastGone map[string]mark
	holders  []string
	bad      error // a resourceVersion that is not a revision
	// on holds the pods seen on each node and not yet seen deleted, and leases the
	// resourceVersion of each slot Lease last seen: what settle compares with the cluster.
	on     map[string]map[types.UID]bool
	leases map[string]string
}

// mark is when a change happened: the etcd revision that wrote it (its resourceVersion:
// the testbed has one etcd), which orders the changes of different watches as they were
// made, whereas the goroutine reading the three watches may read them late and in
// another order; and the time it was seen, for messages.
type mark struct {
	rev  uint64
	seen time.Time
}

// markOf marks the change that made obj as it is.
func (tl *timeline) markOf(obj metav1.Object) mark {
	rev, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	if err != nil && tl.bad == nil {
		tl.bad = fmt.Errorf("%s: resourceVersion %q: %w", obj.GetName(), obj.GetResourceVersion(), err)
	}
	return mark{rev: rev, seen: time.Now()}
}

func watchTimeline(t *testing.T, f *framework.Framework, nodes []string) *timeline {
	tl := &timeline{f: f, nodes: nodes, cordoned: map[string]mark{}, lastGone: map[string]mark{},
		on: map[string]map[types.UID]bool{}, leases: map[string]string{}}
	for _, n := range nodes {
		tl.on[n] = map[types.UID]bool{}
	}
	nodeWatch, err := f.Clientset.CoreV1().Nodes().Watch(f.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Started without a resourceVersion, the pod watch first adds the pods already there.
	podWatch, err := f.Clientset.CoreV1().Pods(f.Namespace).Watch(f.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leaseWatch, err := f.Clientset.CoordinationV1().Leases(f.Namespace).Watch(f.Ctx, metav1.ListOptions{LabelSelector: drain.SlotLabel})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nodeWatch.Stop(); podWatch.Stop(); leaseWatch.Stop() })
	go func() {
		for {
			select {
			case e, ok := <-nodeWatch.ResultChan():
				if !ok {
					return
				}
				if n, isNode := e.Object.(*corev1.Node); isNode && n.Spec.Unschedulable && slices.Contains(nodes, n.Name) {
					tl.mu.Lock()
					if _, seen := tl.cordoned[n.Name]; !seen {
						tl.cordoned[n.Name] = tl.markOf(n)
					}
					tl.mu.Unlock()
				}
			case e, ok := <-podWatch.ResultChan():
				if !ok {
					return
				}
				if p, isPod := e.Object.(*corev1.Pod); isPod && slices.Contains(nodes, p.Spec.NodeName) {
					tl.mu.Lock()
					if e.Type == watch.Deleted {
						delete(tl.on[p.Spec.NodeName], p.UID)
						tl.lastGone[p.Spec.NodeName] = tl.markOf(p)
					} else {
						tl.on[p.Spec.NodeName][p.UID] = true
					}
					tl.mu.Unlock()
				}
			case e, ok := <-leaseWatch.ResultChan():
				if !ok {
					return
				}
				if l, isLease := e.Object.(*coordinationv1.Lease); isLease {
					h := ptr.Deref(l.Spec.HolderIdentity, "")
					tl.mu.Lock()
					tl.leases[l.Name] = l.ResourceVersion
					if h != "" && (len(tl.holders) == 0 || tl.holders[len(tl.holders)-1] != h) {
						tl.holders = append(tl.holders, h)
					}
					tl.mu.Unlock()
				}
			}
		}
	}()
	return tl
}

// settle waits until the watches have delivered the cluster as it is now: every slot
// Lease at its current version, every cordoned node seen cordoned, and the pods on the
// nodes seen come and go. Read before then, the last drain's events may still be on
// their way: a drain of an empty node takes its slot, cordons and ends within
// milliseconds.
func (tl *timeline) settle() {
	f := tl.f
	f.T.Helper()
	f.Eventually(time.Minute, "the timeline's watches to catch up with the cluster", func(ctx context.Context) (bool, error) {
		leases, err := f.Clientset.CoordinationV1().Leases(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: drain.SlotLabel})
		if err != nil {
			return false, err
		}
		pods, err := f.Pods(ctx, "")
		if err != nil {
			return false, err
		}
		on := map[string]map[types.UID]bool{}
		for _, n := range tl.nodes {
			node, err := f.Clientset.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			tl.mu.Lock()
			_, seen := tl.cordoned[n]
			tl.mu.Unlock()
			if node.Spec.Unschedulable && !seen {
				return false, nil
			}
			on[n] = map[types.UID]bool{}
		}
		for _, p := range pods {
			if on[p.Spec.NodeName] != nil {
				on[p.Spec.NodeName][p.UID] = true
			}
		}
		tl.mu.Lock()
		defer tl.mu.Unlock()
		for _, l := range leases.Items {
			if tl.leases[l.Name] != l.ResourceVersion {
				return false, nil
			}
		}
		return maps.EqualFunc(on, tl.on, maps.Equal), nil
	})
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.bad != nil {
		f.T.Fatal(tl.bad)
	}
}

// check asserts that at most atOnce nodes were being drained at any moment (a node is
// being drained from when it is cordoned until its last pod leaves) and that each node's
// drain held a slot.
func (tl *timeline) check(t *testing.T, atOnce int) {
	t.Helper()
	tl.settle()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	nodes := tl.nodes
	end := func(n string) uint64 {
		return max(tl.lastGone[n].rev, tl.cordoned[n].rev)
	}
	order := slices.Clone(nodes)
	slices.SortFunc(order, func(a, b string) int { return cmp.Compare(tl.cordoned[a].rev, tl.cordoned[b].rev) })
	for _, n := range order {
		start, ok := tl.cordoned[n]
		if !ok {
			t.Errorf("node %s was never cordoned", n)
			continue
		}
		var during []string
		for _, m := range order {
			if m != n && tl.cordoned[m].rev <= start.rev && end(m) > start.rev {
				during = append(during, m)
			}
		}
		if len(during)+1 > atOnce {
			t.Errorf("node %s was cordoned at %s while %v were still being drained: more than %d at once",
				n, start.seen.Format(time.TimeOnly+".000"), during, atOnce)
		}
	}
	t.Logf("drain order %v; slot holders in turn %v", order, tl.holders)
	holders := map[string]bool{}
	for _, h := range tl.holders {
		holders[h] = true
	}
	if len(holders) != len(nodes) {
		t.Errorf("%d drains held a slot, want one per node (%d): %v", len(holders), len(nodes), tl.holders)
	}
}

// One run given several nodes drains up to --max-concurrent of them at once, keeps every
// budget above its floor, and leaves no node with the queued taint.
func TestSeveralNodesInOneRun(t *testing.T) {
	f := framework.New(t)
	for _, name := range []string{"web", "api"} {
		d := f.Deployment(name, 3)
		framework.HostnameAntiAffinity(d)
		f.Create(d)
		f.Create(f.PDB(name+"-pdb", name, 1))
		f.WaitReady(d)
		f.WaitBudget(name+"-pdb", 1)
	}
	nodes := f.Nodes[:3]
	uncordonAtEnd(f, nodes...)
	budgets := f.WatchBudgets(200 * time.Millisecond)
	tl := watchTimeline(t, f, nodes)

	r := holdfast(f.Ctx, f, append([]string{"drain", "--max-concurrent", "2", "--slot-namespace", f.Namespace, "--timeout", "3m"}, nodes...)...)
	r.wait(t, 4*time.Minute)
	t.Logf("exit %d:\n%s", r.code, r.output())
	if r.code != cli.ExitOK {
		t.Errorf("exit code %d, want 0", r.code)
	}
	samples, violations := budgets.Stop()
	t.Logf("%d budget samples: %s", samples, budgets.Lowest())
	if len(violations) > 0 {
		t.Errorf("budgets went below their floor:\n%s", strings.Join(violations, "\n"))
	}
	tl.check(t, 2)
	for _, n := range f.Nodes {
		node, err := f.Clientset.CoreV1().Nodes().Get(f.Ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(node.Spec.Taints, func(taint corev1.Taint) bool { return taint.Key == drain.QueuedTaintKey }) {
			t.Errorf("node %s still has the queued taint", n)
		}
	}
}

// --wave-by-wave drains the waves --dry-run printed, one after the other: no node of a
// wave is cordoned before every node of the wave before it has lost its last pod.
func TestWaveByWaveFollowsTheDryRun(t *testing.T) {
	f := framework.New(t)
	for _, name := range []string{"web", "api"} {
		d := f.Deployment(name, 3)
		framework.HostnameAntiAffinity(d)
		f.Create(d)
		f.Create(f.PDB(name+"-pdb", name, 1))
		f.WaitReady(d)
		f.WaitBudget(name+"-pdb", 1)
	}
	// Three of six nodes: the other three keep room for three replicas that refuse to
	// share a node.
	nodes := f.Nodes[:3]
	uncordonAtEnd(f, nodes...)
	args := append([]string{"drain", "--max-concurrent", "2", "--slot-namespace", f.Namespace, "--timeout", "3m"}, nodes...)

	dry := holdfast(f.Ctx, f, append(args, "--dry-run")...)
	dry.wait(t, time.Minute)
	t.Logf("dry run, exit %d:\n%s", dry.code, dry.output())
	var waves [][]string
	for _, line := range strings.Split(dry.out.String(), "\n") {
		if _, rest, ok := strings.Cut(line, "Wave "); ok && !strings.HasPrefix(line, " ") {
			_, names, _ := strings.Cut(rest, ": ")
			waves = append(waves, strings.Split(names, ", "))
		}
	}
	if dry.code != cli.ExitOK || len(waves) == 0 {
		t.Fatalf("the dry run exited %d with waves %v; want 0 and a plan", dry.code, waves)
	}

	tl := watchTimeline(t, f, nodes)
	r := holdfast(f.Ctx, f, append(args, "--wave-by-wave")...)
	r.wait(t, 4*time.Minute)
	t.Logf("exit %d:\n%s", r.code, r.output())
	if r.code != cli.ExitOK {
		t.Fatalf("exit code %d, want 0", r.code)
	}
	tl.settle()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for i := 1; i < len(waves); i++ {
		for _, prev := range waves[i-1] {
			for _, n := range waves[i] {
				if end, ok := tl.lastGone[prev]; ok && tl.cordoned[n].rev < end.rev {
					t.Errorf("node %s of wave %d was cordoned before node %s of wave %d lost its last pod", n, i+1, prev, i)
				}
			}
		}
	}
	t.Logf("waves %v", waves)
}

// kubectl's rules and the Eviction API's 500: a pod with no controller needs --force, a
// pod with emptyDir data needs --delete-emptydir-data; as with kubectl, either stops the
// node before any eviction, and the drain exits 3. With the flags, a pod under two
// budgets is stopped with both budgets named.
func TestPodsThatNeedAFlagOrABudgetFix(t *testing.T) {
	f := framework.New(t)
	node := f.AddNode("rules-1", "zone-a", map[string]string{"pool": "rules"})
	f.AddNode("rules-2", "zone-b", map[string]string{"pool": "rules"})
	uncordonAtEnd(f, node.Name)
	onNode := corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: f.Namespace, Labels: map[string]string{"app": "bare"}}, Spec: onNode}
	f.Create(bare)
	cache := f.Deployment("cache", 1)
	cache.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node.Name}
	cache.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	f.Create(cache)
	twice := f.Deployment("twice", 2)
	twice.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "rules"}
	framework.HostnameAntiAffinity(twice)
	f.Create(twice)
	f.Create(f.PDB("twice-a", "twice", 1))
	f.Create(f.PDB("twice-b", "twice", 1))
	f.WaitReady(cache)
	f.WaitReady(twice)

	r := holdfast(f.Ctx, f, "drain", node.Name, "--slot-namespace", f.Namespace, "--timeout", "1m")
	r.wait(t, 2*time.Minute)
	out := r.output()
	t.Logf("exit %d:\n%s", r.code, out)
	if r.code != cli.ExitIncomplete {
		t.Errorf("exit code %d, want %d", r.code, cli.ExitIncomplete)
	}
	for _, want := range []string{
		f.Namespace + "/bare: no controller would recreate the pod (use --force)",
		`emptyDir volume "scratch" would lose its data (use --delete-emptydir-data)`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output does not say %q", want)
		}
	}
	if strings.Contains(out, "evicting") {
		t.Errorf("a refused node had a pod evicted")
	}
	if _, err := f.Clientset.CoreV1().Pods(f.Namespace).Get(f.Ctx, "bare", metav1.GetOptions{}); err != nil {
		t.Errorf("pod bare is gone without --force: %v", err)
	}

	// With the flags, the bare pod and the emptyDir pod go; the pod under two budgets
	// still cannot, whatever the flags.
	// The cache pod is pinned to the node: its replacement fits nowhere.
	r = holdfast(f.Ctx, f, "drain", node.Name, "--slot-namespace", f.Namespace, "--timeout", "1m", "--force", "--delete-emptydir-data", "--evict-unplaceable")
	r.wait(t, 2*time.Minute)
	out = r.output()
	t.Logf("with the flags, exit %d:\n%s", r.code, out)
	if !strings.Contains(out, f.Namespace+"/bare: evicted") || !strings.Contains(out, "covered by 2 PodDisruptionBudgets") {
		t.Errorf("with --force and --delete-emptydir-data the bare pod should be evicted and the doubly-covered one stopped")
	}
	if r.code != cli.ExitIncomplete {
		t.Errorf("exit code %d, want %d", r.code, cli.ExitIncomplete)
	}
}

// A drain that died keeps its slot only until the Lease expires, timed on the waiting
// drain's own clock from when it saw the Lease last change: the dead holder's renewTime,
// an hour ahead (its clock was fast), does not keep the slot, and a slot of 10 s is taken
// about 10 s after the waiting drain first sees it. The wait names the holder.
func TestDeadDrainsSlotExpires(t *testing.T) {
	f := framework.New(t)
	dead := "crashed-host/4242/node-x"
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: drain.SlotName(0), Namespace: f.Namespace, Labels: map[string]string{drain.SlotLabel: "true"}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(dead),
			LeaseDurationSeconds: ptr.To(int32(10)),
			RenewTime:            &metav1.MicroTime{Time: time.Now().Add(time.Hour)},
		},
	}
	f.Create(lease)
	node := f.Nodes[len(f.Nodes)-1]
	uncordonAtEnd(f, node)

	start := time.Now()
	r := holdfast(f.Ctx, f, "drain", node, "--slot-namespace", f.Namespace, "--timeout", "1m")
	r.wait(t, 2*time.Minute)
	took := time.Since(start)
	out := r.output()
	t.Logf("exit %d after %s:\n%s", r.code, took.Round(100*time.Millisecond), out)
	if r.code != cli.ExitOK {
		t.Errorf("exit code %d, want 0", r.code)
	}
	if !strings.Contains(out, "waiting for a drain slot: all 1 drain slot(s) are taken by "+dead) {
		t.Errorf("the wait does not name the dead holder")
	}
	if !strings.Contains(out, "took drain slot holdfast-drain-slot-0 (taken over from "+dead+", whose Lease expired)") {
		t.Errorf("taking the slot does not say it was taken over from the dead holder")
	}
	if took < 9*time.Second || took > 40*time.Second {
		t.Errorf("took %s; want the slot taken when it expires, about 10 s in", took)
	}
}

// Ctrl-C (here: the command's context cancelled, as the signal handler does) stops a
// blocked drain: the node stays cordoned, the slot is released, and the output says so.
// The budget is short for now, not forever: three replicas that refuse to share a node,
// on a pool of two nodes, leave one Pending.
func TestInterruptedDrainReleasesItsSlot(t *testing.T) {
	f := framework.New(t)
	f.AddNode("short-1", "zone-a", map[string]string{"pool": "short"})
	f.AddNode("short-2", "zone-b", map[string]string{"pool": "short"})
	d := f.Deployment("short", 3)
	d.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "short"}
	framework.HostnameAntiAffinity(d)
	f.Create(d)
	f.Create(f.PDB("short-pdb", "short", 1))
	f.WaitBudget("short-pdb", 0)
	node := "short-1"
	uncordonAtEnd(f, node)

	r := interruptOnceSaid(t, f, "blocked by PodDisruptionBudget "+f.Namespace+"/short-pdb",
		"drain", node, "--slot-namespace", f.Namespace, "--evict-unplaceable")
	out := r.output()
	for _, want := range []string{"Interrupted; nothing more is evicted and the drain slots are released.", "kubectl uncordon " + node} {
		if !strings.Contains(out, want) {
			t.Errorf("the output does not say %q", want)
		}
	}
	assertSlotsFree(t, f)
}

func podsOf(t *testing.T, f *framework.Framework, d *appsv1.Deployment) []corev1.Pod {
	t.Helper()
	pods, err := f.Pods(f.Ctx, framework.SelectorOf(d))
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) == 0 {
		t.Fatalf("no pod of %s", d.Name)
	}
	return pods
}

// assertSlotsFree checks that no drain slot of the test is held after the drains ended.
func assertSlotsFree(t *testing.T, f *framework.Framework) {
	t.Helper()
	leases, err := f.Clientset.CoordinationV1().Leases(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: drain.SlotLabel})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != "" {
			t.Errorf("slot %s is still held by %s", l.Name, h)
		}
	}
}

// The drainer roles holdfast ships are all a drain needs: a ServiceAccount bound only to
// the ClusterRole holdfast-drainer and to the Role holdfast-drainer (here in the test's
// namespace, which serves as the slot namespace) drains a node with a budget, paced, and
// is refused what the roles do not grant.
func TestDrainAsTheDrainerRole(t *testing.T) {
	f := framework.New(t)
	d, pods := spreadWeb(t, f)
	node := pods[0].Spec.NodeName
	uncordonAtEnd(f, node)

	kubeconfig, as := drainerKubeconfig(t, f)
	r := holdfastAs(f.Ctx, kubeconfig, "drain", node, "--slot-namespace", f.Namespace, "--timeout", "2m")
	r.wait(t, 3*time.Minute)
	t.Logf("exit %d:\n%s", r.code, r.output())
	if r.code != cli.ExitOK {
		t.Errorf("exit code %d, want 0", r.code)
	}
	// The node's conditions and Events were written too: a write refused would warn.
	if strings.Contains(r.output(), "Warning:") {
		t.Errorf("the drain warned: the roles lack something it writes")
	}
	// And the node Leases were read (Karpenter's kinds, not installed here, quietly): a
	// list refused would be noted.
	if strings.Contains(r.output(), "note:") {
		t.Errorf("the drain noted a read it was refused: the roles lack something it reads")
	}
	if empty, err := f.NodeDrained(f.Ctx, node); err != nil || !empty {
		t.Errorf("node %s still runs pods of the test (err %v)", node, err)
	}
	assertSlotsFree(t, f)

	// No more than that: the drainer cannot delete a pod, nor write Leases elsewhere.
	pods = podsOf(t, f, d)
	if err := as.CoreV1().Pods(f.Namespace).Delete(f.Ctx, pods[0].Name, metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the drainer deleting a pod: %v, want Forbidden", err)
	}
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "not-a-slot"}}
	if _, err := as.CoordinationV1().Leases(metav1.NamespaceSystem).Create(f.Ctx, l, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the drainer creating a Lease in kube-system: %v, want Forbidden", err)
	}
}

// Issue 30 item 12: the node's drain conditions and Events only inform, so the grants
// for them are optional: without them, two nodes drain all the same (cordon and the
// queued mark are patches of the node), and the drain says what it could not write. So
// are the lists of node Leases and Karpenter's kinds: the drain notes the Leases it could
// not read, and says nothing of Karpenter, which is not installed here.
func TestDrainWithoutTheOptionalGrants(t *testing.T) {
	f := framework.New(t)
	// Nodes of the test's own, which no other test's pods (nor their budgets) hold up:
	// three for the replicas, two to take the drained nodes' pods.
	for i, zone := range []string{"zone-a", "zone-b", "zone-c", "zone-a", "zone-b"} {
		f.AddNode(fmt.Sprintf("optional-%d", i+1), zone, map[string]string{"pool": "optional"})
	}
	_, pods := spreadWeb(t, f, func(d *appsv1.Deployment) { d.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "optional"} })
	nodes := []string{pods[0].Spec.NodeName, pods[1].Spec.NodeName}
	for _, n := range nodes {
		uncordonAtEnd(f, n)
	}

	kubeconfig, _ := drainerKubeconfig(t, f, "nodes/status", "events", "leases", "nodeclaims", "nodepools")
	r := holdfastAs(f.Ctx, kubeconfig, append([]string{"drain"}, append(nodes, "--slot-namespace", f.Namespace, "--timeout", "2m")...)...)
	r.wait(t, 3*time.Minute)
	t.Logf("exit %d:\n%s", r.code, r.output())
	if r.code != cli.ExitOK {
		t.Errorf("exit code %d, want 0", r.code)
	}
	if !strings.Contains(r.output(), "Warning:") {
		t.Errorf("the drain did not warn that it could not write the node's conditions and Events")
	}
	if !strings.Contains(r.output(), "note: not allowed to list leases in kube-node-lease") || strings.Contains(r.output(), "Karpenter") {
		t.Errorf("the drain did not note the node Leases alone among the lists it was refused")
	}
	for _, n := range nodes {
		if empty, err := f.NodeDrained(f.Ctx, n); err != nil || !empty {
			t.Errorf("node %s still runs pods of the test (err %v)", n, err)
		}
	}
	assertSlotsFree(t, f)
}

// spreadWeb creates three replicas of web, one per node, under a budget of
// minAvailable 1, changed by mods, and returns the Deployment and its pods once Ready.
func spreadWeb(t *testing.T, f *framework.Framework, mods ...func(*appsv1.Deployment)) (*appsv1.Deployment, []corev1.Pod) {
	t.Helper()
	d := f.Deployment("web", 3)
	framework.HostnameAntiAffinity(d)
	for _, mod := range mods {
		mod(d)
	}
	f.Create(d)
	f.Create(f.PDB("web-pdb", "web", 1))
	f.WaitReady(d)
	f.WaitBudget("web-pdb", 1)
	return d, podsOf(t, f, d)
}

// drainerKubeconfig creates a ServiceAccount bound to the drainer roles of config/rbac
// (the Role in the test's namespace), without the rules for the resources of drop, and
// returns a kubeconfig with a token for it, and a client with those credentials.
func drainerKubeconfig(t *testing.T, f *framework.Framework, drop ...string) (string, kubernetes.Interface) {
	t.Helper()
	objs, err := config.Objects()
	if err != nil {
		t.Fatal(err)
	}
	var clusterRole rbacv1.ClusterRole
	var role rbacv1.Role
	for _, u := range objs {
		var into any
		switch {
		case u.GetKind() == "ClusterRole" && u.GetName() == "holdfast-drainer":
			into = &clusterRole
		case u.GetKind() == "Role" && u.GetName() == "holdfast-drainer":
			into = &role
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
			t.Fatal(err)
		}
	}
	if clusterRole.Name == "" || role.Name == "" {
		t.Fatal("config/rbac has no ClusterRole and Role holdfast-drainer")
	}
	clusterRole.Rules = slices.DeleteFunc(clusterRole.Rules, func(r rbacv1.PolicyRule) bool {
		return len(drop) > 0 && !slices.ContainsFunc(r.Resources, func(res string) bool { return !slices.Contains(drop, res) })
	})
	// Cluster-scoped objects are named after the test's namespace, so that tests and
	// packages do not share them, and deleted with it.
	clusterRole.ObjectMeta = metav1.ObjectMeta{Name: f.Namespace + "-drainer"}
	role.ObjectMeta = metav1.ObjectMeta{Name: "holdfast-drainer", Namespace: f.Namespace}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "drainer", Namespace: f.Namespace}}
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: f.Namespace}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: clusterRole.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole.Name},
		Subjects:   []rbacv1.Subject{subject},
	}
	roleBinding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "holdfast-drainer", Namespace: f.Namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{subject},
	}
	for _, obj := range []client.Object{&clusterRole, binding} {
		f.Create(obj)
		t.Cleanup(func() { _ = f.Client.Delete(context.Background(), obj) })
	}
	f.Create(&role)
	f.Create(roleBinding)
	f.Create(sa)

	token, err := f.Clientset.CoreV1().ServiceAccounts(f.Namespace).CreateToken(f.Ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for ServiceAccount %s: %v", sa.Name, err)
	}
	admin, err := clientcmd.LoadFromFile(f.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg := admin.DeepCopy()
	for _, auth := range cfg.AuthInfos {
		*auth = clientcmdapi.AuthInfo{Token: token.Status.Token}
	}
	path := filepath.Join(t.TempDir(), "drainer.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	// RBAC is read from a cache: wait until the binding is in force.
	cfgREST, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	as, err := kubernetes.NewForConfig(cfgREST)
	if err != nil {
		t.Fatal(err)
	}
	f.Eventually(30*time.Second, "the drainer's bindings in force", func(ctx context.Context) (bool, error) {
		if _, err := as.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return false, err
		}
		_, err := as.CoordinationV1().Leases(f.Namespace).List(ctx, metav1.ListOptions{})
		return err == nil, err
	})
	return path, as
}

// Draining every node of a pool at once: the first nodes' pods move to the nodes not
// yet drained, and the last node's pods then fit nowhere. They are not evicted into
// Pending, which would spend their budget for nothing; the drain says why and waits for
// room, and the node is reported not drained.
func TestLastNodeKeepsPodsThatFitNowhere(t *testing.T) {
	f := framework.New(t)
	var pool []string
	for i, zone := range []string{"zone-a", "zone-b", "zone-c"} {
		name := fmt.Sprintf("last-%d", i+1)
		f.AddNode(name, zone, map[string]string{"pool": "last"})
		pool = append(pool, name)
	}
	uncordonAtEnd(f, pool...)
	d := f.Deployment("web", 3)
	d.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "last"}
	f.Create(d)
	f.Create(f.PDB("web-pdb", "web", 1))
	f.WaitReady(d)
	f.WaitBudget("web-pdb", 1)

	r := interruptOnceSaid(t, f, "no room: its replacement fits on no other node",
		"drain", "--selector", "pool=last", "--slot-namespace", f.Namespace, "--timeout", "4m")
	out := r.output()
	if !strings.Contains(out, "kept: its replacement fits on no other node") {
		t.Errorf("the summary does not say why the pods were kept")
	}
	// Every pod of web still runs, Ready and not evicted, on the one node left.
	pods := podsOf(t, f, d)
	nodes := map[string]bool{}
	for _, p := range pods {
		nodes[p.Spec.NodeName] = true
		if p.DeletionTimestamp != nil || !framework.PodReady(&p) {
			t.Errorf("pod %s on %s is evicted or not Ready", p.Name, p.Spec.NodeName)
		}
	}
	if len(pods) != 3 || len(nodes) != 1 {
		t.Errorf("%d pods of web on nodes %v; want 3, all on the last node", len(pods), nodes)
	}
	for n := range nodes {
		if !hasRow(out, n, "NOT drained, cordoned") {
			t.Errorf("the summary does not report %s not drained", n)
		}
	}
}

// --pod-selector narrows what the drain evicts, not what it checks: a selected pod whose
// replacement fits nowhere (web, pinned to its node) is kept, its budget unspent, as it
// is without the selector. The pod the selector leaves out (a bare one, which kubectl
// never lists) neither blocks the node nor hides that the selected pod has no room.
func TestPodSelectorKeepsPodsThatFitNowhere(t *testing.T) {
	f := framework.New(t)
	node := f.AddNode("selected-1", "zone-a", nil).Name
	uncordonAtEnd(f, node)
	web := f.Deployment("web", 1)
	web.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	f.Create(web)
	f.WaitReady(web)
	f.Create(barePod(f, "bystander", map[string]string{"app": "other"}, node, nil))
	target := podsOf(t, f, web)[0]

	ctx, interrupt := context.WithCancel(f.Ctx)
	defer interrupt()
	r := holdfast(ctx, f, "drain", node, "--pod-selector", "app=web", "--slot-namespace", f.Namespace, "--timeout", "2m")
	f.Eventually(2*time.Minute, "the drain to keep web's pod, or to end", func(context.Context) (bool, error) {
		select {
		case <-r.done:
			return true, nil
		default:
		}
		return strings.Contains(r.errOut.String(), "no room: its replacement fits on no other node"), nil
	})
	interrupt()
	r.wait(t, time.Minute)
	t.Logf("exit %d:\n%s", r.code, r.output())
	if r.code != cli.ExitIncomplete {
		t.Errorf("exit code %d, want %d", r.code, cli.ExitIncomplete)
	}
	for _, name := range []string{target.Name, "bystander"} {
		if p, err := f.Clientset.CoreV1().Pods(f.Namespace).Get(f.Ctx, name, metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
			t.Errorf("pod %s was evicted (err %v); want it kept on %s", name, err, node)
		}
	}
}
