//go:build e2e

// Package zones tests zone-aware budgets (spec.zoneAware) on a 3-zone, 9-node testbed:
// the drain of every node zone by zone, by a kubectl-style loop and by two real kubectl
// drains at once, the race of two disruptors in two zones, and an operator stopped in
// the middle of a transition.
package zones

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/cli"
	"github.com/holdfast-dev/holdfast/internal/controller/disruptionpolicy"
	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// settle bounds waits for the control plane and the operator to converge.
const settle = 90 * time.Second

// sample is how often the availability of the zones is sampled, as in the other tests.
const sample = 200 * time.Millisecond

// settleTime is the policy's: how long a zone's pods must all have been Ready before
// another zone may be disrupted.
const settleTime = 2 * time.Second

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Nodes: 9, Zones: 3, PodReadyDelay: time.Second})
}

// env is one test's cluster with a 9-replica StatefulSet, db, one pod per node, under a
// zone-aware policy of per-zone limit 3.
type env struct {
	*framework.Framework
	c      client.Client
	sts    *appsv1.StatefulSet
	policy *holdfastv1alpha1.DisruptionPolicy
	// zoneOf is each node's zone.
	zoneOf map[string]string
}

// onePerNode keeps db's pods on different nodes: 9 pods on 9 nodes, one each.
func onePerNode(sts *appsv1.StatefulSet) {
	sts.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: sts.Spec.Selector, TopologyKey: corev1.LabelHostname}},
	}}
}

func setup(t *testing.T, startOperator func(f *framework.Framework), mods ...func(*appsv1.StatefulSet)) *env {
	t.Helper()
	f := framework.New(t)
	e := &env{Framework: f, c: f.HoldfastClient(), zoneOf: map[string]string{}}
	e.InstallCRDs(e.c, &holdfastv1alpha1.DisruptionPolicyList{})
	t.Cleanup(func() {
		if err := e.c.DeleteAllOf(context.Background(), &holdfastv1alpha1.DisruptionPolicy{}, client.InNamespace(f.Namespace)); err != nil {
			t.Logf("deleting DisruptionPolicies: %v", err)
		}
	})
	nodes, err := e.Clientset.CoreV1().Nodes().List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		e.zoneOf[n.Name] = n.Labels[corev1.LabelTopologyZone]
	}
	p := &holdfastv1alpha1.DisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "quorum", Namespace: e.Namespace},
		Spec: holdfastv1alpha1.DisruptionPolicySpec{
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"tier": "quorum"}},
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			ZoneAware: &holdfastv1alpha1.ZoneAwareSpec{
				MaxUnavailable: intstr.FromInt32(3),
				SettleTime:     &metav1.Duration{Duration: settleTime},
			},
		},
	}
	if err := e.c.Create(e.Ctx, p); err != nil {
		t.Fatal(err)
	}
	e.policy = p
	e.sts = e.StatefulSet("db", 9)
	e.sts.Labels["tier"] = "quorum"
	e.sts.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	for _, mod := range mods {
		mod(e.sts)
	}
	e.Create(e.sts)
	e.WaitReady(e.sts)
	// Settled, so that the operator's first pass finds no zone disturbed: a pod Ready for
	// less than the settle time would have its zone chosen.
	e.Eventually(settle, "db's pods Ready for the settle time", func(ctx context.Context) (bool, error) {
		pods, err := e.pods(ctx)
		return err == nil && !slices.ContainsFunc(pods, func(p corev1.Pod) bool {
			ready, since := availability.Readiness(&p)
			return !ready || time.Since(since) < settleTime
		}), err
	})
	startOperator(f)
	e.waitShape("no zone disrupted: the workload's budget at maxUnavailable 1, no pod labelled", func(pdbs map[string]*policyv1.PodDisruptionBudget, pods []corev1.Pod) bool {
		b := pdbs[idle]
		return len(pdbs) == 1 && b != nil && b.Spec.MaxUnavailable.String() == "1" && b.Status.ObservedGeneration == b.Generation &&
			b.Status.DisruptionsAllowed == 1 && !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Labels[holdfastv1alpha1.ZoneLabel] != "" })
	})
	return e
}

var (
	idle  = policy.BudgetName(holdfastv1alpha1.KindStatefulSet, "db")
	zoneA = idle + "-zone-a"
	zoneB = idle + "-zone-b"
	zoneC = idle + "-zone-c"
)

func (e *env) pods(ctx context.Context) ([]corev1.Pod, error) { return e.Pods(ctx, "app=db") }

