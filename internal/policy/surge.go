package policy

import (
	"fmt"
	"strconv"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
)

// OrphanedSurges returns the scales that end the surges no policy selects any more (the
// policy was deleted or its selector changed): back to the original size at once, since
// nothing is left to wait for the drain on their behalf.
func OrphanedSurges(policies []holdfastv1alpha1.DisruptionPolicy, surging []Workload) []Scale {
	var out []Scale
	for i := range surging {
		w := &surging[i]
		original, ok := surgeOriginal(w)
		if !ok || WinnerOf(policies, w) != nil {
			continue
		}
		out = append(out, Scale{Name: w.Name, From: w.Replicas, Replicas: original, Autoscaler: restoredBounds(w.Autoscaler)})
	}
	return out
}

// surgeProgress is where a surge of a workload stands.
type surgeProgress struct {
	// active says a surge is on and not over: the workload is scaled up for a drain or
	// for the pods of a lost node.
	active bool
	// forDrain says the surge holds a replica for a drain, a hand-off, or a pod still
	// starting after them.
	forDrain bool
	// original is the size the workload goes back to.
	original int32
	// size is the size the workload is counted at: the original while the surge is on,
	// the one it is left at once over, its own without a surge.
	size int32
	// message says where an active surge stands.
	message string
	// changes are the surge's own: a resize or a scale back, a poll while on.
	changes verdict
}

// followSurge moves a surge in progress on: it is over (and scaled back) once no pod is
// on a node being drained or lost, no hand-off to an autoscaler is in progress, and the
// original number of pods is Ready elsewhere, or no pod is still starting. While on, it
// keeps one replica for a drain and one for each pod on a lost node; the brake keeps
// the size made and adds nothing.
func followSurge(o Observed, w *Workload, f failure) surgeProgress {
	original, ok := surgeOriginal(w)
	if !ok {
		return surgeProgress{size: w.Replicas}
	}
	set := surgeSize(w, original)
	// An autoscaler not raised under a marked Deployment: the operator stopped between
	// the surge's two writes (or the autoscaler came during the surge). It holds the
	// Deployment to its own bounds, so a surge it scaled back to the original size is
	// still this one, resumed below, not someone else's change.
	unraised := w.Autoscaler != nil && w.Autoscaler.Original == ""
	if w.Replicas != set && (!unraised || w.Replicas != original) {
		// Someone else changed the size during the surge: theirs is the size to keep.
		back := Scale{Name: w.Name, From: w.Replicas, Replicas: w.Replicas, Autoscaler: restoredBounds(w.Autoscaler)}
		return surgeProgress{size: w.Replicas, changes: verdict{scales: []Scale{back}}}
	}
	var ready int32
	for _, pod := range o.Pods[WorkloadKey(w.Kind, w.Name)] {
		if pod.Ready && !BeingDrained(o.Nodes[pod.Node]) && !f.lost[pod.Node] {
			ready++
		}
	}
	lost, nodes := f.lostPods(o, w)
	if !surgesForFailure(o.Policy) {
		lost = 0
	}
	// Short of Ready pods, the surge waits for those still starting; once none is, waiting
	// longer changes nothing (the new pod crash-loops, or finds no room), and scaling
	// back deletes the pods that are not Ready first. One the autoscaler scaled back is
	// resumed only for a drain, a hand-off or a lost node: after them, there is nothing
	// left to wait at a larger size.
	node := drainedNode(o, w)
	if f.lost[node] {
		node = "" // counted as lost
	}
	h, autoscaler, deadline, ahead := handingOff(o, w)
	waiting := w.Replicas == set && ready < original && assess(o, w).starting > 0
	if node == "" && !ahead && lost == 0 && !waiting {
		back := Scale{Name: w.Name, From: w.Replicas, Replicas: original, Autoscaler: restoredBounds(w.Autoscaler)}
		if h, ok := landed(o, w); ok {
			back.HandOff = h.String()
		}
		return surgeProgress{size: original, changes: verdict{scales: []Scale{back}}}
	}
	p := surgeProgress{active: true, forDrain: node != "" || ahead || waiting && set > original+lost, original: original, size: original,
		changes: verdict{requeueAfter: surgePoll}}
	want := set
	if node != "" || ahead || lost > 0 {
		want = original + lost
		if p.forDrain {
			want++
		}
	}
	if f.brake != "" {
		want = min(want, set)
	}
	switch {
	case lost > 0:
		p.message = msgSurgedForFailure(lost, nodes, original, want)
	case node != "":
		p.message = msgSurgedForDrain(original, want, node, ready)
	case ahead:
		p.message = msgSurgedAhead(original, want, autoscaler, h.node, deadline)
	default:
		p.message = msgSurgeWaiting(original, want, ready)
	}
	if want != w.Replicas || unraised {
		// A new size, or the surge's first write again (a no-op unless the autoscaler
		// scaled it back) and then its second.
		p.changes.scales = []Scale{surgeScale(w, original, want)}
	}
	return p
}

// startSurge scales a Deployment up by one when the node of one of its pods is being
// drained; the verdict's message says so.
func startSurge(o Observed, w *Workload) (verdict, bool) {
	node := drainedNode(o, w)
	if node == "" {
		return verdict{}, false
	}
	v := verdict{scales: []Scale{surgeScale(w, w.Replicas, w.Replicas+1)}, requeueAfter: surgePoll}
	v.status.Message = msgSurgeStarted(node, w.Replicas, w.Replicas+1)
	return v, true
}

