package plan_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
)

var web = availability.WorkloadRef{Kind: snapshot.KindDeployment, Namespace: "shop", Name: "web"}

// six returns nodes n1..n6 in zone-a, zone-b, zone-c in turn.
func six() *snapshottest.Cluster { return cluster("n1", "n2", "n3", "n4", "n5", "n6") }

// applyMove does what the eviction and the scheduler would: the pod goes and a
// replacement of another name runs where the simulation said.
func applyMove(t *testing.T, s *snapshot.Snapshot, mv *plan.RebalanceMove, replacement string) {
	t.Helper()
	i := slices.IndexFunc(s.Pods, func(p corev1.Pod) bool { return p.Namespace == mv.Namespace && p.Name == mv.Pod })
	if i < 0 {
		t.Fatalf("no pod %s/%s", mv.Namespace, mv.Pod)
	}
	s.Pods[i].Name = replacement
	s.Pods[i].Spec.NodeName = mv.To
}

// perNode counts the workload's pods per node, in node order.
func perNode(s *snapshot.Snapshot, prefix string) []int {
	var out []int
	for _, n := range s.Nodes {
		count := 0
		for _, p := range s.Pods {
			if strings.HasPrefix(p.Name, prefix) && p.Spec.NodeName == n.Name {
				count++
			}
		}
		out = append(out, count)
	}
	return out
}

// converge runs Rebalance, applying each move, until it stops moving; it returns the
// moves and the final decision.
func converge(t *testing.T, s *snapshot.Snapshot, target plan.RebalanceTarget) ([]plan.RebalanceMove, plan.Rebalancing) {
	t.Helper()
	var moves []plan.RebalanceMove
	for i := range 10 {
		r := plan.Rebalance(s, now, target)
		if r.Outcome != plan.RebalanceEvict {
			return moves, r
		}
		moves = append(moves, *r.Move)
		applyMove(t, s, r.Move, fmt.Sprintf("web-new-%d", i))
		target.LastPod, target.LastMove = r.Move.Pod, now.Add(-time.Hour)
	}
	t.Fatalf("no end to the moves: %+v", moves)
	return nil, plan.Rebalancing{}
}

// After a node crash its replicas pile onto one node, and the scheduler never moves them.
// Each decision moves one pod to a node without one; once spread, nothing moves.
func TestRebalancePiledReplicas(t *testing.T) {
	c := six()
	c.Deployment("shop", "web", app("web"), []string{"n1", "n1", "n1"})
	c.PDB("shop", "web", app("web"), snapshottest.MaxUnavailable(intstr.FromInt32(1)))
	moves, last := converge(t, c.Snapshot, plan.RebalanceTarget{Workload: web})
	if len(moves) != 2 {
		t.Fatalf("moves = %+v, want 2", moves)
	}
	for _, mv := range moves {
		if mv.From != "n1" || mv.To == "n1" || mv.Key != corev1.LabelHostname || mv.ToCount != 0 {
			t.Errorf("move %+v: want one from n1 to a node without a pod", mv)
		}
	}
	if moves[0].FromCount != 3 || moves[1].FromCount != 2 {
		t.Errorf("source counts %d, %d; want 3 then 2", moves[0].FromCount, moves[1].FromCount)
	}
	if last.Outcome != plan.RebalanceBalanced {
		t.Errorf("after the moves: %s %q, want Balanced", last.Outcome, last.Message)
	}
	if got := perNode(c.Snapshot, "web-"); slices.Max(got) != 1 {
		t.Errorf("pods per node %v, want at most 1", got)
	}
	// The first decision's message says what moves, from where, to where, and why.
	first := six()
	first.Deployment("shop", "web", app("web"), []string{"n1", "n1", "n1"})
	r := plan.Rebalance(first.Snapshot, now, plan.RebalanceTarget{Workload: web})
	want := "kubernetes.io/hostname: 3 to 0 pods over 6 eligible domains (skew 3, max 1): pod web-rs-0 moves from kubernetes.io/hostname=n1 (3 pods) to kubernetes.io/hostname=n2 (0 pods), expected on node n2"
	if r.Message != want {
		t.Errorf("message:\n got %q\nwant %q", r.Message, want)
	}
}

