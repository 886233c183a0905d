package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/holdfast-dev/holdfast/internal/drain"
	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
)

func TestDrainValidate(t *testing.T) {
	tests := map[string]struct {
		o    DrainOptions
		want string
	}{
		"a node":            {o: DrainOptions{Nodes: []string{"node-1"}, MaxConcurrent: 1}},
		"a selector":        {o: DrainOptions{Selector: "pool=blue", MaxConcurrent: 2}},
		"nothing to drain":  {o: DrainOptions{MaxConcurrent: 1}, want: "name at least one node, or give --selector"},
		"bad selector":      {o: DrainOptions{Selector: "pool in (", MaxConcurrent: 1}, want: "--selector"},
		"no slot":           {o: DrainOptions{Nodes: []string{"node-1"}}, want: "--max-concurrent must be from 1 to 1000, not 0"},
		"slots without end": {o: DrainOptions{Nodes: []string{"node-1"}, MaxConcurrent: math.MaxInt}, want: "--max-concurrent must be from 1 to 1000, not 9223372036854775807"},
		"a thousand slots":  {o: DrainOptions{Nodes: []string{"node-1"}, MaxConcurrent: 1000}},
		"negative timeout":  {o: DrainOptions{Nodes: []string{"node-1"}, MaxConcurrent: 1, Timeout: -time.Second}, want: "--timeout must not be negative"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestDrainSummary(t *testing.T) {
	var out bytes.Buffer
	o := &DrainOptions{IOStreams: genericiooptions.IOStreams{Out: &out}}
	res := drain.Result{Nodes: []drain.NodeResult{
		{Node: "node-1", Started: true, Drained: true, Evicted: 3, Skipped: []drain.PodNote{{Pod: "kube-system/fluentd-x", Reason: "managed by DaemonSet fluentd"}}},
		{Node: "node-2", Started: true, Evicted: 1, Err: fmt.Errorf("draining: %w", errTimeout),
			Remaining: []drain.PodNote{{Pod: "shop/web-1", Reason: "refused 4 time(s), last: blocked by PodDisruptionBudget shop/web (maxUnavailable 1): 2 of 3 healthy, needs 2, allows 0"}}},
		{Node: "node-3", Err: errTimeout},
		{Node: "node-4", Started: true, Refused: true, Remaining: []drain.PodNote{{Pod: "ops/debug", Reason: "no controller would recreate the pod (use --force)"}}},
	}}
	if err := o.summary(res, 42*time.Second, fmt.Errorf("stopped: %w", errTimeout)); err != nil {
		t.Fatal(err)
	}
	want := `NODE     RESULT                           EVICTED   SKIPPED   REMAINING
node-1   drained                          3         1         0
node-2   NOT drained, cordoned            1         0         1
node-3   not started                      0         0         0
node-4   NOT drained, refused, cordoned   0         0         1
  node-2 shop/web-1: refused 4 time(s), last: blocked by PodDisruptionBudget shop/web (maxUnavailable 1): 2 of 3 healthy, needs 2, allows 0
  node-3: --timeout reached
  node-4 ops/debug: no controller would recreate the pod (use --force)
Drained 1 of 4 node(s) in 42s.
Stopped by --timeout; nothing more is evicted and the drain slots are released.
To resume, run the same command again: it skips what is done and goes on.
To give the nodes back as they are: holdfast uncordon node-2 node-4 (or kubectl uncordon node-2 node-4 where the holdfast operator runs)
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	// -o wide adds why each node stopped; --no-headers and --sort-by as kubectl's.
	out.Reset()
	o.table = tableFlags{wide: true, noHeaders: true, sortBy: "remaining", columns: summaryColumns}
	if err := o.summary(res, 42*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	table, _, _ := strings.Cut(out.String(), "  node-2 shop/web-1")
	var rows []string
	for line := range strings.Lines(table) {
		rows = append(rows, strings.Join(columnGap.Split(strings.TrimSpace(line), -1), "|"))
	}
	wantWide := []string{
		"node-1|drained|3|1|0",
		"node-3|not started|0|0|0|--timeout reached",
		"node-2|NOT drained, cordoned|1|0|1|draining: --timeout reached",
		"node-4|NOT drained, refused, cordoned|0|0|1",
	}
	if diff := cmp.Diff(wantWide, rows); diff != "" {
		t.Errorf("wide summary (-want +got):\n%s", diff)
	}
}

// Without a terminal, holdfast's log lines go to standard error and kubectl drain's own
// lines to standard output, as kubectl prints them: runbooks grep them.
func TestProgressLogLines(t *testing.T) {
	var log, out bytes.Buffer
	p := newProgress(&log, &out, false, []string{"node-1", "node-2"})
	at := time.Date(2026, 11, 22, 21, 39, 13, 0, time.UTC)
	for _, e := range []drain.Event{
		{Node: "node-1", Kind: drain.SlotTaken, Message: "holdfast-drain-slot-0"},
		{Node: "node-1", Kind: drain.Cordoned, Message: "cordoned"},
		{Node: "node-1", Pod: "shop/web-1", Kind: drain.Evicting},
		{Node: "node-1", Pod: "shop/web-1", Kind: drain.Blocked, Message: "blocked by PodDisruptionBudget shop/web (maxUnavailable 1): 2 of 3 healthy, needs 2, allows 0"},
		{Node: "node-1", Pod: "shop/web-1", Kind: drain.Evicted},
		{Node: "node-1", Pod: "shop/web-2", Kind: drain.WaitingForReplacement, Message: "waiting for the replacement in ReplicaSet shop/web-abc to be Ready (2 of 3 ready)"},
		{Node: "node-1", Kind: drain.NodeDrained, Message: "2 pod(s) evicted"},
		{Node: "node-2", Kind: drain.Cordoned, Message: "already cordoned"},
		{Node: "node-2", Pod: "shop/debug", Kind: drain.PodStopped, Message: "no controller would recreate the pod (use --force)"},
		{Node: "node-2", Kind: drain.NodeRefused, Message: "1 pod(s) need a flag; nothing evicted, the node stays cordoned"},
	} {
		e.Time = at
		p.event(e)
	}
	wantLog := `21:39:13 node-1: took drain slot holdfast-drain-slot-0
21:39:13 node-1: cordoned
21:39:13 node-1 shop/web-1: evicting
21:39:13 node-1 shop/web-1: blocked by PodDisruptionBudget shop/web (maxUnavailable 1): 2 of 3 healthy, needs 2, allows 0; retrying
21:39:13 node-1 shop/web-1: evicted
21:39:13 node-1 shop/web-2: waiting for the replacement in ReplicaSet shop/web-abc to be Ready (2 of 3 ready)
21:39:13 node-1: drained: 2 pod(s) evicted
21:39:13 node-2: already cordoned
21:39:13 node-2 shop/debug: not evicted: no controller would recreate the pod (use --force)
21:39:13 node-2: error: unable to drain node "node-2" due to error: 1 pod(s) need a flag; nothing evicted, the node stays cordoned, continuing command...
`
	if diff := cmp.Diff(wantLog, log.String()); diff != "" {
		t.Errorf("log lines (-want +got):\n%s", diff)
	}
	wantOut := `node/node-1 cordoned
evicting pod shop/web-1
pod/web-1 evicted
node/node-1 drained
node/node-2 already cordoned
`
	if diff := cmp.Diff(wantOut, out.String()); diff != "" {
		t.Errorf("kubectl's lines (-want +got):\n%s", diff)
	}
}

// On a terminal the block is redrawn in place: each redraw first moves up over the
// previous block and erases it. kubectl's lines are written above the block, which is
// drawn again below them, so that the two share one terminal.
func TestProgressLiveRedraws(t *testing.T) {
	var term bytes.Buffer
	p := newProgress(&term, &term, true, []string{"node-1", "node-2"})
	p.event(drain.Event{Node: "node-1", Kind: drain.SlotTaken, Message: "holdfast-drain-slot-0"})
	p.event(drain.Event{Node: "node-1", Kind: drain.Cordoned, Message: "cordoned"})
	p.event(drain.Event{Node: "node-1", Pod: "shop/web-1", Kind: drain.Blocked, Message: "blocked"})
	block := func(node1 string, pods ...string) string {
		return "node-1  " + node1 + "  (0 evicted, 0 skipped)\n" + strings.Join(pods, "") + "node-2  waiting  (0 evicted, 0 skipped)\n"
	}
	want := block("took drain slot holdfast-drain-slot-0") +
		"\x1b[2A\x1b[J" + "node/node-1 cordoned\n" + block("cordoned") +
		"\x1b[2A\x1b[J" + block("cordoned", "    shop/web-1  blocked; retrying\n")
	if diff := cmp.Diff(want, term.String()); diff != "" {
		t.Errorf("live output (-want +got):\n%s", diff)
	}
}

func TestDrainDryRun(t *testing.T) {
	c := snapshottest.New()
	for _, n := range []string{"node-1", "node-2", "node-3"} {
		c.Node(n, "zone-a")
	}
	c.Deployment("shop", "web", map[string]string{"app": "web"}, []string{"node-1", "node-1", "node-2"})
	c.PDB("shop", "web", map[string]string{"app": "web"}, snapshottest.MaxUnavailable(intstr.FromInt32(1)))
	c.Deployment("shop", "db", map[string]string{"app": "db"}, []string{"node-2"})
	c.PDB("shop", "db", map[string]string{"app": "db"}, snapshottest.MinAvailable(intstr.FromInt32(1)))
	c.DaemonSet("kube-system", "fluentd", map[string]string{"app": "fluentd"}, []string{"node-1"})
	c.Pod("shop", "bare", map[string]string{"app": "bare"}, "node-2")
	var out bytes.Buffer
	o := &DrainOptions{
		Nodes: []string{"node-1", "node-2"}, MaxConcurrent: 1, DryRun: DryRunClient, IgnoreDaemonSets: true,
		IOStreams: genericiooptions.IOStreams{Out: &out},
		Clock:     clocktesting.NewFakeClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)),
		cluster:   cluster{kube: fake.NewClientset(objectsOf(c)...)},
	}
	err := o.Run(context.Background())
	var coded *ExitCodeError
	if !errors.As(err, &coded) || coded.Code != ExitIncomplete {
		t.Errorf("dryRun = %v, want exit code %d", err, ExitIncomplete)
	}
	got := out.String()
	for _, want := range []string{
		// Two pods of one budget on one node: the second waits, counted against the first.
		"shop/web-rs-0|evict|budget web allows 1, 0 left in this wave",
		"shop/web-rs-1|wait|budget web has nothing left in this wave",
		"kube-system/fluentd-0|skip|managed by DaemonSet fluentd",
		"Deployment shop/web keeps 2 of 3 ready (2 on these nodes)",
		// The plan's blockers, named.
		"Cannot drain node-2:",
		"PodDisruptionBudget/shop/db (SingleReplicaBudget, until it changes)",
		"Pod/shop/bare (NoController, until it changes)",
		"1 node(s) cannot be drained",
	} {
		if !says(got, want) {
			t.Errorf("the dry run does not say %q:\n%s", want, got)
		}
	}
}

// says reports whether out has the text want, or when want is cells separated by "|",
// a table row with these cells one after the other.
func says(out, want string) bool {
	cells := strings.Split(want, "|")
	if len(cells) == 1 {
		return strings.Contains(out, want)
	}
	for line := range strings.Lines(out) {
		if strings.Contains(strings.Join(columnGap.Split(strings.TrimSpace(line), -1), "|"), want) {
			return true
		}
	}
	return false
}

// columnGap separates the cells of a table row.
var columnGap = regexp.MustCompile(`\s{2,}`)

// The dry run spends the plan's count of each budget (plan.Allowance): a workload with
// two ready pods and no budget keeps one ready, as the plan counts it, so the second pod
// on the node waits rather than going with the first.
func TestDrainDryRunCountsAsThePlan(t *testing.T) {
	c := snapshottest.New()
	for _, n := range []string{"node-1", "node-2"} {
		c.Node(n, "zone-a")
	}
	c.Deployment("shop", "api", map[string]string{"app": "api"}, []string{"node-1", "node-1"})
	code, out, err := runDrain(t, fake.NewClientset(objectsOf(c)...), "node-1", "--dry-run")
	if err != nil || code != ExitOK {
		t.Errorf("exit code %d, error %v, want 0", code, err)
	}
	for _, want := range []string{
		"shop/api-rs-0|evict|no budget covers Deployment api: the drain keeps one of its pods ready, 0 more may go in this wave",
		"shop/api-rs-1|wait|no budget covers Deployment api and the drain keeps one of its pods ready",
		"Deployment shop/api keeps 1 of 2 ready (2 on these nodes)",
	} {
		if !says(out, want) {
			t.Errorf("the dry run does not say %q:\n%s", want, out)
		}
	}
}

// The dry run, and the order of the nodes behind the drain, count only the pods
// --pod-selector names: a node that only the other pods would keep (a bare pod, a budget
// that never allows an eviction) is one the drain empties of what it selects.
func TestDrainDryRunPodSelector(t *testing.T) {
	c := snapshottest.New()
	for _, n := range []string{"node-1", "node-2"} {
		c.Node(n, "zone-a")
	}
	c.Deployment("shop", "web", map[string]string{"app": "web"}, []string{"node-1"})
	c.Deployment("shop", "db", map[string]string{"app": "db"}, []string{"node-1"})
	c.PDB("shop", "db", map[string]string{"app": "db"}, snapshottest.MinAvailable(intstr.FromInt32(1)))
	c.Pod("ops", "debug", map[string]string{"app": "debug"}, "node-1")
	code, out, err := runDrain(t, fake.NewClientset(objectsOf(c)...), "node-1", "--pod-selector=app=web", "--dry-run")
	if err != nil || code != ExitOK {
		t.Errorf("exit code %d, error %v, want 0", code, err)
	}
	for _, want := range []string{"shop/web-rs-0|evict", "shop/db-rs-0|skip", "not matched by --pod-selector app=web", "every node would drain"} {
		if !says(out, want) {
			t.Errorf("the dry run does not say %q:\n%s", want, out)
		}
	}
}

func TestDrainResolveNodes(t *testing.T) {
	node := func(name, pool string) runtime.Object {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": pool}}}
	}
	client := fake.NewClientset(node("a-1", "blue"), node("b-1", "green"), node("b-2", "blue"))
	tests := map[string]struct {
		nodes    []string
		selector string
		want     []string
		wantErr  string
	}{
		"named, repeats dropped":           {nodes: []string{"b-1", "a-1", "b-1"}, want: []string{"b-1", "a-1"}},
		"selector, sorted":                 {selector: "pool=blue", want: []string{"a-1", "b-2"}},
		"named first, then the selector's": {nodes: []string{"b-2"}, selector: "pool=blue", want: []string{"b-2", "a-1"}},
		"a named node that does not exist": {nodes: []string{"c-9"}, wantErr: "reading node c-9"},
		"a selector that matches nothing":  {selector: "pool=red", wantErr: "no node has labels pool=red"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := resolveNodes(context.Background(), client, tc.nodes, tc.selector)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("resolveNodes = %v, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDrainExitCode(t *testing.T) {
	drained := drain.NodeResult{Node: "a", Started: true, Drained: true}
	blocked := drain.NodeResult{Node: "b", Started: true, Remaining: []drain.PodNote{{Pod: "ns/p", Reason: "budget"}}}
	sigint := errors.New("interrupt signal received")
	tests := map[string]struct {
		nodes []drain.NodeResult
		cause error
		want  int
	}{
		"all drained":         {nodes: []drain.NodeResult{drained}, want: ExitOK},
		"a pod blocks":        {nodes: []drain.NodeResult{drained, blocked}, want: ExitIncomplete},
		"timeout":             {nodes: []drain.NodeResult{{Node: "c", Err: fmt.Errorf("waiting: %w", errTimeout)}}, cause: errTimeout, want: ExitIncomplete},
		"interrupted":         {nodes: []drain.NodeResult{{Node: "c", Err: context.Canceled}}, cause: context.Canceled, want: ExitIncomplete},
		"a signal":            {nodes: []drain.NodeResult{{Node: "c", Err: sigint}}, cause: sigint, want: ExitIncomplete},
		"an API error wins":   {nodes: []drain.NodeResult{blocked, {Node: "d", Err: errors.New("listing drain slots: forbidden")}}, want: ExitError},
		"an API error, later": {nodes: []drain.NodeResult{{Node: "d", Err: errors.New("listing drain slots: forbidden")}, {Node: "c", Err: errTimeout}}, cause: errTimeout, want: ExitError},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := exitCode(drain.Result{Nodes: tc.nodes}, tc.cause)
			got := ExitOK
			var coded *ExitCodeError
			if errors.As(err, &coded) {
				got = coded.Code
			}
			if got != tc.want {
				t.Errorf("exit code %d, want %d", got, tc.want)
			}
		})
	}
}

// objectsOf returns the objects of a built cluster, for a fake clientset.
func objectsOf(c *snapshottest.Cluster) []runtime.Object {
	s := c.Snapshot
	return slices.Concat(pointers(s.Nodes), pointers(s.Pods), pointers(s.Deployments),
		pointers(s.ReplicaSets), pointers(s.DaemonSets), pointers(s.PodDisruptionBudgets), pointers(s.Leases))
}

// pointers returns a pointer to each item, as runtime.Objects.
func pointers[T any, PT interface {
	*T
	runtime.Object
}](items []T) []runtime.Object {
	out := make([]runtime.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}

// A 409 from the Eviction API does not say the pod is gone: the API server answers it for
// a pod that is still there when its retries on a budget's status run out. The drain reads
// the pod again; while it is there, the node is not drained, and --timeout ends the run
// with exit code 3. Only a pod really gone (not found, or another UID under its name)
// counts as moved off.
func TestDrainEvictionConflict(t *testing.T) {
	podsGVR := corev1.SchemeGroupVersion.WithResource("pods")
	tests := map[string]struct {
		// afterConflict runs on the tracker when the eviction has answered 409.
		afterConflict func(t *testing.T, c *fake.Clientset, ns, name string)
		wantCode      int
		wantOut       []string
		// timeout is --timeout: short where the run must end by it, long where it must
		// end by itself, so that a busy machine does not fail it.
		timeout time.Duration
	}{
		"the pod is still there": {
			afterConflict: func(*testing.T, *fake.Clientset, string, string) {},
			wantCode:      ExitIncomplete,
			timeout:       1500 * time.Millisecond,
			wantOut: []string{
				"node-1|NOT drained, cordoned",
				"the Eviction API answered 409 Conflict and the pod is still there",
				"Stopped by --timeout; nothing more is evicted",
			},
		},
		"the pod is gone": {
			afterConflict: func(t *testing.T, c *fake.Clientset, ns, name string) {
				if err := c.Tracker().Delete(podsGVR, ns, name); err != nil {
					t.Error(err)
				}
			},
			wantCode: ExitOK,
			timeout:  time.Minute,
			wantOut:  []string{"node-1|drained", "Drained 1 of 1 node(s)"},
		},
		"another pod took its name": {
			afterConflict: func(t *testing.T, c *fake.Clientset, ns, name string) {
				obj, err := c.Tracker().Get(podsGVR, ns, name)
				if err != nil {
					t.Fatal(err)
				}
				pod := obj.(*corev1.Pod).DeepCopy()
				pod.UID = "a-new-pod"
				pod.Spec.NodeName = "node-2"
				if err := c.Tracker().Update(podsGVR, pod, ns); err != nil {
					t.Error(err)
				}
			},
			wantCode: ExitOK,
			timeout:  time.Minute,
			wantOut:  []string{"node-1|drained"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := snapshottest.New()
			c.Node("node-1", "zone-a")
			c.Node("node-2", "zone-a")
			c.Deployment("shop", "web", map[string]string{"app": "web"}, []string{"node-1"})
			client := fake.NewClientset(objectsOf(c)...)
			client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
				if action.GetSubresource() != "eviction" {
					return false, nil, nil
				}
				eviction := action.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
				tc.afterConflict(t, client, eviction.Namespace, eviction.Name)
				return true, nil, apierrors.NewConflict(podsGVR.GroupResource(), eviction.Name, errors.New("the object has been modified"))
			})
			var out, errOut bytes.Buffer
			o := &DrainOptions{
				Nodes: []string{"node-1"}, MaxConcurrent: 1, Timeout: tc.timeout,
				SlotNamespace: "holdfast-system", Identity: "test/1",
				IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: &errOut},
				Clock:     clock.RealClock{},
				cluster:   cluster{kube: client},
			}
			err := o.Run(context.Background())
			got := ExitOK
			var coded *ExitCodeError
			if errors.As(err, &coded) {
				got = coded.Code
			} else if err != nil {
				t.Fatalf("Run = %v", err)
			}
			if got != tc.wantCode {
				t.Errorf("exit code %d, want %d\n%s%s", got, tc.wantCode, errOut.String(), out.String())
			}
			for _, want := range tc.wantOut {
				if !says(out.String(), want) {
					t.Errorf("the summary does not say %q:\n%s", want, out.String())
				}
			}
		})
	}
}

// evictions makes the fake's Eviction API answer like the API server's: refuse answers
// each request (nil to accept), an accepted eviction deletes the pod unless it is a dry
// run. It returns the evictions asked for.
func evictions(c *fake.Clientset, refuse func(*policyv1.Eviction) error) *[]*policyv1.Eviction {
	var asked []*policyv1.Eviction
	c.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		e := action.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		asked = append(asked, e)
		if err := refuse(e); err != nil {
			return true, nil, err
		}
		if len(e.DeleteOptions.DryRun) == 0 {
			return true, nil, c.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), e.Namespace, e.Name)
		}
		return true, nil, nil
	})
	return &asked
}

// runDrain runs `holdfast drain args...` against client and returns its exit code and
// standard output.
func runDrain(t *testing.T, client *fake.Clientset, args ...string) (int, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	o := &DrainOptions{
		Identity:  "test/1",
		IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		Clock:     clock.RealClock{},
		cluster:   cluster{kube: client},
	}
	cmd := newDrainCommand(o)
	cmd.SetArgs(args)
	cmd.SetOut(&errOut)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	var coded *ExitCodeError
	switch {
	case errors.As(err, &coded):
		return coded.Code, out.String(), nil
	case err != nil:
		return ExitError, out.String(), err
	}
	return ExitOK, out.String(), nil
}

// The inputs: kubectl drain's flags, as a runbook gives them, are accepted with
// kubectl's meaning, and --disable-eviction is refused with the reason.
func TestDrainKubectlFlags(t *testing.T) {
	tests := map[string]struct {
		args      []string
		wantCode  int
		wantErr   string
		wantOut   []string
		wantGrace *int64
		// wantEvicted are the pods evicted, dry runs included.
		wantEvicted []string
	}{
		"--ignore-daemonsets": {
			args:     []string{"node-1", "--ignore-daemonsets"},
			wantCode: ExitIncomplete, // the bare pods need --force, as with kubectl
			wantOut:  []string{"shop/web-0: no controller would recreate the pod (use --force)"},
		},
		// As kubectl: the DaemonSet's pod refuses the node, and nothing is evicted.
		"--force without --ignore-daemonsets": {
			args:     []string{"node-1", "--force"},
			wantCode: ExitIncomplete,
			wantOut:  []string{"kube-system/fluentd-0: managed by DaemonSet fluentd, which would put it back on the node (use --ignore-daemonsets)"},
		},
		"the runbook's line": {
			args:      []string{"node-1", "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--grace-period=30", "--timeout=5m", "--skip-wait-for-delete-timeout=10", "--chunk-size=100"},
			wantOut:   []string{"node-1|drained|2|1|0", "Drained 1 of 1 node(s)"},
			wantGrace: ptr.To[int64](30), wantEvicted: []string{"shop/db-0", "shop/web-0"},
		},
		"--pod-selector": {
			args:        []string{"node-1", "--force", "--pod-selector=app=web"},
			wantOut:     []string{"node-1|drained|1|2|0"},
			wantEvicted: []string{"shop/web-0"},
		},
		"--grace-period not given": {
			args:        []string{"node-1", "--force", "--pod-selector", "app=web"},
			wantEvicted: []string{"shop/web-0"},
		},
		"--dry-run=client": {
			args:    []string{"node-1", "--force", "--ignore-daemonsets", "--dry-run=client"},
			wantOut: []string{"shop/web-0|evict", "Dry run, nothing changed: every node would drain."},
		},
		"--dry-run -o wide names each pod's workload": {
			args:    []string{"node-1", "--force", "--ignore-daemonsets", "--dry-run", "-o", "wide", "--sort-by", "action"},
			wantOut: []string{"WORKLOAD", "shop/web-0|evict|no budget covers the pod", "kube-system/fluentd-0|skip|managed by DaemonSet fluentd|DaemonSet/fluentd"},
		},
		"--sort-by names a column": {
			args:    []string{"node-1", "--dry-run", "--sort-by", "colour"},
			wantErr: `--sort-by "colour" names no column: use one of Node, Pod, Action, Reason, Workload, Result`,
		},
		"--dry-run alone is client": {
			args:    []string{"node-1", "--force", "--ignore-daemonsets", "--dry-run"},
			wantOut: []string{"Dry run, nothing changed: every node would drain."},
		},
		"--dry-run=true, the old boolean": {
			args:    []string{"node-1", "--force", "--ignore-daemonsets", "--dry-run=true"},
			wantOut: []string{"Dry run, nothing changed: every node would drain."},
		},
		"--dry-run=server": {
			args:        []string{"node-1", "--force", "--ignore-daemonsets", "--dry-run=server"},
			wantOut:     []string{"The API server's answers to dry-run evictions:", "  allowed  shop/db-0", "  allowed  shop/web-0"},
			wantEvicted: []string{"shop/db-0", "shop/web-0"},
		},
		"--dry-run=maybe": {
			args:    []string{"node-1", "--dry-run=maybe"},
			wantErr: `--dry-run must be none, client or server, not "maybe"`,
		},
		"--disable-eviction": {
			args:    []string{"node-1", "--disable-eviction"},
			wantErr: "--disable-eviction is refused: it would delete pods instead of evicting them, bypassing every PodDisruptionBudget",
		},
		"a bad --pod-selector": {
			args:    []string{"node-1", "--pod-selector=app in ("},
			wantErr: "--pod-selector:",
		},
		"-o yaml": {
			args:    []string{"node-1", "-o", "yaml"},
			wantErr: `-o "yaml": drain prints text (-o wide with more columns), or with -o json one JSON object per event`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := snapshottest.New()
			c.Node("node-1", "zone-a")
			c.Node("node-2", "zone-a")
			c.Pod("shop", "web-0", map[string]string{"app": "web"}, "node-1")
			c.Pod("shop", "db-0", map[string]string{"app": "db"}, "node-1")
			c.DaemonSet("kube-system", "fluentd", map[string]string{"app": "fluentd"}, []string{"node-1"})
			client := fake.NewClientset(objectsOf(c)...)
			asked := evictions(client, func(*policyv1.Eviction) error { return nil })
			code, out, err := runDrain(t, client, tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				if len(*asked) > 0 {
					t.Errorf("%d eviction(s) asked for despite the error", len(*asked))
				}
				return
			}
			if err != nil {
				t.Fatalf("error %v\n%s", err, out)
			}
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d\n%s", code, tc.wantCode, out)
			}
			for _, want := range tc.wantOut {
				if !says(out, want) {
					t.Errorf("output does not say %q:\n%s", want, out)
				}
			}
			var evicted []string
			for _, e := range *asked {
				evicted = append(evicted, e.Namespace+"/"+e.Name)
				if diff := cmp.Diff(tc.wantGrace, e.DeleteOptions.GracePeriodSeconds); diff != "" {
					t.Errorf("grace period of %s (-want +got):\n%s", e.Name, diff)
				}
			}
			slices.Sort(evicted)
			if diff := cmp.Diff(tc.wantEvicted, evicted); diff != "" {
				t.Errorf("evictions (-want +got):\n%s", diff)
			}
		})
	}
}

// -o json streams one object per event; a refusal names its budget with the numbers the
// Eviction API judged by, and the node's conditions and Events say the same.
func TestDrainJSONStream(t *testing.T) {
	c := snapshottest.New()
	c.Node("node-1", "zone-a")
	c.Node("node-2", "zone-a")
	c.Pod("shop", "web-0", map[string]string{"app": "web"}, "node-1")
	c.PDB("shop", "web", map[string]string{"app": "web"}, func(pdb *policyv1.PodDisruptionBudget) {
		pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(2))
		pdb.Status.ExpectedPods, pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy = 3, 2, 2
	})
	client := fake.NewClientset(objectsOf(c)...)
	refused := false
	evictions(client, func(e *policyv1.Eviction) error {
		if refused {
			return nil
		}
		refused = true
		return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	})
	code, out, err := runDrain(t, client, "node-1", "--force", "--timeout=20s", "-o", "json")
	if err != nil || code != ExitOK {
		t.Fatalf("exit code %d, error %v\n%s", code, err, out)
	}
	var types []string
	var refusal *jsonEvent
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var e jsonEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q is not a JSON object: %v", line, err)
		}
		if e.Time.IsZero() || e.Type == "" {
			t.Errorf("line %q has no time or type", line)
		}
		types = append(types, e.Type)
		if e.Type == "refused" {
			refusal = &e
		}
	}
	want := []string{"slotTaken", "cordoned", "evicting", "refused", "evicted", "gone", "drained", "released", "result"}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("event types (-want +got):\n%s", diff)
	}
	if refusal == nil {
		t.Fatal("no refused event")
	}
	wantBudget := &jsonBudget{Name: "web", Spec: "minAvailable 2", ExpectedPods: 3, CurrentHealthy: 2, DesiredHealthy: 2, DisruptionsAllowed: 0}
	if diff := cmp.Diff(wantBudget, refusal.Budget); diff != "" {
		t.Errorf("refusal's budget (-want +got):\n%s", diff)
	}
	if refusal.Node != "node-1" || refusal.Namespace != "shop" || refusal.Pod != "web-0" {
		t.Errorf("refusal of %s %s/%s, want node-1 shop/web-0", refusal.Node, refusal.Namespace, refusal.Pod)
	}

	node, err := client.CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conds := map[corev1.NodeConditionType]string{}
	for _, c := range node.Status.Conditions {
		conds[c.Type] = string(c.Status) + " " + c.Reason
	}
	if diff := cmp.Diff(map[corev1.NodeConditionType]string{"DrainInProgress": "False Drained", "Drained": "True Drained"}, conds); diff != "" {
		t.Errorf("node conditions (-want +got):\n%s", diff)
	}
	events, err := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range events.Items {
		reasons = append(reasons, e.Reason+": "+e.Message)
	}
	slices.Sort(reasons)
	wantReasons := []string{
		"DrainBlocked: pod shop/web-0: eviction refused, retrying: blocked by PodDisruptionBudget shop/web (minAvailable 2): 2 of 3 healthy, needs 2, allows 0",
		"DrainStarted: holdfast drain test/1: node cordoned; evicting its pods, every budget respected",
		"Drained: drained: 1 pod(s) evicted",
	}
	if diff := cmp.Diff(wantReasons, reasons); diff != "" {
		t.Errorf("node Events (-want +got):\n%s", diff)
	}
}