// budgets are the namespace's budgets by name.
func (e *env) budgets(ctx context.Context) (map[string]*policyv1.PodDisruptionBudget, error) {
	list, err := e.Clientset.PolicyV1().PodDisruptionBudgets(e.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]*policyv1.PodDisruptionBudget{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

func (e *env) waitShape(what string, ok func(map[string]*policyv1.PodDisruptionBudget, []corev1.Pod) bool) {
	e.T.Helper()
	var last []string
	defer func() {
		if e.T.Failed() {
			e.T.Logf("budgets last seen: %v", last)
		}
	}()
	e.Eventually(settle, what, func(ctx context.Context) (bool, error) {
		pdbs, err := e.budgets(ctx)
		if err != nil {
			return false, err
		}
		last = last[:0]
		for _, b := range pdbs {
			last = append(last, fmt.Sprintf("%s(gen %d/%d, allowed %d, %v)", b.Name, b.Status.ObservedGeneration, b.Generation, b.Status.DisruptionsAllowed, b.Annotations))
		}
		pods, err := e.pods(ctx)
		return err == nil && ok(pdbs, pods), err
	})
}

// zoneOpen says the budgets have zone's shape: its budget allows 3, the others (and
// the workload's, over the pods not labelled yet) none.
func zoneOpen(zone string) func(map[string]*policyv1.PodDisruptionBudget, []corev1.Pod) bool {
	return func(pdbs map[string]*policyv1.PodDisruptionBudget, _ []corev1.Pod) bool {
		if b := pdbs[idle]; b == nil || len(pdbs) != 4 || len(b.Spec.Selector.MatchExpressions) == 0 {
			return false
		}
		for _, b := range pdbs {
			want := int32(0)
			if b.Name == idle+"-"+zone {
				want = 3
			}
			if b.Status.ObservedGeneration != b.Generation || b.Status.DisruptionsAllowed != want {
				return false
			}
		}
		return true
	}
}

// waitOthersGone waits for the other tests' pods to be gone: a drain evicts every pod
// of its node.
func (e *env) waitOthersGone() {
	e.T.Helper()
	e.Eventually(settle, "the other tests' pods to be gone", func(ctx context.Context) (bool, error) {
		all, err := e.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
		if err != nil {
			return false, err
		}
		return !slices.ContainsFunc(all.Items, func(p corev1.Pod) bool { return p.Namespace != e.Namespace }), nil
	})
}

// podOn is db's pod on node, nil when there is none.
func (e *env) podOn(ctx context.Context, node string) (*corev1.Pod, error) {
	pods, err := e.pods(ctx)
	if err != nil {
		return nil, err
	}
	for i := range pods {
		if pods[i].Spec.NodeName == node && pods[i].DeletionTimestamp == nil {
			return &pods[i], nil
		}
	}
	return nil, nil
}

// mustPodOn is db's pod on node; the test fails when there is none.
func (e *env) mustPodOn(node string) *corev1.Pod {
	e.T.Helper()
	pod, err := e.podOn(e.Ctx, node)
	if err != nil || pod == nil {
		e.T.Fatalf("db's pod on node %s: %v, %v", node, pod, err)
	}
	return pod
}

func (e *env) nodesOf(zone string) []string {
	var out []string
	for n, z := range e.zoneOf {
		if z == zone {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// unavailableZones samples, every 200 ms, the zones with a pod of db missing or not
// Ready (a pod is known by its name, its zone by where it ran at the start), and counts
// the samples with two zones or more.
type unavailableZones struct {
	stop    chan struct{}
	done    chan struct{}
	samples int
	double  []string
}

func (e *env) watchZones() *unavailableZones {
	e.T.Helper()
	pods, err := e.pods(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	home := map[string]string{}
	for _, p := range pods {
		home[p.Name] = e.zoneOf[p.Spec.NodeName]
	}
	w := &unavailableZones{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(sample)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
			pods, err := e.pods(context.Background())
			if err != nil {
				continue
			}
			up := map[string]bool{}
			for _, p := range pods {
				if p.DeletionTimestamp == nil && framework.PodReady(&p) {
					up[p.Name] = true
				}
			}
			down := map[string]bool{}
			for name, zone := range home {
				if !up[name] {
					down[zone] = true
				}
			}
			w.samples++
			if len(down) >= 2 {
				w.double = append(w.double, fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), down))
			}
		}
	}()
	return w
}

func (w *unavailableZones) Stop() (samples int, double []string) {
	close(w.stop)
	<-w.done
	return w.samples, w.double
}

// evicted is an eviction the Eviction API accepted.
type evicted struct {
	at   time.Time
	zone string
}

// drain drains node as kubectl drain does, the node having been cordoned: evict its
// pod, retrying while the budget refuses (429, or 500 while two budgets cover the pod
// in the middle of a transition), wait for the pod to go, then end the maintenance by
// uncordoning the node.
func (e *env) drain(node string, out chan<- evicted) error {
	ctx := e.Ctx
	for {
		pod, err := e.podOn(ctx, node)
		if err != nil {
			return err
		}
		if pod == nil {
			break
		}
		err = e.Evict(ctx, pod)
		if err == nil {
			out <- evicted{at: time.Now(), zone: e.zoneOf[node]}
			continue
		}
		if !apierrors.IsTooManyRequests(err) && !apierrors.IsInternalError(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("evicting %s from %s: %w", pod.Name, node, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(sample):
		}
	}
	e.Uncordon(node)
	return nil
}

// Issue 35's target: every node of a 3-zone, 9-node cluster drained at once, as a
// script of `kubectl drain` would, goes zone by zone, 3 pods at a time, and no sample
// sees pods unavailable in two zones.
func TestDrainZoneByZone(t *testing.T) {
	e := setup(t, func(f *framework.Framework) { f.StartOperator() }, onePerNode)
	watch := e.watchZones()
	nodes := slices.Sorted(func(yield func(string) bool) {
		for n := range e.zoneOf {
			if !yield(n) {
				return
			}
		}
	})
	for _, n := range nodes {
		e.Cordon(n)
	}
	start := time.Now()
	out := make(chan evicted, 2*len(nodes))
	errs := make(chan error, len(nodes))
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Go(func() { errs <- e.drain(n, out) })
	}
	wg.Wait()
	close(out)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	e.WaitReady(e.sts)
	took := time.Since(start)
	samples, double := watch.Stop()

	var order []evicted
	for ev := range out {
		order = append(order, ev)
	}
	slices.SortFunc(order, func(a, b evicted) int { return a.at.Compare(b.at) })
	var waves []string
	for _, ev := range order {
		if len(waves) == 0 || waves[len(waves)-1] != ev.zone {
			waves = append(waves, ev.zone)
		}
	}
	t.Logf("%d evictions in %d zone waves %v, all 9 nodes drained and db Ready in %s; %d samples every %s, %d with pods unavailable in two zones",
		len(order), len(waves), waves, took.Round(100*time.Millisecond), samples, sample, len(double))
	if len(order) != 9 {
		t.Errorf("%d evictions accepted, want 9", len(order))
	}
	if len(double) > 0 {
		t.Errorf("%d samples with pods unavailable in two zones at once: %v", len(double), double)
	}
	slices.Sort(waves)
	if len(slices.Compact(waves)) != len(waves) {
		t.Errorf("a zone's pods were evicted in two waves or more: every zone's pods should go together")
	}
	// Each zone's wave is announced on the policy, and its end.
	for _, reason := range []string{disruptionpolicy.EventZoneDisrupted, disruptionpolicy.EventZoneSettled} {
		e.waitZoneEvents(reason, slices.Compact(waves))
	}
}

// waitZoneEvents waits for an Event of reason on the policy, about db, naming each of
// zones.
func (e *env) waitZoneEvents(reason string, zones []string) {
	e.T.Helper()
	var notes []string
	e.Eventually(settle, fmt.Sprintf("Events %s naming zones %v", reason, zones), func(ctx context.Context) (bool, error) {
		evs, err := e.Events(ctx, e.policy, reason)
		notes = notes[:0]
		for _, ev := range evs {
			if ev.Related != nil && ev.Related.Kind == "StatefulSet" && ev.Related.Name == "db" {
				notes = append(notes, ev.Note)
			}
		}
		return err == nil && !slices.ContainsFunc(zones, func(z string) bool {
			return !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "zone "+z+" ") })
		}), err
	})
	e.T.Logf("%s: %q", reason, notes)
}