// TestRebalanceOutcomes covers each reason to move or not, descheduler's eviction loops
// among them: a pod that can only land where it was, a constraint of the workload's
// own, more replicas than nodes.
func TestRebalanceOutcomes(t *testing.T) {
	onlyN1 := func(d *appsv1.Deployment) { d.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"} }
	tests := map[string]struct {
		build  func(c *snapshottest.Cluster)
		target plan.RebalanceTarget
		want   plan.RebalanceOutcome
		// moves is how many moves converge makes from there, checked when want is Evict.
		moves int
		// message must appear in the decision's message.
		message string
	}{
		"replicas greater than nodes, spread as well as they can be": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "web", app("web"), []string{"n1", "n1", "n2", "n3", "n4", "n5", "n6"})
			},
			want:    plan.RebalanceBalanced,
			message: "2 to 1 pods over 6 eligible domains (skew 1, max 1)",
		},
		"replicas greater than nodes, one node crowded": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "web", app("web"), []string{"n1", "n1", "n1", "n2", "n3", "n4", "n5", "n6"})
			},
			want: plan.RebalanceEvict, moves: 1,
		},
		"maintenance planned on every other node: none is a target, as if cordoned": {
			build: func(c *snapshottest.Cluster) {
				for _, n := range []string{"n2", "n3", "n4", "n5", "n6"} {
					node(c, n).Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMaintenancePlanned, Status: corev1.ConditionTrue}}
				}
				c.Deployment("shop", "web", app("web"), []string{"n1", "n1", "n1"})
			},
			want:    plan.RebalanceBalanced,
			message: "3 to 3 pods over 1 eligible domains",
		},
		"maintenance no longer planned (False): a target again": {
			build: func(c *snapshottest.Cluster) {
				for _, n := range []string{"n2", "n3", "n4", "n5", "n6"} {
					node(c, n).Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMaintenancePlanned, Status: corev1.ConditionFalse}}
				}
				c.Deployment("shop", "web", app("web"), []string{"n1", "n1", "n1"})
			},
			want: plan.RebalanceEvict, moves: 2,
		},
		"nodeSelector to one node: balanced over the nodes it can run on": {
			build: func(c *snapshottest.Cluster) {
				node(c, "n1").Labels["disk"] = "ssd"
				c.Deployment("shop", "web", app("web"), []string{"n1", "n1", "n1"}, onlyN1)
			},
			want:    plan.RebalanceBalanced,
			message: "3 to 3 pods over 1 eligible domains",
		},
		"only lands where it was: the other nodes are full": {
			build: func(c *snapshottest.Cluster) {
				allocatable(c, "1", "110", "n1", "n2", "n3", "n4", "n5", "n6")
				c.Deployment("shop", "fill", app("fill"), []string{"n2", "n3", "n4", "n5", "n6"}, requestCPU("800m"))
				c.Deployment("shop", "web", app("web"), []string{"n1", "n1", "n1"}, requestCPU("300m"))
			},
			want:    plan.RebalanceNoBetterPlace,
			message: "pod web-rs-0 would land where it is, on n1",
		},
		"the only emptier node is full: a move would only swap the crowded node": {
			build: func(c *snapshottest.Cluster) {
				allocatable(c, "1", "110", "n1", "n2", "n3", "n4", "n5", "n6")
				c.Deployment("shop", "fill", app("fill"), []string{"n3", "n4", "n5", "n6"}, requestCPU("950m"))
				c.Deployment("shop", "web", app("web"), []string{"n1", "n1", "n1", "n2", "n2"}, requestCPU("100m"))
				// Another pod on n1 makes n2 the emptier of the two.
				c.Pod("shop", "debug", app("debug"), "n1")
			},
			want:    plan.RebalanceNoBetterPlace,
			message: "would land on n2 (kubernetes.io/hostname=n2, 2 pods), no better",
		},
		"required anti-affinity against another workload: it would come back": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "db", app("db"), []string{"n2", "n3", "n4", "n5", "n6"})
				c.Deployment("shop", "web", app("web"), []string{"n1", "n1", "n1"}, antiAffinity(corev1.LabelHostname, "db"))
			},
			want:    plan.RebalanceNoBetterPlace,
			message: "would land where it is",
		},
		"node affinity to 2 of 6 nodes: skew counted over those two": {
			build: func(c *snapshottest.Cluster) {
				for _, n := range []string{"n1", "n2"} {
					node(c, n).Labels["disk"] = "ssd"
				}
				c.Deployment("shop", "web", app("web"), []string{"n1", "n1", "n2", "n2"}, onlyN1)
			},
			want:    plan.RebalanceBalanced,
			message: "2 to 2 pods over 2 eligible domains",
		},
		"node affinity to 2 of 6 nodes, 3 on one": {
			build: func(c *snapshottest.Cluster) {
				for _, n := range []string{"n1", "n2"} {
					node(c, n).Labels["disk"] = "ssd"
				}
				c.Deployment("shop", "web", app("web"), []string{"n1", "n1", "n1", "n2"}, onlyN1)
			},
			want: plan.RebalanceEvict, moves: 1,
		},
		"required hostname anti-affinity of its own: one per node already": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "web", app("web"), []string{"n1", "n2", "n3"}, antiAffinity(corev1.LabelHostname, "web"))
			},
			target: plan.RebalanceTarget{TopologyKeys: []string{corev1.LabelHostname, corev1.LabelTopologyZone}},
			want:   plan.RebalanceBalanced,
		},
		"zones: two in zone-a, none in zone-c": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "web", app("web"), []string{"n1", "n4", "n2"})
			},
			target: plan.RebalanceTarget{TopologyKeys: []string{corev1.LabelHostname, corev1.LabelTopologyZone}},
			want:   plan.RebalanceEvict, moves: 1,
		},
		"DoNotSchedule zone spread of its own and a cordoned zone": {
			build: func(c *snapshottest.Cluster) {
				// zone-c's nodes are cordoned but count as domains of the spread (with 0
				// pods): an evicted pod's replacement would stay Pending, so none is moved.
				node(c, "n3").Spec.Unschedulable = true
				node(c, "n6").Spec.Unschedulable = true
				c.Deployment("shop", "web", app("web"), []string{"n1", "n1", "n2", "n2"}, spread(corev1.LabelTopologyZone, "web", false))
			},
			want:    plan.RebalanceNoBetterPlace,
			message: "pod web-rs-0's replacement fits nowhere: 0/6 nodes are available: 2 cordoned or being drained, 4 refused by a topology spread constraint",
		},
		"single replica": {
			build:   func(c *snapshottest.Cluster) { c.Deployment("shop", "web", app("web"), []string{"n1"}) },
			want:    plan.RebalanceSingleReplica,
			message: "1 replica",
		},
		"budget at zero": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "web", app("web"), []string{"n1", "n1", "n1"})
				c.PDB("shop", "web", app("web"), snapshottest.MinAvailable(intstr.FromInt32(3)))
			},
			want:    plan.RebalanceBudgetExhausted,
			message: "the Eviction API would refuse it: PodDisruptionBudget shop/web (minAvailable 3) wants 3 healthy of 3 expected pods, so it never allows an eviction",
		},
		"two budgets": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "web", app("web"), []string{"n1", "n1", "n1"})
				c.PDB("shop", "web", app("web"), snapshottest.MaxUnavailable(intstr.FromInt32(1)))
				c.PDB("shop", "web-too", app("web"), snapshottest.MaxUnavailable(intstr.FromInt32(1)))
			},
			want:    plan.RebalanceBudgetExhausted,
			message: "covered by 2 PodDisruptionBudgets (shop/web, shop/web-too)",
		},
		"a replica not Ready": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "web", app("web"), []string{"n1", "n1", "n1"})
				c.SetReady("shop", "web-rs-2", false)
			},
			want:    plan.RebalanceSettling,
			message: "3 pods, 3 placed, 2 Ready, 3 wanted",
		},
		"a replica Pending": {
			build: func(c *snapshottest.Cluster) { c.Deployment("shop", "web", app("web"), []string{"n1", "n1", ""}) },
			want:  plan.RebalanceSettling,
		},
		"in the cooldown": {
			build:   func(c *snapshottest.Cluster) { c.Deployment("shop", "web", app("web"), []string{"n1", "n1", "n1"}) },
			target:  plan.RebalanceTarget{Cooldown: time.Minute, LastMove: now.Add(-20 * time.Second), LastPod: "web-old"},
			want:    plan.RebalanceCooldown,
			message: "last move 20s ago (pod web-old), cooldown 1m0s",
		},
		"after the cooldown": {
			build:  func(c *snapshottest.Cluster) { c.Deployment("shop", "web", app("web"), []string{"n1", "n1", "n1"}) },
			target: plan.RebalanceTarget{Cooldown: time.Minute, LastMove: now.Add(-time.Minute), LastPod: "web-old"},
			want:   plan.RebalanceEvict, moves: 2,
		},
		"a DaemonSet": {
			build:  func(c *snapshottest.Cluster) { c.DaemonSet("shop", "web", app("web"), []string{"n1", "n2"}) },
			target: plan.RebalanceTarget{Workload: availability.WorkloadRef{Kind: snapshot.KindDaemonSet, Namespace: "shop", Name: "web"}},
			want:   plan.RebalanceUnsupported,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			c := six()
			tt.build(c)
			target := tt.target
			if target.Workload == (availability.WorkloadRef{}) {
				target.Workload = web
			}
			r := plan.Rebalance(c.Snapshot, now, target)
			if r.Outcome != tt.want || !strings.Contains(r.Message, tt.message) {
				t.Fatalf("got %s %q, want %s containing %q", r.Outcome, r.Message, tt.want, tt.message)
			}
			if tt.want == plan.RebalanceCooldown && r.Wait != 40*time.Second {
				t.Errorf("wait %s, want 40s", r.Wait)
			}
			if tt.want != plan.RebalanceEvict {
				if r.Move != nil {
					t.Errorf("a move %+v with outcome %s", r.Move, r.Outcome)
				}
				return
			}
			moves, last := converge(t, c.Snapshot, target)
			if len(moves) != tt.moves || last.Outcome != plan.RebalanceBalanced {
				t.Errorf("converged with %d moves (%+v) to %s %q; want %d moves, then Balanced", len(moves), moves, last.Outcome, last.Message, tt.moves)
			}
		})
	}
}

