package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

var zones = []string{"a", "b", "c"}

// zoned is a 9-replica StatefulSet, db, with one pod on each of 9 nodes, 3 per zone,
// under a zone-aware policy with a per-zone limit; every pod Ready for an hour and
// without the zone label, as while no zone is disrupted.
type zoned struct {
	o Observed
	w Workload
}

func newZoned(limit intstr.IntOrString) *zoned {
	return newZonedKind(holdfastv1alpha1.KindStatefulSet, limit)
}

// newZonedKind is newZoned's cluster with db of kind.
func newZonedKind(kind string, limit intstr.IntOrString) *zoned {
	p := policy("quorum", time.Hour, func(s *holdfastv1alpha1.DisruptionPolicySpec) {
		s.ZoneAware = &holdfastv1alpha1.ZoneAwareSpec{MaxUnavailable: limit}
	})
	w := workload(kind, "db", 9)
	w.Ready, w.Available = 9, 9
	z := &zoned{w: w, o: Observed{Policy: &p, Policies: []holdfastv1alpha1.DisruptionPolicy{p}, Now: now,
		Pods: map[string][]Pod{}, Nodes: map[string]*corev1.Node{}, Failure: FailureSettings{NamespacedFencing: true}}}
	z.o.Workloads = []Workload{w}
	for i := range 9 {
		zone := zones[i/3]
		n := node(fmt.Sprintf("%s-%d", zone, i%3), false)
		n.Labels = map[string]string{holdfastv1alpha1.DefaultZoneTopologyKey: zone}
		z.o.Nodes[n.Name] = n
		z.o.Pods[z.key()] = append(z.o.Pods[z.key()],
			Pod{Name: fmt.Sprintf("db-%d", i), Node: n.Name, Ready: true, Since: now.Add(-time.Hour), Created: now.Add(-time.Hour)})
	}
	return z
}

func (z *zoned) key() string { return WorkloadKey(z.w.Kind, z.w.Name) }

// lose makes node lost: its Lease two minutes old. Its pods still say Ready, as they do
// until Kubernetes marks them not Ready.
func (z *zoned) lose(node string) {
	h := &z.o.Health
	if h.Suspects == nil {
		h.Zones, h.Suspects = map[string]int{"a": 3, "b": 3, "c": 3}, map[string]Suspect{}
	}
	h.Suspects[node] = Suspect{Zone: node[:1], Renewed: z.o.Now.Add(-2 * time.Minute), LeaseDuration: 40 * time.Second}
}

func (z *zoned) pod(name string) *Pod {
	pods := z.o.Pods[z.key()]
	return &pods[slices.IndexFunc(pods, func(p Pod) bool { return p.Name == name })]
}

func (z *zoned) cordon(node string) { z.o.Nodes[node].Spec.Unschedulable = true }

// evicted writes the idle budget, with pod listed in its status.disruptedPods as the
// Eviction API lists a pod it let go at.
func (z *zoned) evicted(pod string, at time.Time) {
	z.apply(Decide(z.o))
	b := &z.o.Budgets[slices.IndexFunc(z.o.Budgets, func(b policyv1.PodDisruptionBudget) bool { return b.Name == idleBudget })]
	b.Status.DisruptedPods = map[string]metav1.Time{pod: metav1.NewTime(at)}
}

// apply makes the budgets and pod labels d decides the existing ones, as the
// reconciler writes them.
func (z *zoned) apply(d Decision) {
	for _, w := range zonedWrites(d) {
		z.o.Budgets, z.o.Pods[z.key()] = w(z.o.Budgets, z.o.Pods[z.key()])
	}
}

// settle decides and applies as the reconciler does, woken by its own writes, until a
// pass changes no budget and no label, and returns the passes' decisions.
func (z *zoned) settle(t *testing.T) []Decision {
	t.Helper()
	state := func() string { return fmt.Sprint(shape(z.o.Budgets), z.o.Pods[z.key()]) }
	var out []Decision
	for range 4 {
		before := state()
		d := Decide(z.o)
		z.apply(d)
		out = append(out, d)
		if state() == before {
			return out
		}
	}
	t.Fatalf("budgets and labels still change after %d passes: %v", len(out), shape(z.o.Budgets))
	return nil
}

// write is one of the reconciler's writes: a budget's, or a pod's label.
type write func([]policyv1.PodDisruptionBudget, []Pod) ([]policyv1.PodDisruptionBudget, []Pod)

// zonedWrites are d's writes in the reconciler's order.
func zonedWrites(d Decision) []write {
	var out []write
	for _, e := range d.Effects {
		out = append(out, func(budgets []policyv1.PodDisruptionBudget, pods []Pod) ([]policyv1.PodDisruptionBudget, []Pod) {
			switch e := e.(type) {
			case PodZone:
				if i := slices.IndexFunc(pods, func(p Pod) bool { return p.Name == e.Pod }); i >= 0 { // else gone: the patch finds no pod
					pods = slices.Clone(pods)
					pods[i].Zone = e.Zone
				}
			case ApplyBudget:
				budgets = writeBudget(budgets, e.Budget)
			case DeleteBudget:
				budgets = slices.DeleteFunc(slices.Clone(budgets), func(c policyv1.PodDisruptionBudget) bool { return c.Name == e.Budget.Name })
			}
			return budgets, pods
		})
	}
	return out
}