// Two disruptors in two zones at once: while no zone is disrupted, one budget covers
// every zone, so the Eviction API serialises them on its status and refuses the
// second. Once a zone is chosen, evictions in another zone are refused and those in the
// zone go through.
func TestTwoDisruptorsRace(t *testing.T) {
	e := setup(t, func(f *framework.Framework) { f.StartOperator() }, onePerNode)
	const rounds = 3
	for round := range rounds {
		a, b := e.mustPodOn(e.nodesOf("zone-a")[round]), e.mustPodOn(e.nodesOf("zone-b")[round])
		var wg sync.WaitGroup
		start := make(chan struct{})
		results := make([]error, 2)
		for i, pod := range []*corev1.Pod{a, b} {
			wg.Go(func() {
				<-start
				results[i] = e.Evict(e.Ctx, pod)
			})
		}
		close(start)
		wg.Wait()
		// A refusal is a 429 from the budget, or a 500 while the transition the first
		// eviction starts has two budgets over the pod. Either way the pod stays.
		accepted := 0
		for i, err := range results {
			if err == nil {
				accepted++
				continue
			}
			pod := []*corev1.Pod{a, b}[i]
			cur, gerr := e.Clientset.CoreV1().Pods(e.Namespace).Get(e.Ctx, pod.Name, metav1.GetOptions{})
			if gerr != nil || cur.UID != pod.UID || cur.DeletionTimestamp != nil {
				t.Fatalf("round %d: eviction of %s answered %v, yet the pod is going (%v)", round, pod.Name, err, gerr)
			}
		}
		t.Logf("round %d: zone a %v, zone b %v", round, results[0], results[1])
		if accepted != 1 {
			t.Fatalf("round %d: %d of the two evictions in two zones accepted, want 1", round, accepted)
		}
		e.WaitReady(e.sts)
		e.waitShape("no zone disrupted again", func(pdbs map[string]*policyv1.PodDisruptionBudget, _ []corev1.Pod) bool {
			b := pdbs[idle]
			return len(pdbs) == 1 && b != nil && b.Status.ObservedGeneration == b.Generation && b.Status.DisruptionsAllowed == 1
		})
	}

	// A drain of a node of zone c starts: zone c is chosen, and zone b refuses.
	node := e.nodesOf("zone-c")[0]
	e.Cordon(node)
	e.waitShape("zone c disrupted", zoneOpen("zone-c"))
	b := e.mustPodOn(e.nodesOf("zone-b")[0])
	if err := e.Evict(e.Ctx, b); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("evicting %s of zone b while zone c is disrupted: %v, want 429", b.Name, err)
	}
	for _, n := range e.nodesOf("zone-c") {
		c := e.mustPodOn(n)
		if err := e.Evict(e.Ctx, c); err != nil {
			t.Fatalf("evicting %s of zone c, the zone disrupted: %v", c.Name, err)
		}
	}
}

