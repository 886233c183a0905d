package disruptionpolicy

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/roompods"
	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// roomAnswers keeps the planner's answers on room (observe) for policy.RoomAnswerLife,
// by question: a node's (a hand-off's), or the lost nodes' together. An answer reads
// every node, workload and budget from the cache and every unfinished pod and
// ReplicaSet from the API server: the cost of a drain's room check, paid only for a
// node a hand-off would start from (a Surge single replica's node the autoscaler may
// want, under the threshold, unblocked, out of its back-off), or when more than one
// node is lost at once, at most once per question in the interval. One answer is read
// at a time.
type roomAnswers struct {
	mu    sync.Mutex
	byKey map[string]roomAnswer
}

type roomAnswer struct {
	at time.Time
	// why is a node's answer (plan.HandOffRoom); lost the lost nodes' (plan.LostRoom).
	why  string
	lost map[string]string
}

// observe reads what Decide reads for p at now: policy.Observe from the cache and the
// API server, then the planner's answers on the room of the nodes a hand-off would
// start from, and of the lost nodes' pods on the survivors.
func (r *reconciler) observe(ctx context.Context, p *holdfastv1alpha1.DisruptionPolicy, now time.Time) (policy.Observed, error) {
	obs, err := policy.Observe(ctx, (*observer)(r), p, now)
	if err != nil {
		return obs, err
	}
	for _, node := range obs.RoomWanted() {
		a, err := r.answer(ctx, node, now, func(snap *snapshot.Snapshot) (roomAnswer, error) {
			why, err := plan.HandOffRoom(snap, now, node)
			return roomAnswer{why: why}, err
		})
		if err != nil {
			return obs, fmt.Errorf("placing node %s's pods elsewhere: %w", node, err)
		}
		obs.SetRoom(node, a.why)
	}
	if lost := obs.LostRoomWanted(); len(lost) > 0 {
		a, err := r.answer(ctx, "lost "+strings.Join(lost, ","), now, func(snap *snapshot.Snapshot) (roomAnswer, error) {
			return roomAnswer{lost: plan.LostRoom(snap, now, lost)}, nil
		})
		if err != nil {
			return obs, fmt.Errorf("placing the pods of lost nodes %v on the others: %w", lost, err)
		}
		obs.SetLostRoom(a.lost)
	}
	return obs, nil
}

// answer is the planner's answer to the question key, asked of a fresh read of the
// cluster at most every policy.RoomAnswerLife.
func (r *reconciler) answer(ctx context.Context, key string, now time.Time, ask func(*snapshot.Snapshot) (roomAnswer, error)) (roomAnswer, error) {
	a := &r.room
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, old := range a.byKey {
		if now.Sub(old.at) >= policy.RoomAnswerLife || now.Before(old.at) {
			delete(a.byKey, k)
		}
	}
	if old, ok := a.byKey[key]; ok {
		return old, nil
	}
	snap, err := (*observer)(r).roomSnapshot(ctx)
	if err != nil {
		return roomAnswer{}, fmt.Errorf("reading the cluster: %w", err)
	}
	ans, err := ask(snap)
	if err != nil {
		return roomAnswer{}, err
	}
	ans.at = now
	if a.byKey == nil {
		a.byKey = map[string]roomAnswer{}
	}
	a.byKey[key] = ans
	return ans, nil
}

// roomSnapshot is the cluster as the planner's simulation reads it: the nodes,
// workloads and budgets from the cache, the ReplicaSets (which tie pods to their
// Deployments) and the unfinished pods from the API server, which the cache does not
// hold.
func (r *observer) roomSnapshot(ctx context.Context) (*snapshot.Snapshot, error) {
	snap := &snapshot.Snapshot{Source: snapshot.SourceLive}
	nodes, deployments, sets, daemons := &corev1.NodeList{}, &appsv1.DeploymentList{}, &appsv1.StatefulSetList{}, &appsv1.DaemonSetList{}
	budgets, replicaSets := &policyv1.PodDisruptionBudgetList{}, &appsv1.ReplicaSetList{}
	for what, l := range map[string]client.ObjectList{"nodes": nodes, "Deployments": deployments, "StatefulSets": sets, "DaemonSets": daemons, "PodDisruptionBudgets": budgets} {
		if err := r.client.List(ctx, l); err != nil {
			return nil, fmt.Errorf("listing %s: %w", what, err)
		}
	}
	if err := r.live.List(ctx, replicaSets); err != nil {
		return nil, fmt.Errorf("listing ReplicaSets: %w", err)
	}
	pods, err := roompods.List(ctx, r.live)
	if err != nil {
		return nil, err
	}
	snap.Nodes, snap.Deployments, snap.StatefulSets, snap.DaemonSets = nodes.Items, deployments.Items, sets.Items, daemons.Items
	snap.PodDisruptionBudgets, snap.ReplicaSets, snap.Pods = budgets.Items, replicaSets.Items, pods
	return snap, nil
}