// The pod moved last is not picked again next, even where it is the first candidate.
func TestRebalanceNeverTheSamePodTwice(t *testing.T) {
	c := six()
	c.Deployment("shop", "web", app("web"), []string{"n1", "n1", "n1"})
	first := plan.Rebalance(c.Snapshot, now, plan.RebalanceTarget{Workload: web})
	if first.Move == nil || first.Move.Pod != "web-rs-0" {
		t.Fatalf("first decision %s %q, want web-rs-0 to move", first.Outcome, first.Message)
	}
	next := plan.Rebalance(c.Snapshot, now, plan.RebalanceTarget{Workload: web, LastPod: "web-rs-0", LastMove: now.Add(-time.Hour)})
	if next.Move == nil || next.Move.Pod != "web-rs-1" {
		t.Fatalf("with web-rs-0 moved last: %s %q, want web-rs-1 to move", next.Outcome, next.Message)
	}
}

// Rebalance reads the snapshot and never changes it, though it simulates moves on it.
func TestRebalanceNeverMutates(t *testing.T) {
	c := six()
	c.Deployment("shop", "web", app("web"), []string{"n1", "n1", "n1", "n2"}, spread(corev1.LabelTopologyZone, "web", false))
	c.PDB("shop", "web", app("web"), snapshottest.MaxUnavailable(intstr.FromInt32(1)))
	before := deepCopy(c.Snapshot)
	r := plan.Rebalance(c.Snapshot, now, plan.RebalanceTarget{Workload: web, TopologyKeys: []string{corev1.LabelHostname, corev1.LabelTopologyZone}})
	if r.Outcome != plan.RebalanceEvict {
		t.Fatalf("got %s %q, want a move", r.Outcome, r.Message)
	}
	if !reflect.DeepEqual(before, c.Snapshot) {
		t.Errorf("Rebalance changed the snapshot: %s", cmp.Diff(before, c.Snapshot))
	}
}