// writeBudget writes b's spec and metadata; its status stays the disruption
// controller's.
func writeBudget(budgets []policyv1.PodDisruptionBudget, b *policyv1.PodDisruptionBudget) []policyv1.PodDisruptionBudget {
	w := *b.DeepCopy()
	if cur := existingBudget(budgets, b.Name); cur != nil {
		w.Status = *cur.Status.DeepCopy()
	}
	out := slices.DeleteFunc(slices.Clone(budgets), func(c policyv1.PodDisruptionBudget) bool { return c.Name == b.Name })
	return append(out, w)
}

// shape describes budgets by name: "max=N", "min=N", with "*" for the active zone.
func shape(budgets []policyv1.PodDisruptionBudget) map[string]string {
	out := map[string]string{}
	for _, b := range budgets {
		s := ""
		if m := b.Spec.MaxUnavailable; m != nil {
			s = "max=" + m.String()
		} else if m := b.Spec.MinAvailable; m != nil {
			s = "min=" + m.String()
		}
		if n, ok := b.Annotations[holdfastv1alpha1.ZoneActiveAnnotation]; ok {
			s += " *" + n
		}
		out[b.Name] = s
	}
	return out
}

// zoneLabels are the zone labels d sets; unlabelled the pods whose label it removes.
func zoneLabels(d Decision) []PodZone {
	var out []PodZone
	for _, z := range EffectsOf[PodZone](d.Effects) {
		if z.Zone != "" {
			out = append(out, z)
		}
	}
	return out
}

func unlabelled(d Decision) []string {
	var out []string
	for _, z := range EffectsOf[PodZone](d.Effects) {
		if z.Zone == "" {
			out = append(out, z.Pod)
		}
	}
	return out
}

func names(budgets []*policyv1.PodDisruptionBudget) []string {
	var out []string
	for _, b := range budgets {
		out = append(out, b.Name)
	}
	return out
}

const (
	idleBudget = "holdfast-sts-db"
	zoneA      = "holdfast-sts-db-a"
	zoneB      = "holdfast-sts-db-b"
	zoneC      = "holdfast-sts-db-c"
)

// The life of a zone-aware workload through a drain of zone a, a failure in zone b, and
// a drain of zone b queued behind zone a's: each step's budgets and order of writes.
func TestZoneTransitions(t *testing.T) {
	z := newZoned(intstr.FromInt32(3))
	step := func(name string, wantShape map[string]string, wantApply, wantDelete []string) Decision {
		t.Helper()
		d := Decide(z.o)
		if diff := cmp.Diff(wantApply, names(resultOf(d).Apply)); diff != "" {
			t.Errorf("%s: order of writes (-want +got):\n%s", name, diff)
		}
		if diff := cmp.Diff(wantDelete, slices.Sorted(slices.Values(resultOf(d).Delete))); diff != "" {
			t.Errorf("%s: deletions (-want +got):\n%s", name, diff)
		}
		z.apply(d)
		if diff := cmp.Diff(wantShape, shape(z.o.Budgets)); diff != "" {
			t.Errorf("%s: budgets (-want +got):\n%s", name, diff)
		}
		return d
	}

	step("idle", map[string]string{idleBudget: "max=1"}, []string{idleBudget}, nil)

	z.cordon("a-0")
	closing := map[string]string{zoneA: "max=0 *3", zoneB: "max=0", zoneC: "max=0", idleBudget: "max=0"}
	// Every write tightens: the zones' budgets are created over no pod (none is labelled
	// yet), the idle budget held at 0; the pods are labelled into them after. Zone a
	// stays shut: an eviction the idle budget let through after this pass read it would
	// go unseen.
	step("a-0 cordoned: zone a chosen, the idle budget closed first", closing, []string{idleBudget, zoneA, zoneB, zoneC}, nil)
	held := map[string]string{zoneA: "min=0 *3", zoneB: "max=0", zoneC: "max=0", idleBudget: "max=0"}
	step("the idle budget read closed: zone a opens", held, []string{idleBudget, zoneB, zoneC, zoneA}, nil)

	// a-0's pod evicted, its replacement not scheduled yet: the zone keeps its size.
	pods := z.o.Pods[z.key()]
	z.o.Pods[z.key()] = append(slices.Clone(pods[1:]), Pod{Name: "db-0", Since: now})
	z.cordon("b-0") // a drain of zone b queues
	step("a draining, b cordoned: a stays", held, []string{idleBudget, zoneA, zoneB, zoneC}, nil)

	z.pod("db-4").Ready = false
	step("a pod of zone b fails: a held too", map[string]string{zoneA: "max=0 *3", zoneB: "max=0", zoneC: "max=0", idleBudget: "max=0"},
		[]string{idleBudget, zoneA, zoneB, zoneC}, nil)

	z.pod("db-4").Ready = true
	z.pod("db-4").Since = now
	z.o.Nodes["a-0"].Spec.Unschedulable = false
	z.o.Pods[z.key()] = append(slices.Clone(pods[:1]), z.o.Pods[z.key()][:8]...)
	z.pod("db-0").Since = now.Add(-10 * time.Second)
	// Zone a opens again last.
	d := step("a whole but not settled: a stays open", held, []string{idleBudget, zoneB, zoneC, zoneA}, nil)
	if d.RequeueAfter != 20*time.Second {
		t.Errorf("requeue after %v, want 20s: when zone a settles", d.RequeueAfter)
	}

	z.o.Now = now.Add(time.Minute)
	// Zone a is closed in one pass, zone b opened in the next.
	step("a settled, b cordoned: b chosen, a closed first", map[string]string{zoneA: "max=0", zoneB: "max=0 *3", zoneC: "max=0", idleBudget: "max=0"},
		[]string{idleBudget, zoneA, zoneB, zoneC}, nil)
	step("zone a read closed: b opens", map[string]string{zoneA: "max=0", zoneB: "min=0 *3", zoneC: "max=0", idleBudget: "max=0"},
		[]string{idleBudget, zoneA, zoneC, zoneB}, nil)

	z.o.Nodes["b-0"].Spec.Unschedulable = false
	z.o.Now = now.Add(time.Hour)
	// The pods are unlabelled, back under the idle budget, and zone b closed; the idle
	// budget loosens in the next pass. The zones' budgets are deleted once no pod is seen
	// under them, so that no eviction in flight under one finds it gone.
	step("b settled: idle again, b closed first", map[string]string{idleBudget: "max=0", zoneA: "max=0", zoneB: "max=0", zoneC: "max=0"}, []string{idleBudget, zoneB}, nil)
	step("no pod labelled, every zone closed: the idle budget opens, the zones' budgets deleted", map[string]string{idleBudget: "max=1"}, []string{idleBudget}, []string{zoneA, zoneB, zoneC})
}

