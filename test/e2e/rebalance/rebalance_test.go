//go:build e2e

// Package rebalance reproduces a node crash on the testbed: replicas piled on one node
// after the other nodes were lost and came back, spread again by the operator with no
// more evictions than needed, for a Deployment and for a StatefulSet, whether the
// workload opts in by annotation or its DisruptionPolicy does; and a workload whose pods
// can only be where they are, left alone with an Event saying why.
package rebalance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/rebalance"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

const (
	// settle bounds waits for the control plane and the operator to converge.
	settle = 90 * time.Second
	// cooldown is the test workloads' time between two moves: the least holdfast
	// applies, so that the test is quick, and long enough to see that nothing moves
	// during it.
	cooldown = holdfastv1alpha1.MinRebalanceCooldown
)

func TestMain(m *testing.M) {
	// Pods take 2 s to become Ready, like an application starting: a move that let the
	// next eviction through before its replacement was Ready would show in the budget.
	framework.Main(m, framework.Options{Nodes: 6, Zones: 3, PodReadyDelay: 2 * time.Second})
}

// Every node but node-1 is lost (cordoned, its pods gone) while the workload replaces its
// replicas, so all three land on node-1; the nodes come back and nothing moves the
// replicas. With the annotation, the operator moves two pods, one at a time within the
// budget and at least the least cooldown apart, and they run on three nodes; a second run
// moves nothing. A StatefulSet's replacement takes the evicted pod's name, and must count
// as a move all the same.
func TestPiledReplicasSpread(t *testing.T) {
	for _, tt := range []struct {
		kind  string
		build func(f *env) client.Object
	}{
		{"Deployment", func(f *env) client.Object { return f.Deployment("web", 3) }},
		{"StatefulSet", func(f *env) client.Object { return f.StatefulSet("web", 3) }},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			spreadPiledReplicas(t, tt.build)
		})
	}
}

func spreadPiledReplicas(t *testing.T, build func(f *env) client.Object) {
	f := setup(t)
	w := build(f)
	f.pileUp(w)
	f.Create(f.PDB("web", "web", 1))
	f.WaitBudget("web", 1)

	created := f.watchCreatedPods(framework.SelectorOf(w))
	budgets := f.WatchBudgets(100 * time.Millisecond)
	records := f.watchRecords(w)
	start := time.Now()
	stop := f.StartOperator()
	// Issue 30 item 13: a cooldown of 0s (anyone who may annotate the workload can ask
	// for it) would move the pods back to back; the least cooldown applies, and an Event
	// says so.
	f.annotate(w, map[string]string{
		holdfastv1alpha1.RebalanceAnnotation:         "true",
		holdfastv1alpha1.RebalanceCooldownAnnotation: "0s",
	})
	f.waitMoves(w, start, created, budgets, records)
	raised := f.WaitEvents(w, rebalance.EventCooldownRaised, 1)
	t.Logf("Event %s: %s", rebalance.EventCooldownRaised, raised[0].Note)

	// A second run, as after an operator restart: it looks, finds the workload balanced,
	// and moves nothing for several cooldowns.
	stop()
	balanced := decisions("balanced")
	f.StartOperator()
	f.Eventually(settle, "the second run to decide", func(context.Context) (bool, error) { return decisions("balanced") > balanced, nil })
	f.quietFor(created, 4*cooldown)
	if n := created.count(); n != 2 {
		t.Errorf("the second run created %d more pods", n-2)
	}
}

// The same loss, with a workload that carries no annotation: the DisruptionPolicy that
// already manages its budget gains spec.rebalance, and that change alone has the
// operator spread the replicas within the policy's budget, its Events naming the policy.
func TestPolicyOptsPiledReplicasIn(t *testing.T) {
	f := setup(t)
	d := f.Deployment("web", 3)
	f.pileUp(d)
	p := &holdfastv1alpha1.DisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "spread", Namespace: f.Namespace},
		Spec: holdfastv1alpha1.DisruptionPolicySpec{
			Selector:       metav1.LabelSelector{MatchLabels: d.Labels},
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		},
	}
	if err := f.c.Create(f.Ctx, p); err != nil {
		t.Fatalf("creating DisruptionPolicy %s: %v", p.Name, err)
	}
	created := f.watchCreatedPods(framework.SelectorOf(d))
	budgets := f.WatchBudgets(100 * time.Millisecond)
	records := f.watchRecords(d)
	f.StartOperator()
	f.WaitBudget(policy.BudgetName(holdfastv1alpha1.KindDeployment, d.Name), 1)

	start := time.Now()
	patch := fmt.Sprintf(`{"spec":{"rebalance":{"cooldown":%q}}}`, cooldown)
	if err := f.c.Patch(f.Ctx, p, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("adding rebalance to DisruptionPolicy %s: %v", p.Name, err)
	}
	// The apiserver fills in what the patch leaves out.
	want := &holdfastv1alpha1.RebalanceSpec{TopologyKeys: []string{corev1.LabelHostname}, MaxSkew: 1, Cooldown: &metav1.Duration{Duration: cooldown}}
	if diff := cmp.Diff(want, p.Spec.Rebalance); diff != "" {
		t.Errorf("spec.rebalance as stored (-want +got):\n%s", diff)
	}
	for _, m := range f.waitMoves(d, start, created, budgets, records) {
		if !strings.HasSuffix(m, "(opted in by DisruptionPolicy "+p.Name+")") {
			t.Errorf("Event %q does not name the policy that opted the workload in", m)
		}
	}
}