// An operator stopped between the writes of a transition (the zones' budgets created,
// the workload's budget held at 0, no pod labelled into its zone's budget yet) leaves
// every pod under the workload's budget alone: the Eviction API refuses every eviction in
// every zone with a 429, which drains retry, never with the 500 of a pod under two
// budgets. Restarted, the operator finishes the transition.
func TestOperatorStoppedMidTransition(t *testing.T) {
	var op *framework.OperatorProcess
	e := setup(t, func(f *framework.Framework) {
		op = f.StartOperatorProcess(disruptionpolicy.FailpointEnv + "=" + disruptionpolicy.FailBeforeLoosening)
	}, onePerNode)
	node := e.nodesOf("zone-a")[0]
	e.Cordon(node)
	if code := op.WaitExit(settle); code != disruptionpolicy.FailpointExitCode {
		t.Fatalf("the operator exited with %d, want %d (the failpoint)", code, disruptionpolicy.FailpointExitCode)
	}
	pdbs, err := e.budgets(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range pdbs {
			if !yield(n) {
				return
			}
		}
	})
	pods, err := e.pods(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	labelled := slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Labels[holdfastv1alpha1.ZoneLabel] != "" })
	if want := []string{idle, zoneA, zoneB, zoneC}; !slices.Equal(names, want) || labelled {
		t.Fatalf("stopped with budgets %v, want %v and no pod labelled yet (labelled: %v): not between the transition's writes", names, want, labelled)
	}
	for _, zone := range []string{"zone-a", "zone-b", "zone-c"} {
		pod := e.mustPodOn(e.nodesOf(zone)[0])
		err := e.Evict(e.Ctx, pod)
		if !apierrors.IsTooManyRequests(err) {
			t.Fatalf("evicting %s of %s with the operator stopped mid-transition: %v, want a refusal (429)", pod.Name, zone, err)
		}
		t.Logf("%s: %v", zone, err)
	}

	e.StartOperatorProcess()
	e.waitShape("zone a disrupted", zoneOpen("zone-a"))
	a := e.mustPodOn(node)
	if err := e.Evict(e.Ctx, a); err != nil {
		t.Fatalf("evicting %s of zone a after the restart: %v", a.Name, err)
	}
	b := e.mustPodOn(e.nodesOf("zone-b")[0])
	if err := e.Evict(e.Ctx, b); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("evicting %s of zone b after the restart: %v, want 429", b.Name, err)
	}
}