// windowed gives z's policy a window open from 11:00 to 13:00 each day: open at now.
func (z *zoned) windowed() {
	z.o.Policy.Spec.MaintenanceWindows = []holdfastv1alpha1.MaintenanceWindow{window("0 11 * * *", 2*time.Hour, "")}
	z.o.Policies = []holdfastv1alpha1.DisruptionPolicy{*z.o.Policy}
}

// A maintenance window that closes while zone a is disrupted holds every budget at zero
// in the shape they have: no budget deleted, no pod's label moved (every pod stays under
// one budget), the zone chosen remembered; it settles in one pass. When the window opens
// again, zone a opens where it was.
func TestZoneWindowClosesMidTransition(t *testing.T) {
	z := newZoned(intstr.FromInt32(3))
	z.windowed()
	z.apply(Decide(z.o))
	z.cordon("a-0")
	z.settle(t)
	open := map[string]string{zoneA: "min=0 *3", zoneB: "max=0", zoneC: "max=0", idleBudget: "max=0"}
	if diff := cmp.Diff(open, shape(z.o.Budgets)); diff != "" {
		t.Fatalf("zone a chosen, window open (-want +got):\n%s", diff)
	}

	z.o.Now = now.Add(90 * time.Minute) // 13:30: the window has closed
	d := Decide(z.o)
	if len(resultOf(d).Delete) > 0 || len(unlabelled(d)) > 0 || len(zoneLabels(d)) > 0 {
		t.Errorf("closing the window deletes %v, unlabels %v, labels %v: want budgets held as they are", resultOf(d).Delete, unlabelled(d), zoneLabels(d))
	}
	z.apply(d)
	held := map[string]string{zoneA: "max=0 *3", zoneB: "max=0", zoneC: "max=0", idleBudget: "max=0"}
	if diff := cmp.Diff(held, shape(z.o.Budgets)); diff != "" {
		t.Errorf("window closed (-want +got):\n%s", diff)
	}
	for _, p := range z.o.Pods[z.key()] {
		if n := len(budgetsCovering(z.o.Budgets, p)); n != 1 || allowedFor(z.o.Budgets, p, z.o.Pods[z.key()]) != 0 {
			t.Errorf("window closed: pod %s under %d budgets, allowed %d: want one budget, allowing 0", p.Name, n, allowedFor(z.o.Budgets, p, z.o.Pods[z.key()]))
		}
	}
	if st := Decide(z.o).Status.Workloads[0]; st.Message != msgHeld(now.Add(23*time.Hour)) || st.Budget != zoneA || st.Zone != "a" {
		t.Errorf("window closed: status %q on %s, zone %q, want the window's hold on %s, zone a", st.Message, st.Budget, st.Zone, zoneA)
	}
	again := Decide(z.o)
	z.apply(again)
	if diff := cmp.Diff(held, shape(z.o.Budgets)); diff != "" || len(resultOf(again).Delete)+len(unlabelled(again))+len(zoneLabels(again)) > 0 {
		t.Errorf("window closed, a second pass changes budgets (-want +got):\n%s, deletes %v, labels %v %v", diff, resultOf(again).Delete, unlabelled(again), zoneLabels(again))
	}

	z.o.Now = now.Add(23*time.Hour + 30*time.Minute) // 11:30 the next day: open again
	z.apply(Decide(z.o))
	if diff := cmp.Diff(open, shape(z.o.Budgets)); diff != "" {
		t.Errorf("window open again, a-0 still cordoned (-want +got):\n%s", diff)
	}
}

