//go:build e2e

// Package clusterautoscaler runs cluster-autoscaler's scale-down (its kwok provider,
// hack/cluster-autoscaler) on the testbed, over a single replica: without holdfast,
// with holdfast's Surge and its hand-off of the node (the pod marked safe to evict by
// holdfast meanwhile), a hand-off cluster-autoscaler declines (a node group at its
// minimum size), and a hand-off whose node's load leaves from another namespace. Each
// run samples the single replica's Ready pods every 200 ms, and the test prints the runs
// side by side.
package clusterautoscaler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

const (
	// podReadyDelay is every pod's start-up: the window a single replica is down for
	// when it is evicted before its replacement is Ready.
	podReadyDelay = 5 * time.Second
	// provision bounds waits for pods whose node cluster-autoscaler must make first.
	provision = 3 * time.Minute
	// scaleDown bounds a scale-down with holdfast: the new pod's start, the recheck of
	// the node cluster-autoscaler found unremovable, its unneeded time, its decision and
	// drain, on a busy machine.
	scaleDown = 6*time.Minute + framework.CARecheck + framework.CAUnneededTime
	// noticeWithin bounds how long after the filler's deletion holdfast starts the
	// hand-off: a third of its 30-second look at a node above the threshold, on a busy
	// machine. It starts on the deletion itself.
	noticeWithin = 10 * time.Second
	// samplePeriod is the ready-pods sampler's period, as in the other e2e packages.
	samplePeriod = 200 * time.Millisecond
	// The node groups of hack/cluster-autoscaler/kwok-provider.yaml.
	general = "general"
	pinned  = "pinned" // one node from the start, never fewer: cluster-autoscaler declines its scale-down
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Nodes: 0, PodReadyDelay: podReadyDelay, ClusterAutoscaler: true})
}

// A node of a single replica falls under cluster-autoscaler's utilisation threshold.
// Without holdfast it removes the node and the replica is at 0 Ready until its
// replacement starts; with holdfast's Surge the budget would keep the node for good, so
// holdfast hands it over (a surge ahead) and the node goes with the replica never at 0
// Ready. Cluster-autoscaler would find the node unremovable at its first look, before
// the surge's new pod is Ready, and look again only after its recheck timeout; holdfast
// marks the pod safe to evict while it hands the node over, so that a look after the
// mark skips the budget, and cluster-autoscaler's eviction waits for the budget instead:
// the node goes at cluster-autoscaler's own pace when holdfast starts the hand-off before
// that first look. The filler's deletion wakes holdfast before the garbage collector has
// deleted the filler's pod, which holdfast then counts as leaving, so the hand-off starts
// at once; that is asserted (within a third of its 30-second look at such a node). The
// node's removal time is printed, not asserted: the machine is shared, and
// cluster-autoscaler may still scan between the pod's going and the mark, a moment.
// Where cluster-autoscaler declines the node, the surge ends at its deadline, the mark
// goes, and the hand-off is not repeated before the back-off.
//
// A pod whose template the user marked safe to evict is not run here: cluster-autoscaler
// sees it as it sees holdfast's mark, and that holdfast leaves a user's annotation alone
// is a unit test's (internal/policy).
func TestScaleDown(t *testing.T) {
	without := scenario(t, "without holdfast", setup{group: general})
	with := scenario(t, "with holdfast", setup{holdfast: true, group: general})
	declined := scenario(t, "with holdfast, declined", setup{holdfast: true, group: pinned})
	report(t, column{"without holdfast", false, without}, column{"with holdfast (Surge)", true, with},
		column{"with holdfast, declined (group at its minimum)", true, declined})
	t.Logf("holdfast's status while surging: %s", with.surging)
	t.Logf("holdfast's status after the declined hand-off: %s", declined.after)
	if without.lowest != 0 {
		t.Errorf("without holdfast the single replica never went to 0 Ready (lowest %d): the scenario proves nothing", without.lowest)
	}
	if !without.removed || !with.removed {
		t.Errorf("the node was not removed: without holdfast %t, with %t", without.removed, with.removed)
	}
	if with.lowest < 1 {
		t.Errorf("with holdfast the single replica went to 0 Ready for %s", with.zeroFor)
	}
	// holdfast notices the node under the threshold on the filler's deletion, not at its
	// 30-second look.
	for _, c := range []column{{"with holdfast", true, with}, {"declined", true, declined}} {
		if c.surged == 0 || c.surged > noticeWithin {
			t.Errorf("%s: the extra pod was asked for %s after the filler's deletion (0: never), want within %s", c.heading, c.surged, noticeWithin)
		}
	}
	if !with.marked || !declined.marked {
		t.Errorf("the single replica's pod marked safe to evict by holdfast during the hand-off: %t with holdfast, %t declined; want both", with.marked, declined.marked)
	}
	if declined.removed {
		t.Error("cluster-autoscaler removed the node of a node group at its minimum size: the declined scenario proves nothing")
	}
	if declined.lowest < 1 {
		t.Errorf("in the declined hand-off the single replica went to 0 Ready for %s", declined.zeroFor)
	}
	// Each hand-off's end is measured, by its outcome.
	for _, outcome := range []string{"taken", "declined"} {
		labels := map[string]string{"autoscaler": "cluster-autoscaler", "outcome": outcome}
		if n, _, err := framework.Metric("holdfast_disruptionpolicy_handoff_duration_seconds", labels); err != nil || n < 1 {
			t.Errorf("holdfast_disruptionpolicy_handoff_duration_seconds%v: %g observations (%v), want at least 1", labels, n, err)
		}
	}
	// One hand-off each: the declined one is not repeated before its back-off, and the
	// surge it made is gone (the scenario waited for 1 replica).
	if with.handOffs != "1" || declined.handOffs != "1" {
		t.Errorf("hand-offs recorded: %q with holdfast, %q declined; want 1 each", with.handOffs, declined.handOffs)
	}
	if !with.tainted || !declined.tainted {
		t.Errorf("holdfast's hand-off taint seen during the surge: %t with holdfast, %t declined; want both", with.tainted, declined.tainted)
	}
	if declined.stayed && !strings.Contains(declined.after, "no new hand-off of that node before") {
		t.Errorf("after the declined hand-off, status does not say when the next may come: %q", declined.after)
	}
}