// A workload whose pods refuse to share a node with db, which runs on every other
// node, piles on node-1 and must stay there: evicting a pod would only bring it back
// (descheduler's loop). The operator evicts nothing and says why.
func TestOnlyWhereItIsNoEviction(t *testing.T) {
	f := setup(t)
	db := f.Deployment("db", int32(len(f.Nodes)-1))
	framework.HostnameAntiAffinity(db)
	db.Spec.Template.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{f.Nodes[0]},
		}}}},
	}}
	f.Create(db)
	f.WaitReady(db)
	web := f.Deployment("web", 3)
	web.Annotations = map[string]string{
		holdfastv1alpha1.RebalanceAnnotation:         "true",
		holdfastv1alpha1.RebalanceCooldownAnnotation: cooldown.String(),
	}
	web.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: db.Spec.Selector, TopologyKey: corev1.LabelHostname,
		}},
	}}
	f.Create(web)
	f.WaitReady(web)
	f.waitSpread(web, "all 3 on "+f.Nodes[0], func(perNode map[string]int) bool { return perNode[f.Nodes[0]] == 3 })

	created := f.watchCreatedPods(framework.SelectorOf(web))
	f.StartOperator()
	note := f.WaitEvents(web, rebalance.EventRebalanceHeld, 1)[0].Note
	t.Logf("Event %s: %s", rebalance.EventRebalanceHeld, note)
	if !strings.Contains(note, "would land where it is, on "+f.Nodes[0]) {
		t.Errorf("Event %q does not say the pod would come back", note)
	}
	f.quietFor(created, 4*cooldown)
	if n := created.count(); n != 0 {
		t.Errorf("%d pods were evicted and replaced: %v", n, created.names())
	}
}

// env is one test's cluster, with a client that knows holdfast's types.
type env struct {
	*framework.Framework
	c client.Client
}

func setup(t *testing.T) *env {
	t.Helper()
	f := framework.New(t)
	return &env{Framework: f, c: f.Holdfast(&holdfastv1alpha1.DisruptionPolicyList{}, &holdfastv1alpha1.NodeCompanionList{})}
}

// pileUp creates a workload of 3 replicas (a Deployment or a StatefulSet) and reproduces
// a node crash: every node but the first goes away, and the pods on them with it, so
// that the replicas are replaced on the first; then the nodes come back, and the
// scheduler has no reason to move anything.
func (f *env) pileUp(w client.Object) {
	f.T.Helper()
	framework.SpecOf(w).Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	f.Create(w)
	f.WaitReady(w)
	for _, n := range f.Nodes[1:] {
		f.Cordon(n)
	}
	pods, err := f.Pods(f.Ctx, framework.SelectorOf(w))
	if err != nil {
		f.T.Fatal(err)
	}
	for _, p := range pods {
		if p.Spec.NodeName != f.Nodes[0] {
			if err := f.Clientset.CoreV1().Pods(f.Namespace).Delete(f.Ctx, p.Name, metav1.DeleteOptions{}); err != nil {
				f.T.Fatal(err)
			}
		}
	}
	f.waitSpread(w, "all 3 on "+f.Nodes[0], func(perNode map[string]int) bool { return perNode[f.Nodes[0]] == 3 })
	for _, n := range f.Nodes[1:] {
		f.Uncordon(n)
	}
}

