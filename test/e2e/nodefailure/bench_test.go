//go:build e2e

package nodefailure

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/test/bench"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// benchWait bounds each phase of the benchmark: past the ~355 s Kubernetes alone takes
// to replace a Deployment's pods, so that both are measured in one run.
const benchWait = 7 * time.Minute

// TestBenchFailure measures the time from a node's crash to full strength per workload,
// Kubernetes alone and with holdfast, in one run on one testbed (make bench-failure):
// a node holding a single replica, one of three web replicas and one of three
// StatefulSet pods of each of two namespaces, one with holdfast's policy and one
// without; then the proof that lets holdfast release the StatefulSet pod; then the
// node's return; then the loss of a whole zone, met within what fits. Figures are printed and written as
// data with their targets (package bench); a missed target fails the run.
func TestBenchFailure(t *testing.T) {
	if os.Getenv("HOLDFAST_BENCH_FAILURE") == "" {
		t.Skip("a benchmark of about 20 minutes: make bench-failure")
	}
	with, alone := setup(t), setupAlone(t)
	with.Settings.Failure.NamespacedFencing = true
	with.StartOperator()
	with.policy(func(s *holdfastv1alpha1.DisruptionPolicySpec) {
		s.NodeFailure = &holdfastv1alpha1.NodeFailureSpec{Fencing: holdfastv1alpha1.FencingVerified}
	})
	victim := with.Nodes[0]
	onVictim := func(spec *corev1.PodSpec) { framework.PreferNodes(spec, corev1.LabelHostname, victim) }
	for _, e := range []*env{with, alone} {
		e.workloads(onVictim, victim)
	}
	var figures []bench.Figure
	for w, l := range with.predict(victim) {
		if l.WithHoldfastSeconds != nil {
			figures = append(figures, bench.Figure{Name: "predicted by plan failure: holdfast " + w, Unit: "s", Value: ptr.To(float64(*l.WithHoldfastSeconds)), Note: l.Response})
		}
	}
	slices.SortFunc(figures, func(a, b bench.Figure) int { return strings.Compare(a.Name, b.Name) })

	// A node dies: each workload's time to full strength, both namespaces in one run.
	crashed := time.Now()
	with.CrashNode(victim)
	times := strength(t, []*env{with, alone}, []string{victim}, benchWait)
	for _, e := range []*env{with, alone} {
		for _, w := range []string{"Deployment/single", "Deployment/web", "StatefulSet/db"} {
			f := bench.Figure{Name: fmt.Sprintf("node crash: %s %s", e.label, w), Unit: "s", Value: since(times[e.Namespace+"/"+w], crashed)}
			if e == with && w != "StatefulSet/db" {
				f = f.AtMost(60)
			}
			if w == "StatefulSet/db" {
				f.Note = "no proof that the node is down given yet"
			}
			figures = append(figures, f)
		}
	}

	// An agent proves the node down: holdfast fences it and the StatefulSet pod starts
	// elsewhere.
	proven := time.Now()
	with.annotateNode(victim, holdfastv1alpha1.NodeDownAnnotation, ptr.To("true"))
	times = strength(t, []*env{with}, []string{victim}, benchWait)
	figures = append(figures, bench.Figure{Name: "proof: holdfast StatefulSet/db after the node-down annotation", Unit: "s", Value: since(times[with.Namespace+"/StatefulSet/db"], proven)}.AtMost(90))
	with.RestoreNode(victim)
	with.annotateNode(victim, holdfastv1alpha1.NodeDownAnnotation, nil)
	with.released(victim)

	// The node dies again and returns while holdfast's surge holds: the surplus goes.
	with.deleteWorkloads()
	with.workloads(onVictim, victim)
	with.CrashNode(victim)
	with.Eventually(benchWait, "holdfast's surge at full strength", func(ctx context.Context) (bool, error) {
		for name, want := range map[string]int32{"single": 2, "web": 4} {
			if n, surged, err := with.replicas(ctx, name); err != nil || n != want || !surged {
				return false, err
			}
		}
		return with.whole(ctx, "app in (single,web)", 4, victim)
	})
	watch := with.WatchBudgets(200 * time.Millisecond)
	restored := time.Now()
	with.RestoreNode(victim)
	with.Eventually(benchWait, "the owners' sizes again, all Ready", func(ctx context.Context) (bool, error) {
		for name, want := range map[string]int32{"single": 1, "web": 3} {
			if n, surged, err := with.replicas(ctx, name); err != nil || n != want || surged {
				return false, err
			}
		}
		return with.whole(ctx, "app in (single,web)", 4, "")
	})
	figures = append(figures, bench.Figure{Name: "node back: holdfast Deployments at their owners' sizes, all Ready", Unit: "s", Value: since(time.Now(), restored)}.AtMost(120))
	if samples, violations := watch.Stop(); len(violations) > 0 {
		t.Errorf("budgets below their floor while the surplus went (%d samples): %v", samples, violations)
	}
	with.released(victim)

	// A whole zone dies: holdfast acts within what fits on the survivors, here all of it.
	zone := with.zoneOf(with.Nodes[2])
	victims := with.zoneNodes(zone)
	for _, e := range []*env{with, alone} {
		e.deleteWorkloads()
		e.workloads(func(spec *corev1.PodSpec) { framework.PreferNodes(spec, corev1.LabelTopologyZone, zone) }, victims...)
	}
	crashed = time.Now()
	for _, n := range victims {
		with.CrashNode(n)
	}
	times = strength(t, []*env{with, alone}, victims, benchWait)
	for _, e := range []*env{with, alone} {
		for _, w := range []string{"Deployment/single", "Deployment/web"} {
			f := bench.Figure{Name: fmt.Sprintf("zone crash (%d of %d nodes): %s %s", len(victims), len(with.Nodes), e.label, w), Unit: "s", Value: since(times[e.Namespace+"/"+w], crashed)}
			if e == with {
				f = f.AtMost(60)
			}
			figures = append(figures, f)
		}
	}
	for _, n := range victims {
		with.RestoreNode(n)
	}
	report(t, figures)
}