// The filler is another namespace's: its deletion is no change of the policy's
// namespace, and its pod's going sends no event either. holdfast records the workloads on
// the single replica's node while it is above the threshold, and the filler's deletion
// wakes the policy all the same: the hand-off starts at once, not at holdfast's
// 30-second look.
func TestScaleDownFromAnotherNamespace(t *testing.T) {
	with := scenario(t, "with holdfast, the filler in another namespace", setup{holdfast: true, group: general, fillerElsewhere: true})
	report(t, column{"with holdfast (Surge), the filler in another namespace", true, with})
	if !with.removed || with.lowest < 1 {
		t.Errorf("the node removed: %t; the single replica's fewest Ready %d (0 for %s)", with.removed, with.lowest, with.zeroFor)
	}
	if with.surged == 0 || with.surged > noticeWithin {
		t.Errorf("the extra pod was asked for %s after the filler's deletion (0: never), want within %s", with.surged, noticeWithin)
	}
	if !with.marked {
		t.Error("the single replica's pod not marked safe to evict by holdfast during the hand-off")
	}
}

// A single replica that would fit on no other node: cluster-autoscaler could not remove
// its node whatever the budget allows, and a surge's new pod would land on the node
// itself (or stay Pending and make cluster-autoscaler add a node). holdfast leaves the
// node alone and says why: no surge, no Pending pod, the node kept.
func TestNoRoomNoHandOff(t *testing.T) {
	r := &run{Framework: framework.New(t)}
	t.Cleanup(r.emptyCluster)
	r.withHoldfast()
	filler := r.deployment("filler", "2900m", general, nil)
	r.waitReady(filler)
	r.single = r.deployment("single", "1", general, nil)
	r.waitReady(r.single)
	node := r.nodeOf(r.single)
	// The only other node of the group keeps 3.6 of its 4 CPUs: no room for the single
	// replica once its node goes.
	keeper := r.deployment("keeper", "3600m", general, func(d *appsv1.Deployment) {
		d.Spec.Template.Annotations = map[string]string{"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
	})
	r.waitReady(keeper)
	r.WaitBudget("holdfast-deploy-single", 0)
	if err := r.Client.Delete(r.Ctx, filler); err != nil {
		t.Fatalf("deleting the filler: %v", err)
	}
	var msg, surged string
	r.Eventually(scaleDown, "status to say the pods of node "+node+" fit nowhere else", func(ctx context.Context) (bool, error) {
		var out outcome
		extra, m, ok := r.follow(ctx, &out)
		if !ok {
			return false, nil
		}
		msg = m
		if extra != 0 || out.handOffs != "" {
			surged = fmt.Sprintf("%d extra pods, %s hand-offs", extra, out.handOffs)
			return true, nil
		}
		if !strings.Contains(m, "would find no room elsewhere for the pods of node "+node) {
			return false, fmt.Errorf("status says %q", m)
		}
		return true, nil
	})
	if surged != "" {
		t.Fatalf("holdfast surged ahead of node %s though its pods fit nowhere else: %s, status %q", node, surged, msg)
	}
	t.Logf("holdfast's status: %s", msg)
	if !strings.Contains(msg, "single") {
		t.Errorf("status does not name the pod that fits nowhere: %q", msg)
	}
	if _, err := r.Clientset.CoreV1().Nodes().Get(r.Ctx, node, metav1.GetOptions{}); err != nil {
		t.Errorf("node %s: %v", node, err)
	}
	if r.handOffTainted(r.Ctx, node) {
		t.Errorf("node %s carries holdfast's hand-off taint, with no hand-off", node)
	}
	pods, err := r.Clientset.CoreV1().Pods(r.Namespace).List(r.Ctx, metav1.ListOptions{FieldSelector: "status.phase=Pending"})
	if err != nil || len(pods.Items) > 0 {
		t.Errorf("Pending pods: %d, %v", len(pods.Items), err)
	}
}

// outcome is what one run measured.
type outcome struct {
	node    string        // the single replica's node when the filler went
	removed bool          // whether cluster-autoscaler removed it
	took    time.Duration // from the filler's deletion to the node gone, or the surge over
	// surged and opened are the times from the filler's deletion to the first extra pod
	// the surge set asks for, and to the single replica's budget first allowing an
	// eviction; 0 when not seen.
	surged, opened time.Duration
	samples        int
	lowest         int
	zeroFor        time.Duration
	// handOffs is the hand-off annotation's count at the end; status the single
	// replica's status message while it surged, and after.
	handOffs       string
	surging, after string
	// stayed says the single replica is still on the declined node once the surge is over.
	stayed bool
	// tainted says the node carried holdfast's hand-off taint while it surged, and
	// marked that the single replica's pod there carried holdfast's safe-to-evict.
	tainted, marked bool
}

// run is one scenario's namespace and workloads.
type run struct {
	*framework.Framework
	hc     client.Client // knows holdfast's types; nil without holdfast
	single *appsv1.Deployment
	// start is when the scenario deleted the filler.
	start time.Time
}

// setup is what a scenario runs: with holdfast or not, and the node group of the single
// replica's first node.
type setup struct {
	holdfast bool
	group    string
	// fillerElsewhere puts the filler in a namespace of its own.
	fillerElsewhere bool
}

// scenario puts the single replica on a node of s.group together with a filler (the
// pinned group's one node, or a new one of the general group), and a
// keeper that cluster-autoscaler may not evict on a node of its own with room for the
// single replica; then deletes the filler, which leaves the single replica's node at a
// quarter of its CPU, and follows what happens to that node.
func scenario(t *testing.T, name string, s setup) outcome {
	var out outcome
	holdfast, group := s.holdfast, s.group
	ok := t.Run(name, func(t *testing.T) {
		r := &run{Framework: framework.New(t)}
		t.Cleanup(r.emptyCluster)
		if holdfast {
			r.withHoldfast()
		}
		// 3.9 of the node's 4 CPUs; 1 without the filler, under half.
		fillers := r
		if s.fillerElsewhere {
			fillers = &run{Framework: framework.New(t)}
		}
		filler := fillers.deployment("filler", "2900m", group, nil)
		fillers.waitReady(filler)
		// The single replica may run in either group, and move to the keeper's node.
		r.single = r.deployment("single", "1", "", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: framework.CANodeGroupLabel, Operator: corev1.NodeSelectorOpIn, Values: slices.Compact([]string{general, group})}},
				}}},
			}}
		})
		r.waitReady(r.single)
		out.node = r.nodeOf(r.single)
		// No room left next to them: cluster-autoscaler makes a node for it, which it may
		// never remove.
		keeper := r.deployment("keeper", "500m", general, func(d *appsv1.Deployment) {
			d.Spec.Template.Annotations = map[string]string{"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
		})
		r.waitReady(keeper)
		if holdfast {
			r.WaitBudget("holdfast-deploy-single", 0)
		}
		watch := r.WatchReady(framework.SelectorOf(r.single), samplePeriod)
		start := time.Now()
		r.start = start
		if err := r.Client.Delete(r.Ctx, filler); err != nil {
			t.Fatalf("deleting the filler: %v", err)
		}
		if group == pinned {
			r.Eventually(scaleDown, "the declined hand-off of node "+out.node+" to end", func(ctx context.Context) (bool, error) {
				extra, msg, ok := r.follow(ctx, &out)
				if !ok {
					return false, nil
				}
				r.budgetOpen(ctx, &out)
				if extra == 0 && out.surging != "" && !strings.Contains(msg, "extra pod ahead of") {
					return true, nil
				}
				// Said if the wait times out.
				return false, fmt.Errorf("%d extra pods, seen surging %t, status %q", extra, out.surging != "", msg)
			})
			t.Logf("the declined hand-off ended %s after the filler's deletion", time.Since(start).Round(time.Second))
			_, err := r.Clientset.CoreV1().Nodes().Get(r.Ctx, out.node, metav1.GetOptions{})
			out.removed = apierrors.IsNotFound(err)
		} else {
			r.Eventually(scaleDown, "cluster-autoscaler to remove node "+out.node, func(ctx context.Context) (bool, error) {
				if holdfast {
					r.follow(ctx, &out)
					r.budgetOpen(ctx, &out)
				}
				_, err := r.Clientset.CoreV1().Nodes().Get(ctx, out.node, metav1.GetOptions{})
				return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
			})
			out.removed = true
		}
		out.took = time.Since(start)
		r.WaitReadyWithin(provision, r.single)
		out.samples, _, out.lowest = watch.Stop()
		out.zeroFor = watch.LongestZero()
		if holdfast {
			r.Eventually(provision, "the single replica back to 1 replica", func(ctx context.Context) (bool, error) {
				extra, msg, ok := r.follow(ctx, &out)
				out.after = msg
				return ok && extra == 0, nil
			})
			if !out.removed {
				r.Eventually(provision, "holdfast's hand-off taint off node "+out.node, func(ctx context.Context) (bool, error) {
					return !r.handOffTainted(ctx, out.node), nil
				})
				// The surge is over, and stays so: no hand-off of the node before the back-off.
				r.Eventually(provision, "a status that says why the surge ended", func(ctx context.Context) (bool, error) {
					_, out.after, _ = r.follow(ctx, &out)
					pods, err := r.Pods(ctx, framework.SelectorOf(r.single))
					if err != nil || len(pods) != 1 || pods[0].DeletionTimestamp != nil {
						return false, nil
					}
					// The extra pod goes; the single replica stays on the declined node
					// unless something evicted it meanwhile.
					out.stayed = pods[0].Spec.NodeName == out.node
					return !out.stayed || strings.Contains(out.after, "no new hand-off of that node before"), nil
				})
				// The hand-off is over: holdfast's safe-to-evict goes, or cluster-autoscaler
				// would pass the pod's budget for good.
				r.Eventually(provision, "holdfast's safe-to-evict off the single replica's pod", func(ctx context.Context) (bool, error) {
					pods, err := r.Pods(ctx, framework.SelectorOf(r.single))
					if err != nil {
						return false, err
					}
					for _, p := range pods {
						if _, ok := p.Annotations[holdfastv1alpha1.SafeToEvictByAnnotation]; ok {
							return false, fmt.Errorf("pod %s: %v", p.Name, p.Annotations)
						}
					}
					return true, nil
				})
			}
		}
	})
	if !ok {
		t.FailNow()
	}
	return out
}