// waitMoves waits until the piled-up workload runs one pod per node, then checks that
// it took exactly the two moves needed, each announced by an Event that says the pod
// left the first node, decided a cooldown apart, and that no budget's floor was broken
// meanwhile. It returns the Events' notes.
func (f *env) waitMoves(w client.Object, start time.Time, created *createdPods, budgets *framework.BudgetWatch, records *moveRecords) []string {
	f.T.Helper()
	spread := f.waitSpread(w, "one pod per node", func(perNode map[string]int) bool { return len(perNode) == 3 })
	took := time.Since(start)
	samples, violations := budgets.Stop()
	created.settle(f)
	decided := records.settle(f, w).times(f.T)

	var moves []string
	// The two moves' Events: the second may still be on its way from the recorder.
	for _, ev := range f.WaitEvents(w, rebalance.EventRebalanced, 2) {
		moves = append(moves, ev.Note)
	}
	f.T.Logf("spread in %s: %v; %d pods created; moves decided at %v; budget %s over %d samples",
		took.Round(100*time.Millisecond), spread, created.count(), decided, budgets.Lowest(), samples)
	for _, m := range moves {
		f.T.Logf("Event %s: %s", rebalance.EventRebalanced, m)
	}
	if n := created.count(); n != 2 {
		f.T.Errorf("%d replacement pods were created, want 2 (one per eviction): %v\nthe pods' changes:\n%s", n, created.names(), created.changes())
	}
	if len(moves) != 2 {
		f.T.Errorf("%d %s Events, want 2", len(moves), rebalance.EventRebalanced)
	}
	// The cooldown spaces the decisions, which the operator records on the workload
	// before each eviction; the evictions and their Events follow by a latency that
	// varies with the machine's load, so their times cannot show it to the millisecond.
	if len(decided) != 2 {
		f.T.Errorf("%d moves recorded on the workload, want 2: %v", len(decided), decided)
	} else if gap := decided[1].Sub(decided[0]); gap < cooldown {
		f.T.Errorf("the moves were decided %s apart, within the %s cooldown", gap, cooldown)
	}
	for _, m := range moves {
		if !strings.Contains(m, "moves from kubernetes.io/hostname="+f.Nodes[0]) {
			f.T.Errorf("Event %q does not say the pod left %s", m, f.Nodes[0])
		}
	}
	if len(violations) > 0 {
		f.T.Errorf("the budget's floor was broken: %v", violations)
	}
	return moves
}

// moveRecords collects, in order, the records of moves the operator writes on a
// workload (holdfast.dev/last-rebalance: "time pod").
type moveRecords struct {
	mu   sync.Mutex
	all  []string
	last string // the record of the workload's last version seen
}

// settle waits until the watch has delivered the workload's record as it is now, and
// returns r.
func (r *moveRecords) settle(f *env, w client.Object) *moveRecords {
	f.T.Helper()
	cur := w.DeepCopyObject().(client.Object)
	f.Eventually(settle, "the watch of "+w.GetName()+" to see its last record of a move", func(ctx context.Context) (bool, error) {
		if err := f.c.Get(ctx, client.ObjectKeyFromObject(w), cur); err != nil {
			return false, err
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		return cur.GetAnnotations()[holdfastv1alpha1.LastRebalanceAnnotation] == r.last, nil
	})
	return r
}

// times returns when each recorded move was decided, failing the test on a record that
// does not start with a time.
func (r *moveRecords) times(t *testing.T) []time.Time {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Time
	for _, record := range r.all {
		at, _, _ := strings.Cut(record, " ")
		when, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			t.Errorf("the record of a move %q does not start with a time: %v", record, err)
			continue
		}
		out = append(out, when)
	}
	return out
}

// watchRecords watches the workload from now on and keeps every new record of a move.
func (f *env) watchRecords(w client.Object) *moveRecords {
	f.T.Helper()
	opts := metav1.ListOptions{FieldSelector: "metadata.name=" + w.GetName(), ResourceVersion: w.GetResourceVersion()}
	var (
		watcher watch.Interface
		err     error
	)
	switch w.(type) {
	case *appsv1.Deployment:
		watcher, err = f.Clientset.AppsV1().Deployments(f.Namespace).Watch(f.Ctx, opts)
	case *appsv1.StatefulSet:
		watcher, err = f.Clientset.AppsV1().StatefulSets(f.Namespace).Watch(f.Ctx, opts)
	default:
		f.T.Fatalf("%T %s is neither a Deployment nor a StatefulSet", w, w.GetName())
	}
	if err != nil {
		f.T.Fatal(err)
	}
	f.T.Cleanup(watcher.Stop)
	r := &moveRecords{last: w.GetAnnotations()[holdfastv1alpha1.LastRebalanceAnnotation]}
	go func() {
		for ev := range watcher.ResultChan() {
			o, ok := ev.Object.(metav1.Object)
			if !ok {
				continue
			}
			record := o.GetAnnotations()[holdfastv1alpha1.LastRebalanceAnnotation]
			r.mu.Lock()
			if record != "" && record != r.last {
				r.all = append(r.all, record)
			}
			r.last = record
			r.mu.Unlock()
		}
	}()
	return r
}