// holdfast plan drain predicts the operator: the nodes of zones a and b drain in one
// wave per zone, where the workload's budget alone (one pod at a time while no zone is
// disrupted) would take a wave per node. (Zone c stays: with every node drained and kept
// cordoned, the last pods would have nowhere to go.)
func TestPlanDrainZoneByZone(t *testing.T) {
	e := setup(t, func(f *framework.Framework) { f.StartOperator() })
	e.waitOthersGone()
	pods, err := e.pods(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	perNode := map[string]int{}
	var targets []string
	for _, p := range pods {
		perNode[p.Spec.NodeName]++
	}
	for _, zone := range []string{"zone-a", "zone-b"} {
		targets = append(targets, e.nodesOf(zone)...)
	}
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", e.Kubeconfig, "plan", "drain", "-o", "json"}, targets...))
	if err := cmd.Execute(); err != nil {
		t.Fatalf("holdfast plan drain: %v\n%s%s", err, errOut.String(), out.String())
	}
	var r struct {
		Waves   [][]string     `json:"waves"`
		Blocked []plan.Blocker `json:"blocked"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("holdfast plan drain -o json printed something else: %v\n%s", err, out.String())
	}
	t.Logf("pods per node %v; waves %v; blocked %v", perNode, r.Waves, r.Blocked)
	want := [][]string{e.nodesOf("zone-a"), e.nodesOf("zone-b")}
	if !slices.EqualFunc(r.Waves, want, slices.Equal) || len(r.Blocked) > 0 {
		t.Errorf("waves %v (blocked %v), want one per zone: %v", r.Waves, r.Blocked, want)
	}
}

// The real kubectl drain, two at once: one process drains every node of one zone, another
// every node of a second zone (kubectl drain evicts a node's pods all together and
// retries a refused eviction, 429, every 5 s, but stops with an error on any other
// refusal). The zone chosen first is drained while the other process is refused; once a
// drain ends its zone's nodes are uncordoned (the maintenance done), the zone comes back,
// and the other zone's drain finishes. No sample sees pods unavailable in two zones, and
// neither kubectl drain fails: no eviction lands on a pod under two budgets while the
// budgets change shape.
func TestKubectlDrainTwoZones(t *testing.T) {
	kubectl, err := framework.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	e := setup(t, func(f *framework.Framework) { f.StartOperator() }, onePerNode)
	e.waitOthersGone()
	zones := slices.Compact(slices.Sorted(maps.Values(e.zoneOf)))[:2]
	watch := e.watchZones()
	type result struct {
		zone string
		out  []byte
		err  error
	}
	done := make(chan result, len(zones))
	for _, z := range zones {
		go func() {
			cmd := exec.CommandContext(e.Ctx, kubectl, "--kubeconfig", e.Kubeconfig, "drain", "--selector", corev1.LabelTopologyZone+"="+z,
				"--ignore-daemonsets", "--pod-selector", "app=db", "--timeout", "4m")
			out, err := cmd.CombinedOutput()
			done <- result{z, out, err}
		}()
	}
	start := time.Now()
	var finished []string
	for range zones {
		r := <-done
		t.Logf("kubectl drain of %s ended after %s (err %v):\n%s", r.zone, time.Since(start).Round(100*time.Millisecond), r.err, r.out)
		if r.err != nil {
			t.Errorf("kubectl drain of zone %s failed: %v", r.zone, r.err)
		}
		finished = append(finished, r.zone)
		for _, n := range e.nodesOf(r.zone) {
			e.Uncordon(n)
		}
	}
	e.WaitReady(e.sts)
	samples, double := watch.Stop()
	t.Logf("zones drained in the order %v, db Ready again in %s; %d samples every %s, %d with pods unavailable in two zones",
		finished, time.Since(start).Round(100*time.Millisecond), samples, sample, len(double))
	if len(double) > 0 {
		t.Errorf("%d samples with pods unavailable in two zones at once: %v", len(double), double)
	}
}