// follow reads how many extra pods the single replica's surge set asks for and its
// status message, and records the hand-off count and the message while it surges; ok
// is false when they could not be read.
func (r *run) follow(ctx context.Context, out *outcome) (extra int32, msg string, ok bool) {
	extra, handOff, err := r.Extra(ctx, r.single)
	if err != nil {
		return 0, "", false
	}
	if fields := strings.Fields(handOff); len(fields) >= 3 {
		out.handOffs = fields[2]
	}
	if extra > 0 && out.surged == 0 {
		out.surged = time.Since(r.start)
	}
	if extra > 0 && !out.tainted {
		out.tainted = r.handOffTainted(ctx, out.node)
	}
	if extra > 0 && !out.marked {
		out.marked = r.markedSafe(ctx, out.node)
	}
	p := &holdfastv1alpha1.DisruptionPolicy{}
	if err := r.hc.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: "single"}, p); err != nil {
		return extra, "", true
	}
	for _, w := range p.Status.Workloads {
		if w.Name != "single" {
			continue
		}
		if w.State == holdfastv1alpha1.WorkloadSurging && out.surging == "" {
			out.surging = w.Message
		}
		return extra, w.Message, true
	}
	return extra, "", true
}

// budgetOpen records in out.opened when the single replica's budget first allows an
// eviction.
func (r *run) budgetOpen(ctx context.Context, out *outcome) {
	if out.opened != 0 {
		return
	}
	b, err := r.Clientset.PolicyV1().PodDisruptionBudgets(r.Namespace).Get(ctx, "holdfast-deploy-single", metav1.GetOptions{})
	if err == nil && b.Status.DisruptionsAllowed > 0 {
		out.opened = time.Since(r.start)
	}
}

