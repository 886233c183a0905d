package disruptionpolicy

import (
	"context"
	"fmt"
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

// roomAnswers keeps each node's answer on room (observe) for
// policy.RoomAnswerLife. An answer reads every node, workload and budget from the cache
// and every unfinished pod and ReplicaSet from the API server: the cost of a drain's
// room check, paid only for a node a hand-off would start from (a Surge single
// replica's node the autoscaler may want, under the threshold, unblocked, out of its
// back-off), at most once per node in the interval. One answer is read at a time.
type roomAnswers struct {
	mu     sync.Mutex
	byNode map[string]roomAnswer
}

type roomAnswer struct {
	at  time.Time
	why string
}

// observe reads what Decide reads for p at now: policy.Observe from the cache and the
// API server, then the room of the nodes a hand-off would start from.
func (r *reconciler) observe(ctx context.Context, p *holdfastv1alpha1.DisruptionPolicy, now time.Time) (policy.Observed, error) {
	obs, err := policy.Observe(ctx, (*observer)(r), p, now)
	if err != nil {
		return obs, err
	}
	for _, node := range obs.RoomWanted() {
		why, err := (*observer)(r).roomFor(ctx, node, now)
		if err != nil {
			return obs, err
		}
		obs.SetRoom(node, why)
	}
	return obs, nil
}

// roomFor is the planner's answer on node's room, read at most every policy.RoomAnswerLife.
func (r *observer) roomFor(ctx context.Context, node string, now time.Time) (string, error) {
	a := &r.room
	a.mu.Lock()
	defer a.mu.Unlock()
	for name, old := range a.byNode {
		if now.Sub(old.at) >= policy.RoomAnswerLife || now.Before(old.at) {
			delete(a.byNode, name)
		}
	}
	if old, ok := a.byNode[node]; ok {
		return old.why, nil
	}
	snap, err := r.roomSnapshot(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the cluster to place node %s's pods elsewhere: %w", node, err)
	}
	why, err := plan.HandOffRoom(snap, now, node)
	if err != nil {
		return "", fmt.Errorf("placing node %s's pods elsewhere: %w", node, err)
	}
	if a.byNode == nil {
		a.byNode = map[string]roomAnswer{}
	}
	a.byNode[node] = roomAnswer{at: now, why: why}
	return why, nil
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