// status.workloads names the zone being disrupted, and lists that workload before the
// quiet ones: the list is capped, and the zone's Events are derived from it.
func TestZoneInStatus(t *testing.T) {
	z := newZoned(intstr.FromInt32(3))
	agent := workload(holdfastv1alpha1.KindDaemonSet, "agent", 9)
	z.o.Workloads = append(z.o.Workloads, agent)
	z.apply(Decide(z.o))
	z.cordon("b-1")
	z.settle(t)
	st := Decide(z.o).Status.Workloads
	if len(st) != 2 || st[0].Name != "db" || st[0].Zone != "b" || st[1].Zone != "" {
		t.Errorf("status.workloads %+v: want db first, zone b, then agent without a zone", st)
	}
}

func TestZoneChoice(t *testing.T) {
	cases := map[string]struct {
		limit       intstr.IntOrString
		settle      *metav1.Duration
		mod         func(z *zoned)
		want        map[string]string
		wantZone    []PodZone
		wantUnlabel []string
	}{
		"percentage of the zone, rounded up": {
			limit: intstr.FromString("34%"), mod: func(z *zoned) { z.cordon("c-2") },
			want: map[string]string{zoneA: "max=0", zoneB: "max=0", zoneC: "min=1 *3", idleBudget: "max=0"},
		},
		"a zone with a pod not Ready wins over a cordoned one": {
			limit: intstr.FromInt32(1), mod: func(z *zoned) { z.cordon("a-1"); z.pod("db-5").Ready = false },
			want: map[string]string{zoneA: "max=0", zoneB: "min=2 *3", zoneC: "max=0", idleBudget: "max=0"},
		},
		"two zones with pods not Ready: the first by name, held": {
			limit: intstr.FromInt32(3), mod: func(z *zoned) { z.pod("db-7").Ready = false; z.pod("db-5").Ready = false },
			want: map[string]string{zoneA: "max=0", zoneB: "max=0 *3", zoneC: "max=0", idleBudget: "max=0"},
		},
		"a pod Ready for less than the settle time": {
			limit: intstr.FromInt32(3), settle: &metav1.Duration{Duration: 5 * time.Minute}, mod: func(z *zoned) { z.pod("db-8").Since = now.Add(-time.Minute) },
			want: map[string]string{zoneA: "max=0", zoneB: "max=0", zoneC: "min=0 *3", idleBudget: "max=0"},
		},
		"a pod evicted before a zone was chosen: every zone held until it is back": {
			limit: intstr.FromInt32(3), mod: func(z *zoned) {
				z.cordon("c-0")
				z.o.Pods[z.key()] = slices.DeleteFunc(z.o.Pods[z.key()], func(p Pod) bool { return p.Name == "db-1" })
			},
			want: map[string]string{zoneA: "max=0", zoneB: "max=0", zoneC: "max=0 *3", idleBudget: "max=0"},
		},
		"a pod evicted under the recorded sizes: its zone is chosen, and open": {
			limit: intstr.FromInt32(3), mod: func(z *zoned) {
				z.apply(Decide(z.o))
				if got := z.o.Budgets[0].Annotations[holdfastv1alpha1.ZoneSizesAnnotation]; got != "a=3,b=3,c=3" {
					t.Errorf("sizes recorded %q, want a=3,b=3,c=3", got)
				}
				z.cordon("c-0")
				z.o.Pods[z.key()] = slices.DeleteFunc(z.o.Pods[z.key()], func(p Pod) bool { return p.Name == "db-1" })
			},
			want: map[string]string{zoneA: "min=0 *3", zoneB: "max=0", zoneC: "max=0", idleBudget: "max=0"},
		},
		"a zone chosen that lost nothing gives way to one that lost a pod": {
			limit: intstr.FromInt32(3), mod: func(z *zoned) {
				z.apply(Decide(z.o))
				z.cordon("a-0")
				z.apply(Decide(z.o))
				// evicted under the idle budget while zone a was being chosen
				z.o.Pods[z.key()] = slices.DeleteFunc(z.o.Pods[z.key()], func(p Pod) bool { return p.Name == "db-4" })
			},
			want: map[string]string{zoneA: "max=0", zoneB: "min=0 *3", zoneC: "max=0", idleBudget: "max=0"},
		},
		"every pod of the chosen zone evicted: its budget stays, and the zone chosen": {
			limit: intstr.FromInt32(3), mod: func(z *zoned) {
				z.apply(Decide(z.o))
				z.cordon("a-0")
				z.apply(Decide(z.o))
				z.o.Pods[z.key()] = slices.DeleteFunc(z.o.Pods[z.key()], func(p Pod) bool { return p.Node[:1] == "a" })
			},
			want: map[string]string{zoneA: "min=0 *3", zoneB: "max=0", zoneC: "max=0", idleBudget: "max=0"},
		},
		"a pod its budget lists as evicted counts as not Ready: its zone is chosen": {
			limit: intstr.FromInt32(3), mod: func(z *zoned) { z.evicted("db-1", now) },
			want: map[string]string{zoneA: "min=0 *3", zoneB: "max=0", zoneC: "max=0", idleBudget: "max=0"},
		},
		"a pod made again under the name of one evicted before it is not": {
			limit: intstr.FromInt32(3), mod: func(z *zoned) { z.evicted("db-1", now.Add(-2*time.Hour)) },
			want: map[string]string{idleBudget: "max=1"},
		},
		"a Karpenter taint disturbs the zone": {
			limit: intstr.FromInt32(2), mod: func(z *zoned) {
				z.o.Nodes["b-1"].Spec.Taints = []corev1.Taint{{Key: "karpenter.sh/disrupted", Effect: corev1.TaintEffectNoSchedule}}
			},
			want: map[string]string{zoneA: "max=0", zoneB: "min=1 *3", zoneC: "max=0", idleBudget: "max=0"},
		},
		"no zone disrupted: the labels removed, every pod under the workload's budget": {
			limit: intstr.FromInt32(3), mod: func(z *zoned) { z.pod("db-0").Zone = "a"; z.pod("db-8").Zone = "old" },
			want:        map[string]string{idleBudget: "max=1"},
			wantUnlabel: []string{"db-0", "db-8"},
		},
		"a zone disrupted: every pod labelled with its zone": {
			limit: intstr.FromInt32(3), mod: func(z *zoned) { z.cordon("a-0"); z.pod("db-0").Zone = "a"; z.pod("db-8").Zone = "old" },
			want: map[string]string{zoneA: "min=0 *3", zoneB: "max=0", zoneC: "max=0", idleBudget: "max=0"},
			wantZone: []PodZone{{Pod: "db-1", Zone: "a"}, {Pod: "db-2", Zone: "a"}, {Pod: "db-3", Zone: "b"}, {Pod: "db-4", Zone: "b"},
				{Pod: "db-5", Zone: "b"}, {Pod: "db-6", Zone: "c"}, {Pod: "db-7", Zone: "c"}, {Pod: "db-8", Zone: "c"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			z := newZoned(tc.limit)
			z.o.Policy.Spec.ZoneAware.SettleTime = tc.settle
			tc.mod(z)
			before := z.o.Policies[0].DeepCopy()
			var labelled []PodZone
			var unlabel []string
			for _, d := range z.settle(t) {
				labelled, unlabel = append(labelled, zoneLabels(d)...), append(unlabel, unlabelled(d)...)
			}
			if diff := cmp.Diff(tc.want, shape(z.o.Budgets)); diff != "" {
				t.Errorf("budgets (-want +got):\n%s", diff)
			}
			if tc.wantZone != nil || tc.wantUnlabel != nil {
				if diff := cmp.Diff(tc.wantZone, labelled); diff != "" {
					t.Errorf("pod labels (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.wantUnlabel, unlabel); diff != "" {
					t.Errorf("pod labels removed (-want +got):\n%s", diff)
				}
			}
			if !equality.Semantic.DeepEqual(before, &z.o.Policies[0]) {
				t.Error("Decide modified its input")
			}
		})
	}
}

// zoneTransition brings the budgets of newZoned's cluster to a start, then changes
// the cluster so that a transition is due.
type zoneTransition struct {
	name string
	from []func(z *zoned) // each followed by the reconciles it wakes
	to   func(z *zoned)
}

func zoneTransitions() []zoneTransition {
	settled := func(z *zoned) { z.o.Now = z.o.Now.Add(time.Hour) }
	cordonA := []func(z *zoned){func(z *zoned) { z.cordon("a-0") }}
	return []zoneTransition{
		{"idle to zone a", nil, func(z *zoned) { z.cordon("a-0") }},
		{"zone a to zone b", cordonA, func(z *zoned) {
			z.o.Nodes["a-0"].Spec.Unschedulable = false
			z.cordon("b-2")
			settled(z)
		}},
		{"zone a to idle", cordonA, func(z *zoned) { z.o.Nodes["a-0"].Spec.Unschedulable = false; settled(z) }},
		{"zone a open to held", cordonA, func(z *zoned) { z.pod("db-8").Ready = false }},
		{"zone a held to open", append(cordonA, func(z *zoned) { z.pod("db-8").Ready = false }), func(z *zoned) { z.pod("db-8").Ready = true }},
		{"zone a open, window closes", append([]func(z *zoned){(*zoned).windowed}, cordonA...), func(z *zoned) { z.o.Now = now.Add(90 * time.Minute) }},
		{"zone a held by the window, window opens", append([]func(z *zoned){(*zoned).windowed}, append(cordonA, func(z *zoned) { z.o.Now = now.Add(90 * time.Minute) })...),
			func(z *zoned) { z.o.Now = now.Add(23*time.Hour + 30*time.Minute) }},
		{"idle, window closes", []func(z *zoned){(*zoned).windowed}, func(z *zoned) { z.o.Now = now.Add(90 * time.Minute) }},
		{"idle, a node of zone a lost", nil, func(z *zoned) { z.lose("a-0") }},
		{"zone a open, a node of zone b lost", cordonA, func(z *zoned) { z.lose("b-1") }},
		{"zone a lost, its pod marked not Ready", []func(z *zoned){func(z *zoned) { z.lose("a-0") }}, func(z *zoned) { z.pod("db-0").Ready = false }},
	}
}

// start is newZoned's cluster brought to tr's start, with tr's change made.
func (tr zoneTransition) start(t *testing.T) *zoned {
	z := newZoned(intstr.FromInt32(3))
	z.apply(Decide(z.o))
	for _, f := range tr.from {
		f(z)
		z.settle(t)
	}
	tr.to(z)
	return z
}

// Whatever prefix of a transition's writes (budgets and pod labels) is done when the
// operator stops, every pod is under exactly one budget, no pod may be disrupted more
// than at one end or the other, and no two zones may lose a pod each.
func TestZoneWritesCrashSafe(t *testing.T) {
	for _, tr := range zoneTransitions() {
		t.Run(tr.name, func(t *testing.T) {
			z := tr.start(t)
			start, startPods := slices.Clone(z.o.Budgets), slices.Clone(z.o.Pods[z.key()])
			type state struct {
				budgets []policyv1.PodDisruptionBudget
				pods    []Pod
			}
			var steps []state
			cur := state{start, startPods}
			for _, w := range zonedWrites(Decide(z.o)) {
				cur.budgets, cur.pods = w(cur.budgets, cur.pods)
				steps = append(steps, cur)
			}
			if equality.Semantic.DeepEqual(shape(start), shape(cur.budgets)) {
				t.Fatalf("no transition: budgets stay %v", shape(cur.budgets))
			}
			for i, s := range steps {
				for j, p := range s.pods {
					if n := len(budgetsCovering(s.budgets, p)); n != 1 {
						// Under two, the Eviction API fails its evictions (500), which
						// kubectl drain does not retry; under none, nothing protects it.
						t.Errorf("after write %d of %d, pod %s (label %q) is under %d budgets, want 1: %v", i+1, len(steps), p.Name, p.Zone, n, shape(s.budgets))
						continue
					}
					got := allowedFor(s.budgets, p, s.pods)
					lim := max(allowedFor(start, startPods[j], startPods), allowedFor(cur.budgets, cur.pods[j], cur.pods))
					if got > lim {
						t.Errorf("after write %d of %d, pod %s may be disrupted %d times, more than at either end (%d): %v", i+1, len(steps), p.Name, got, lim, shape(s.budgets))
					}
				}
				if z1, z2, ok := crossZone(s.budgets, s.pods); ok {
					t.Errorf("after write %d of %d, zones %s and %s may both lose a pod: %v", i+1, len(steps), z1, z2, shape(s.budgets))
				}
			}
		})
	}
}

// An eviction the budgets allowed when a pass read them, accepted while that pass's
// writes go out, never lets a second zone open beside the one it took a pod from: not
// with those writes, nor with the passes after, which see it, as the pod gone or as the
// pod still listed, Ready, in the budget's status.disruptedPods.
func TestZoneEvictionBetweenReadAndWrite(t *testing.T) {
	for _, tr := range zoneTransitions() {
		for _, listed := range []bool{false, true} {
			z0 := tr.start(t)
			for _, p := range z0.o.Pods[z0.key()] {
				z := tr.start(t)
				if allowedFor(z.o.Budgets, p, z.o.Pods[z.key()]) == 0 || len(downZones(z)) > 0 {
					continue // no eviction to race, or a zone down already: a second is not holdfast's doing
				}
				t.Run(fmt.Sprintf("%s/%s evicted, still listed %v", tr.name, p.Name, listed), func(t *testing.T) {
					d := Decide(z.o)
					if listed {
						b := &z.o.Budgets[slices.IndexFunc(z.o.Budgets, func(b policyv1.PodDisruptionBudget) bool { return b.Name == budgetsCovering(z.o.Budgets, p)[0].Name })]
						b.Status.DisruptedPods = map[string]metav1.Time{p.Name: metav1.NewTime(z.o.Now)}
					} else {
						z.o.Pods[z.key()] = slices.DeleteFunc(z.o.Pods[z.key()], func(q Pod) bool { return q.Name == p.Name })
					}
					for pass := range 3 {
						z.apply(d)
						for _, q := range z.o.Pods[z.key()] {
							if q.Node[:1] != p.Node[:1] && allowedFor(z.o.Budgets, q, z.o.Pods[z.key()]) > 0 {
								t.Fatalf("after pass %d, %s of zone %s may be disrupted while %s of zone %s is: %v", pass+1, q.Name, q.Node[:1], p.Name, p.Node[:1], shape(z.o.Budgets))
							}
						}
						d = Decide(z.o)
					}
				})
			}
		}
	}
}

// downZones are the zones with a pod not Ready or on a lost node.
func downZones(z *zoned) []string {
	var out []string
	for _, p := range z.o.Pods[z.key()] {
		if _, lost := z.o.Health.Suspects[p.Node]; !p.Ready || lost {
			out = append(out, p.Node[:1])
		}
	}
	return out
}

// budgetsCovering are the budgets over pod p, found by their selectors as the Eviction API does.
func budgetsCovering(budgets []policyv1.PodDisruptionBudget, p Pod) []policyv1.PodDisruptionBudget {
	set := labels.Set{"app": "db"}
	if p.Zone != "" {
		set[holdfastv1alpha1.ZoneLabel] = p.Zone
	}
	var out []policyv1.PodDisruptionBudget
	for _, b := range budgets {
		if sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector); err == nil && sel.Matches(set) {
			out = append(out, b)
		}
	}
	return out
}

// allowedFor is how many disruptions the budget over p allows, as the disruption
// controller counts them: 0 under two budgets (the Eviction API refuses), 100 under none.
func allowedFor(budgets []policyv1.PodDisruptionBudget, p Pod, pods []Pod) int32 {
	c := budgetsCovering(budgets, p)
	switch len(c) {
	case 0:
		return 100
	case 1:
	default:
		return 0
	}
	b := c[0]
	var healthy, matched int32
	for _, q := range pods {
		if len(budgetsCovering([]policyv1.PodDisruptionBudget{b}, q)) == 1 {
			matched++
			if q.Ready {
				healthy++
			}
		}
	}
	// maxUnavailable counts against the StatefulSet's scale, minAvailable against the
	// pods the budget selects.
	desired := int32(9) - ptr.Deref(b.Spec.MaxUnavailable, intstr.FromInt32(9)).IntVal
	if m := b.Spec.MinAvailable; m != nil {
		desired = m.IntVal
	}
	return max(0, healthy-desired)
}

// crossZone finds two zones that may each lose a pod at once: under two budgets that
// both allow one, or under one that allows two.
func crossZone(budgets []policyv1.PodDisruptionBudget, pods []Pod) (string, string, bool) {
	for _, p := range pods {
		for _, q := range pods {
			if p.Node == "" || q.Node == "" || p.Node[:1] >= q.Node[:1] || allowedFor(budgets, p, pods) == 0 || allowedFor(budgets, q, pods) == 0 {
				continue
			}
			bp, bq := budgetsCovering(budgets, p), budgetsCovering(budgets, q)
			if bp[0].Name != bq[0].Name || allowedFor(budgets, p, pods) >= 2 {
				return p.Node[:1], q.Node[:1], true
			}
		}
	}
	return "", "", false
}

// A node without the topology label neither freezes the zones nor hides: its pod is
// counted in no zone, not missing, so a zone disrupted for a drain is whole again once
// the drain is over; and the status names it.
func TestNodeWithoutZoneLabel(t *testing.T) {
	z := newZoned(intstr.FromInt32(1))
	z.o.Nodes["c-2"].Labels = nil
	z.cordon("a-0")
	z.apply(Decide(z.o))
	z.apply(Decide(z.o))
	st := Decide(z.o).Status.Workloads[0]
	if st.Zone != "a" {
		t.Fatalf("zone %q disrupted for the drain of a-0, want a", st.Zone)
	}
	if !strings.Contains(st.Message, "db-8 runs on nodes without the label "+holdfastv1alpha1.DefaultZoneTopologyKey) {
		t.Errorf("status %q does not name the pod on the node without a zone", st.Message)
	}
	z.o.Nodes["a-0"].Spec.Unschedulable = false
	z.o.Now = now.Add(time.Hour)
	for range 3 {
		z.apply(Decide(z.o))
	}
	if st := Decide(z.o).Status.Workloads[0]; st.Zone != "" {
		t.Errorf("zone %q still disrupted an hour after the drain: %s", st.Zone, st.Message)
	}
}

// While a node is lost the budgets stay zone-aware: its zone is the one disrupted, its
// pods count as not Ready although their status still says Ready (the disruption
// controller counts them healthy, so the zone's floor is raised by them), every other
// zone is held, and status keeps saying why the workload is Recovering.
func TestZoneAwareWhileRecovering(t *testing.T) {
	cases := map[string]struct {
		kind  string
		limit int32
		mod   func(z *zoned)
		want  map[string]string
		zone  string
		surge bool
	}{
		"a StatefulSet's node lost, its pod still Ready": {
			kind: holdfastv1alpha1.KindStatefulSet, limit: 2, mod: func(z *zoned) { z.lose("a-0") }, zone: "a",
			want: map[string]string{zoneA: "min=2 *3", zoneB: "max=0", zoneC: "max=0", idleBudget: "max=0"},
		},
		"a StatefulSet's node lost, its pod marked not Ready": {
			kind: holdfastv1alpha1.KindStatefulSet, limit: 2, mod: func(z *zoned) { z.lose("a-0"); z.pod("db-0").Ready = false }, zone: "a",
			want: map[string]string{zoneA: "min=1 *3", zoneB: "max=0", zoneC: "max=0", idleBudget: "max=0"},
		},
		"zone a draining, a node of zone b lost: b chosen, a held": {
			kind: holdfastv1alpha1.KindStatefulSet, limit: 1, mod: func(z *zoned) { z.cordon("a-0"); z.lose("b-1") }, zone: "b",
			want: map[string]string{zoneA: "max=0", zoneB: "min=3 *3", zoneC: "max=0", idleBudget: "max=0"},
		},
		"zone a lost a pod to a drain, a node of zone b lost: every zone held": {
			kind: holdfastv1alpha1.KindStatefulSet, limit: 1, zone: "a",
			mod: func(z *zoned) {
				z.cordon("a-0")
				z.apply(Decide(z.o)) // the idle budget closed
				z.apply(Decide(z.o)) // zone a open
				z.o.Pods[z.key()] = slices.DeleteFunc(z.o.Pods[z.key()], func(p Pod) bool { return p.Name == "db-0" })
				z.lose("b-1")
			},
			want: map[string]string{zoneA: "max=0 *3", zoneB: "max=0", zoneC: "max=0", idleBudget: "max=0"},
		},
		"a Deployment's node lost: surged, zone-aware": {
			kind: holdfastv1alpha1.KindDeployment, limit: 1, mod: func(z *zoned) { z.lose("a-0") }, zone: "a", surge: true,
			want: map[string]string{"holdfast-deploy-db-a": "min=3 *3", "holdfast-deploy-db-b": "max=0", "holdfast-deploy-db-c": "max=0", "holdfast-deploy-db": "max=0"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			z := newZonedKind(tc.kind, intstr.FromInt32(tc.limit))
			z.apply(Decide(z.o))
			tc.mod(z)
			passes := z.settle(t)
			d := passes[len(passes)-1]
			if diff := cmp.Diff(tc.want, shape(z.o.Budgets)); diff != "" {
				t.Errorf("budgets (-want +got):\n%s", diff)
			}
			st := d.Status.Workloads[0]
			if st.State != holdfastv1alpha1.WorkloadRecovering || st.Zone != tc.zone || !strings.Contains(st.Message, "lost node") ||
				!strings.Contains(st.Message, "zone "+tc.zone+" is being disrupted") {
				t.Errorf("status %s, zone %q, %q: want Recovering, zone %s, the lost node and the zone named", st.State, st.Zone, st.Message, tc.zone)
			}
			if got := len(EffectsOf[Surge](d.Effects)) > 0; got != tc.surge {
				t.Errorf("surged %v, want %v: %v", got, tc.surge, EffectsOf[Surge](d.Effects))
			}
		})
	}
}

// A surge keeps the budgets zone-aware: the zone being drained is the one disrupted,
// sized by the Deployment's own pods; the surge set's pods get no zone label, so they
// stay under the workload's budget, and every other zone is held.
func TestZoneAwareWhileSurging(t *testing.T) {
	z := newZonedKind(holdfastv1alpha1.KindDeployment, intstr.FromInt32(1))
	z.apply(Decide(z.o))
	z.cordon("a-0")
	extra := pod("holdfast-surge-db-x", "b-1", true, time.Minute)
	extra.Surge = true
	z.o.Workloads[0] = surged(z.o.Workloads[0], 1, extra)
	z.o.Workloads[0].Surge.Policy = z.o.Policy.Name
	passes := z.settle(t)
	d := passes[len(passes)-1]
	want := map[string]string{"holdfast-deploy-db-a": "min=2 *3", "holdfast-deploy-db-b": "max=0", "holdfast-deploy-db-c": "max=0", "holdfast-deploy-db": "max=0"}
	if diff := cmp.Diff(want, shape(z.o.Budgets)); diff != "" {
		t.Errorf("budgets (-want +got):\n%s", diff)
	}
	for _, l := range EffectsOf[PodZone](d.Effects) {
		if l.Pod == extra.Name {
			t.Errorf("the surge set's pod is labelled %q, want it left under the workload's budget", l.Zone)
		}
	}
	if s := EffectsOf[Surge](d.Effects); len(s) > 0 {
		t.Errorf("surge changed to %+v, want it kept at 1", s)
	}
	st := d.Status.Workloads[0]
	if st.State != holdfastv1alpha1.WorkloadSurging || st.Zone != "a" || st.Budget != "holdfast-deploy-db-a" ||
		!strings.Contains(st.Message, "a-0") || !strings.Contains(st.Message, "zone a is being disrupted") {
		t.Errorf("status %s, zone %q, budget %s, %q: want Surging for a-0's drain, zone a on its budget", st.State, st.Zone, st.Budget, st.Message)
	}
}