// markedSafe reports whether the single replica's own pod on node (not the surge's)
// carries cluster-autoscaler's safe-to-evict "true" with holdfast's mark naming the policy.
func (r *run) markedSafe(ctx context.Context, node string) bool {
	pods, err := r.Pods(ctx, framework.SelectorOf(r.single))
	if err != nil {
		return false
	}
	return slices.ContainsFunc(pods, func(p corev1.Pod) bool {
		return p.Spec.NodeName == node && p.Labels[holdfastv1alpha1.SurgeOfLabel] == "" &&
			p.Annotations[availability.AnnotationSafeToEvict] == "true" && p.Annotations[holdfastv1alpha1.SafeToEvictByAnnotation] == "single"
	})
}

// handOffTainted reports whether node carries holdfast's hand-off taint.
func (r *run) handOffTainted(ctx context.Context, node string) bool {
	n, err := r.Clientset.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	return err == nil && slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == holdfastv1alpha1.HandOffTaintKey })
}

// withHoldfast starts holdfast's operator and creates the DisruptionPolicy of the
// issue's measurements over the single replica: maxUnavailable 1, Surge.
func (r *run) withHoldfast() {
	r.T.Helper()
	r.hc = r.Holdfast(&holdfastv1alpha1.DisruptionPolicyList{})
	r.StartOperator()
	if err := r.hc.Create(r.Ctx, r.TierPolicy("single", holdfastv1alpha1.SingleReplicaSurge)); err != nil {
		r.T.Fatalf("creating DisruptionPolicy single: %v", err)
	}
}