func (f *env) annotate(w client.Object, annotations map[string]string) {
	f.T.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":%s}}`, mustJSON(annotations))
	if err := f.c.Patch(f.Ctx, w, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		f.T.Fatalf("annotating %s %s: %v", framework.SpecOf(w).Kind, w.GetName(), err)
	}
}

func mustJSON(m map[string]string) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%q:%q", k, v))
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// waitSpread waits until the workload's pods are all Ready, none is terminating, and
// ok holds for their count per node, which it returns.
func (f *env) waitSpread(w client.Object, what string, ok func(perNode map[string]int) bool) map[string]int {
	f.T.Helper()
	spec := framework.SpecOf(w)
	var perNode map[string]int
	f.Eventually(settle, w.GetName()+": "+what, func(ctx context.Context) (bool, error) {
		pods, err := f.Pods(ctx, framework.SelectorOf(w))
		if err != nil {
			return false, err
		}
		perNode = map[string]int{}
		for i := range pods {
			p := &pods[i]
			if p.DeletionTimestamp != nil || !framework.PodReady(p) {
				return false, nil
			}
			perNode[p.Spec.NodeName]++
		}
		return len(pods) == int(spec.Replicas) && ok(perNode), nil
	})
	return perNode
}

// createdPods records the pods created after it started. A pod is known by its UID: a
// StatefulSet re-creates an evicted pod under the same name.
type createdPods struct {
	selector string
	before   map[types.UID]bool // the pods there when it started
	mu       sync.Mutex
	uids     map[types.UID]bool
	all      []string // name (UID), in order of creation
	history  []string // every change seen, to tell what happened when a count is off
}

// settle waits until the watch has delivered every pod the selector matches now.
func (c *createdPods) settle(f *env) {
	f.T.Helper()
	f.Eventually(settle, "the watch of "+c.selector+" to see every pod there", func(ctx context.Context) (bool, error) {
		pods, err := f.Pods(ctx, c.selector)
		c.mu.Lock()
		defer c.mu.Unlock()
		return !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return !c.before[p.UID] && !c.uids[p.UID] }), err
	})
}

func (c *createdPods) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.uids)
}

func (c *createdPods) names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.all)
}

func (c *createdPods) changes() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.history, "\n")
}

// watchCreatedPods watches the selector's pods from now on: every pod added is a
// replacement of an evicted one.
func (f *env) watchCreatedPods(selector string) *createdPods {
	f.T.Helper()
	list, err := f.Clientset.CoreV1().Pods(f.Namespace).List(f.Ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		f.T.Fatal(err)
	}
	w, err := f.Clientset.CoreV1().Pods(f.Namespace).Watch(f.Ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion})
	if err != nil {
		f.T.Fatal(err)
	}
	f.T.Cleanup(w.Stop)
	c := &createdPods{selector: selector, before: map[types.UID]bool{}, uids: map[types.UID]bool{}}
	for _, p := range list.Items {
		c.before[p.UID] = true
	}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			c.mu.Lock()
			c.history = append(c.history, fmt.Sprintf("%s %s %s (%s) node=%q phase=%s ready=%t deleting=%t",
				time.Now().Format("15:04:05.000"), ev.Type, p.Name, p.UID, p.Spec.NodeName, p.Status.Phase, framework.PodReady(p), p.DeletionTimestamp != nil))
			if ev.Type == watch.Added && !c.uids[p.UID] {
				c.uids[p.UID] = true
				c.all = append(c.all, fmt.Sprintf("%s (%s)", p.Name, p.UID))
			}
			c.mu.Unlock()
		}
	}()
	return c
}

// quietFor fails the test if a pod is created during the window: a bounded observation
// of nothing happening, the one place a fixed wait is the point.
func (f *env) quietFor(c *createdPods, window time.Duration) {
	f.T.Helper()
	before := c.count()
	select {
	case <-time.After(window):
	case <-f.Ctx.Done():
	}
	if n := c.count(); n != before {
		f.T.Errorf("%d pods created in %s of quiet: %v", n-before, window, c.names()[before:])
	}
}

// decisions reads holdfast_rebalance_decisions_total for an outcome from the operator's
// registry (the operator runs in this process).
func decisions(outcome string) float64 {
	v, _, _ := framework.Metric("holdfast_rebalance_decisions_total", map[string]string{"outcome": outcome})
	return v
}