// released waits until the node is back and holdfast's taints are off it.
func (e *env) released(node string) {
	e.T.Helper()
	e.Eventually(benchWait, "node "+node+" back without holdfast's taints", func(ctx context.Context) (bool, error) {
		n := &corev1.Node{}
		if err := e.c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return false, err
		}
		return framework.NodeReady(n) && !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
			return t.Key == holdfastv1alpha1.LostTaintKey || t.Key == holdfastv1alpha1.OutOfServiceTaintKey
		}), nil
	})
}

// setupAlone is a namespace that no policy selects: Kubernetes alone.
func setupAlone(t *testing.T) *env {
	t.Helper()
	f := framework.New(t)
	return &env{Framework: f, c: f.HoldfastClient(), label: "Kubernetes alone"}
}

// workloads creates single (1 replica), web (3) and db (a StatefulSet of 3), each
// placed by place, and waits until one pod of each is on one of nodes.
func (e *env) workloads(place func(*corev1.PodSpec), nodes ...string) {
	e.T.Helper()
	single := e.Deployment("single", 1)
	place(&single.Spec.Template.Spec)
	web := e.Deployment("web", 3)
	place(&web.Spec.Template.Spec)
	antiAffinity(&web.Spec.Template.Spec, web.Spec.Selector)
	db := e.StatefulSet("db", 3)
	place(&db.Spec.Template.Spec)
	antiAffinity(&db.Spec.Template.Spec, db.Spec.Selector)
	for _, obj := range []client.Object{single, web, db} {
		e.Create(obj)
	}
	for _, obj := range []client.Object{single, web, db} {
		e.placed(obj, nodes...)
	}
}

// deleteWorkloads deletes single, web and db and waits until they and their pods are
// gone, so that they can be made again under the same names.
func (e *env) deleteWorkloads() {
	e.T.Helper()
	objs := []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: "single"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: "web"}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: "db"}},
	}
	for _, obj := range objs {
		if err := e.c.Delete(e.Ctx, obj, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
			e.T.Fatalf("deleting %s: %v", obj.GetName(), err)
		}
	}
	e.Eventually(benchWait, "the workloads and their pods gone", func(ctx context.Context) (bool, error) {
		for _, obj := range objs {
			if err := e.c.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
				return false, client.IgnoreNotFound(err)
			}
		}
		pods, err := e.Pods(ctx, "app in (single,web,db)")
		return len(pods) == 0, err
	})
}

func antiAffinity(spec *corev1.PodSpec, selector *metav1.LabelSelector) {
	spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector: selector, TopologyKey: corev1.LabelHostname,
	}}}
}

// strength samples the workloads of every env until each is at full strength on nodes
// other than dead, or wait passes, and returns when each first was (absent: never).
func strength(t *testing.T, envs []*env, dead []string, wait time.Duration) map[string]time.Time {
	t.Helper()
	want := map[string]int{"Deployment/single": 1, "Deployment/web": 3, "StatefulSet/db": 3}
	app := map[string]string{"Deployment/single": "single", "Deployment/web": "web", "StatefulSet/db": "db"}
	whole := map[string]time.Time{}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		for _, e := range envs {
			pods, err := e.Pods(e.Ctx, "app in (single,web,db)")
			if err != nil {
				continue
			}
			for w, n := range want {
				key := e.Namespace + "/" + w
				if _, done := whole[key]; done {
					continue
				}
				ready := 0
				for i := range pods {
					p := &pods[i]
					if p.Labels["app"] == app[w] && p.DeletionTimestamp == nil && !slices.Contains(dead, p.Spec.NodeName) && framework.PodReady(p) {
						ready++
					}
				}
				if ready >= n {
					whole[key] = time.Now()
				}
			}
		}
		if len(whole) == len(want)*len(envs) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	return whole
}

// since is the seconds from start to at, nil for a zero at (never).
func since(at, start time.Time) *float64 {
	if at.IsZero() {
		return nil
	}
	s := at.Sub(start).Round(100 * time.Millisecond).Seconds()
	return &s
}

// report prints the figures and writes them as data (package bench).
func report(t *testing.T, figures []bench.Figure) {
	t.Helper()
	r := &bench.Report{Benchmark: "bench-failure", Command: "make bench-failure"}
	for _, f := range figures {
		r.Add(t, f)
	}
	r.Finish(t)
}