// deployment creates a Deployment of one replica whose pod requests cpu, on group's
// nodes ("" for any).
func (r *run) deployment(name, cpu, group string, mod func(*appsv1.Deployment)) *appsv1.Deployment {
	r.T.Helper()
	var nodes map[string]string
	if group != "" {
		nodes = map[string]string{framework.CANodeGroupLabel: group}
	}
	d := r.Sized(name, 1, cpu, nodes)
	if mod != nil {
		mod(d)
	}
	r.Create(d)
	return d
}

func (r *run) waitReady(d *appsv1.Deployment) {
	r.T.Helper()
	r.WaitReadyWithin(provision, d)
}

// nodeOf returns the node of d's only pod.
func (r *run) nodeOf(d *appsv1.Deployment) string {
	r.T.Helper()
	pods, err := r.Pods(r.Ctx, framework.SelectorOf(d))
	if err != nil || len(pods) != 1 {
		r.T.Fatalf("the pods of %s: %d, %v", d.Name, len(pods), err)
	}
	return pods[0].Spec.NodeName
}

// emptyCluster deletes the scenario's Deployments and waits until cluster-autoscaler
// has removed the nodes it may remove (all but the pinned group's last), so that the
// next scenario starts from an empty cluster.
func (r *run) emptyCluster() {
	// The test's context is done by now: cleanups have their own.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := r.Clientset.AppsV1().Deployments(r.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		r.T.Errorf("deleting the Deployments of %s: %v", r.Namespace, err)
	}
	if err := r.Clientset.CoreV1().Pods(r.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil {
		r.T.Errorf("deleting the pods of %s: %v", r.Namespace, err)
	}
	start := time.Now()
	for {
		nodes, err := r.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: framework.CANodeGroupLabel + "=" + general})
		if err == nil && len(nodes.Items) == 0 {
			r.T.Logf("cluster-autoscaler removed the empty nodes of group %s in %s", general, time.Since(start).Round(time.Second))
			return
		}
		select {
		case <-ctx.Done():
			var left []string
			if nodes != nil {
				for _, n := range nodes.Items {
					left = append(left, fmt.Sprintf("%s (taints %v, unschedulable %t)", n.Name, n.Spec.Taints, n.Spec.Unschedulable))
				}
			}
			r.T.Errorf("cluster-autoscaler did not remove the empty nodes of group %s: %v; left %v", general, ctx.Err(), left)
			return
		case <-time.After(time.Second):
		}
	}
}