// surgeScale scales w from its size to size, marked with original, and raises its
// autoscaler to match.
func surgeScale(w *Workload, original, size int32) Scale {
	return Scale{Name: w.Name, From: w.Replicas, Replicas: size, Original: ptr.To(original), Autoscaler: raisedBounds(w, size)}
}

// surgeSingle keeps minAvailable 1 on a single-replica Deployment and surges it when its
// node is drained.
func surgeSingle(o Observed, w *Workload, st holdfastv1alpha1.WorkloadStatus) verdict {
	st.Budget = BudgetName(w.Kind, w.Name)
	start, started := startSurge(o, w)
	if !started {
		st.State, st.Message = holdfastv1alpha1.WorkloadBudgeted, msgSurgeReady
		return verdict{status: st, budget: singleReplicaBudget(o, w, nil)}
	}
	st.State, st.Message = holdfastv1alpha1.WorkloadSurging, start.status.Message
	start.status, start.budget = st, singleReplicaBudget(o, w, nil)
	return start
}

// mayBlockDrains reports whether p would surge w, a Deployment of several replicas,
// when its budget blocks a drain.
func mayBlockDrains(p *holdfastv1alpha1.DisruptionPolicy, w *Workload) bool {
	return p.Spec.Surge == holdfastv1alpha1.SurgeWhenBlocked && w.Kind == holdfastv1alpha1.KindDeployment && w.Replicas > 1
}

// blocksDrain reports whether v's budget, as the disruption controller last counted it,
// allows no disruption for a reason a surge can fix: not a closed window (v would be
// held), not pacing or a pod starting (both pass by themselves), but pods that stay
// unavailable. Whether a drain waits on it is startSurge's question.
func blocksDrain(o Observed, w *Workload, h health, v verdict) bool {
	if !mayBlockDrains(o.Policy, w) || v.budget == nil || len(h.young) > 0 || h.starting > 0 {
		return false
	}
	cur := existingBudget(o.Budgets, v.budget.Name)
	return availability.AllowsNone(cur) && cur.Labels[holdfastv1alpha1.PolicyLabel] == o.Policy.Name &&
		equality.Semantic.DeepEqual(cur.Spec, v.budget.Spec)
}

// surgeBudget holds a surged Deployment at the floor of its original size, so that the
// added pod pays for the eviction: minAvailable 1 for a single replica, the policy's
// floor at the original size otherwise. The policy's maxUnavailable as is would raise
// the floor with the surge and never let the eviction through.
func surgeBudget(o Observed, w *Workload, original int32) *policyv1.PodDisruptionBudget {
	if original <= 1 {
		return singleReplicaBudget(o, w, nil)
	}
	floor := availability.Floor(policyv1.PodDisruptionBudgetSpec{MaxUnavailable: o.Policy.Spec.MaxUnavailable, MinAvailable: o.Policy.Spec.MinAvailable}, original)
	return budgetFor(o.Policy, w, policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(floor))}, nil)
}

// surgeOriginal returns the replicas a surged Deployment goes back to.
func surgeOriginal(w *Workload) (int32, bool) {
	v, ok := w.Annotations[holdfastv1alpha1.SurgeOriginalReplicasAnnotation]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 {
		// A value holdfast did not write: the surge cannot be undone safely, so it is
		// forgotten and the current size kept.
		return 0, false
	}
	return int32(n), true
}

// surgeSize returns the size holdfast surged w to: one more than original for a surge
// that did not record it.
func surgeSize(w *Workload, original int32) int32 {
	n, err := strconv.ParseInt(w.Annotations[holdfastv1alpha1.SurgeReplicasAnnotation], 10, 32)
	if err != nil || n <= int64(original) {
		return original + 1
	}
	return int32(n)
}

// raisedBounds lifts w's autoscaler bounds to at least replicas for a surge,
// remembering the first originals.
func raisedBounds(w *Workload, replicas int32) *AutoscalerBounds {
	a := w.Autoscaler
	if a == nil {
		return nil
	}
	original := a.Original
	if original == "" {
		original = fmt.Sprintf("%d/%d", a.Min, a.Max)
	}
	return &AutoscalerBounds{Name: a.Name, FromMin: a.Min, FromMax: a.Max, Min: max(a.Min, replicas), Max: max(a.Max, replicas), Original: original}
}

// restoredBounds puts back the bounds a surge raised; nil when it raised none. The
// original minimum may be 0: an autoscaler that scales to zero.
func restoredBounds(a *Autoscaler) *AutoscalerBounds {
	if a == nil || a.Original == "" {
		return nil
	}
	var lo, hi int32
	if _, err := fmt.Sscanf(a.Original, "%d/%d", &lo, &hi); err != nil || lo < 0 || hi < max(lo, 1) {
		// Not holdfast's writing: leave the bounds, drop the mark.
		return &AutoscalerBounds{Name: a.Name, FromMin: a.Min, FromMax: a.Max, Min: a.Min, Max: a.Max}
	}
	return &AutoscalerBounds{Name: a.Name, FromMin: a.Min, FromMax: a.Max, Min: lo, Max: hi}
}

// drainedNode returns the node being drained that one of w's pods is on, or "".
func drainedNode(o Observed, w *Workload) string {
	for _, pod := range o.Pods[WorkloadKey(w.Kind, w.Name)] {
		if BeingDrained(o.Nodes[pod.Node]) {
			return pod.Node
		}
	}
	return ""
}