// column is one run in the report: its heading and what it measured.
type column struct {
	heading  string
	holdfast bool
	outcome
}

// report prints the runs side by side, as the README's autoscaler section shows them.
func report(t *testing.T, runs ...column) {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	row := func(what string, cell func(column) string) {
		fmt.Fprint(tw, what)
		for _, c := range runs {
			fmt.Fprint(tw, "\t"+cell(c))
		}
		fmt.Fprintln(tw)
	}
	round := func(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }
	seen := func(d time.Duration) string {
		if d == 0 {
			return "not seen"
		}
		return "after " + round(d)
	}
	row("scale-down of a single replica's node", func(c column) string { return c.heading })
	row("the node", func(c column) string {
		if c.removed {
			return "removed after " + round(c.took)
		}
		return "kept; surge over after " + round(c.took)
	})
	row("single replica: fewest Ready, longest at 0", func(c column) string {
		return fmt.Sprintf("%d, %s", c.lowest, round(c.zeroFor))
	})
	row("extra pod asked for; budget allows 1", func(c column) string {
		if !c.holdfast {
			return "-"
		}
		return seen(c.surged) + "; " + seen(c.opened)
	})
	row("pod marked safe to evict by holdfast", func(c column) string {
		if !c.holdfast {
			return "-"
		}
		return fmt.Sprint(c.marked)
	})
	row("hand-offs recorded", func(c column) string {
		if !c.holdfast {
			return "-"
		}
		return c.handOffs
	})
	row("single replica once the surge is over", func(c column) string {
		if c.stayed {
			return "on the declined node"
		}
		return "on the keeper's node"
	})
	row(fmt.Sprintf("samples every %s", samplePeriod), func(c column) string { return fmt.Sprint(c.samples) })
	tw.Flush()
	t.Log("\n" + b.String())
}
