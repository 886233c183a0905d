package disruptionpolicy

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

const (
	// maxListed bounds status.workloads, so that a policy over a large namespace stays a
	// small object; the counts cover every workload.
	maxListed = 50
	// surgePoll is how often a surge in progress is looked at again, besides the watches:
	// the pods it waits for are not in the cache.
	surgePoll = 2 * time.Second
	// startGrace is how long a pod may stay not Ready before its workload counts as
	// degraded: a replacement after a drain, or a pod of a scale-up, is starting, not
	// broken, for that long.
	startGrace = 30 * time.Second
	// managedByLabel is the well-known label that marks holdfast's budgets for humans.
	managedByLabel = "app.kubernetes.io/managed-by"
	managedByValue = "holdfast"
	// scaleTargetPoll is how often a policy with scale targets is reconciled besides its
	// watches: custom kinds are not watched (the operator cannot know them in advance),
	// so a change to a custom object or its pods reaches its budget within this.
	scaleTargetPoll = 30 * time.Second
	// maxCustomBudgetName keeps the budget names of custom kinds within a DNS label, so
	// that they fit wherever a name is used as a label value.
	maxCustomBudgetName = 63
)

// Taints that autoscalers put on a node they are about to drain: Karpenter v1 and its
// beta, which article 001 shows.
var drainTaints = []string{"karpenter.sh/disrupted", "karpenter.sh/disruption"}

// Workload is a Deployment, StatefulSet, DaemonSet or object of a scale target,
// reduced to what Decide reads.
type Workload struct {
	Kind string
	// APIVersion is a scale target's apiVersion; empty for the apps/v1 kinds.
	APIVersion string
	Name       string
	UID        types.UID
	// Labels are the workload's own labels, which policies select on.
	Labels map[string]string
	// Selector is the workload's pod selector; its budget gets a copy. Nil for an object
	// whose scale has no status.selector.
	Selector *metav1.LabelSelector
	// TemplateLabels are the labels every pod of the workload carries: for an object of
	// a scale target, its selector's matchLabels, all that is known of its pods.
	TemplateLabels map[string]string
	// Replicas is spec.replicas (of the scale for a scale target), or
	// status.desiredNumberScheduled for a DaemonSet.
	Replicas int32
	// Ready is how many of its pods are Ready, from the workload's status (from its pods
	// for a scale target, whose status has no such count).
	Ready int32
	// Available is how many have been Ready for the workload's own minReadySeconds.
	Available int32
	// MinReadySeconds is the workload's own spec.minReadySeconds, the pacing a policy
	// without minReadySeconds applies.
	MinReadySeconds int32
	// RollingOut is true while the workload's pods are being replaced by a new template:
	// the rollout, not the workload's health, explains pods that are not Ready.
	RollingOut bool
	// Annotations are the workload's annotations (the surge's memory).
	Annotations map[string]string
	// Autoscaler is the HorizontalPodAutoscaler that scales a Deployment, if any.
	Autoscaler *Autoscaler
}

// Autoscaler is a HorizontalPodAutoscaler's bounds, which a surge raises so that the
// autoscaler does not undo it.
type Autoscaler struct {
	Name     string
	Min, Max int32
	// Original is the SurgeOriginalBoundsAnnotation, "min/max", while surging.
	Original string
}

// Pod is one live (not terminating) pod of a workload whose pods Decide reads.
type Pod struct {
	Name         string
	Node         string
	Ready        bool
	DoNotDisrupt bool
	// Since is when the pod's Ready condition last changed, or its creation when it has
	// none yet.
	Since time.Time
}

// Observed is everything Decide reads, gathered from one namespace.
type Observed struct {
	Policy *holdfastv1alpha1.DisruptionPolicy
	// Policies are every DisruptionPolicy of the namespace, Policy included.
	Policies []holdfastv1alpha1.DisruptionPolicy
	// Workloads are the namespace's workloads of the kinds Policy selects.
	Workloads []Workload
	// Budgets are every PodDisruptionBudget of the namespace.
	Budgets []policyv1.PodDisruptionBudget
	// Pods are the live pods of the workloads for which NeedsPods is true, keyed by
	// workloadKey.
	Pods map[string][]Pod
	// Nodes are the nodes of those pods.
	Nodes map[string]*corev1.Node
	// Surging are the namespace's Deployments that carry the surge annotation, selected
	// or not: a surge whose policy went away must still end.
	Surging []Workload
	// Unreadable are the scale targets that could not be read: their objects are missing
	// from Workloads, so their budgets are kept as they are.
	Unreadable []Unreadable
	Now        time.Time
}

// Unreadable is a scale target that could not be listed or whose scale could not be
// read, and why, for status.
type Unreadable struct {
	Target  holdfastv1alpha1.ScaleTarget
	Message string
}

// Scale changes a Deployment's replicas and its surge annotation in one write, and its
// autoscaler's bounds in another.
type Scale struct {
	Name     string
	Replicas int32
	// Original is the value for SurgeOriginalReplicasAnnotation; nil removes it.
	Original   *int32
	Autoscaler *AutoscalerBounds
}

// AutoscalerBounds sets a HorizontalPodAutoscaler's bounds and its surge annotation.
type AutoscalerBounds struct {
	Name     string
	Min, Max int32
	// Original is the value for SurgeOriginalBoundsAnnotation; "" removes it.
	Original string
}

// PodAnnotation sets or removes karpenter.sh/do-not-disrupt on a pod.
type PodAnnotation struct {
	Pod          string
	DoNotDisrupt bool
}

// Decision is what the reconciler does for one policy.
type Decision struct {
	// Apply are the budgets to create or update.
	Apply []*policyv1.PodDisruptionBudget
	// Delete are this policy's budgets that no workload wants any more.
	Delete []*policyv1.PodDisruptionBudget
	Scales []Scale
	// PodAnnotations are the changes to pods' do-not-disrupt annotation.
	PodAnnotations []PodAnnotation
	Status         holdfastv1alpha1.DisruptionPolicyStatus
	RequeueAfter   time.Duration
}

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
		out = append(out, Scale{Name: w.Name, Replicas: original, Autoscaler: restoredBounds(w)})
	}
	return out
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
	return &AutoscalerBounds{Name: a.Name, Min: max(a.Min, replicas), Max: max(a.Max, replicas), Original: original}
}

// restoredBounds puts back the bounds a surge raised; nil when it raised none.
func restoredBounds(w *Workload) *AutoscalerBounds {
	a := w.Autoscaler
	if a == nil || a.Original == "" {
		return nil
	}
	var lo, hi int32
	if _, err := fmt.Sscanf(a.Original, "%d/%d", &lo, &hi); err != nil || lo < 1 || hi < lo {
		// Not holdfast's writing: leave the bounds, drop the mark.
		return &AutoscalerBounds{Name: a.Name, Min: a.Min, Max: a.Max}
	}
	return &AutoscalerBounds{Name: a.Name, Min: lo, Max: hi}
}

// Selects reports whether policy p selects workload w: its kind is listed (in kinds, or
// in scaleTargets for a custom one) and its labels match the selector.
func Selects(p *holdfastv1alpha1.DisruptionPolicy, w *Workload) (bool, error) {
	if w.custom() {
		if !slices.Contains(p.Spec.ScaleTargets, holdfastv1alpha1.ScaleTarget{APIVersion: w.APIVersion, Kind: w.Kind}) {
			return false, nil
		}
	} else if len(p.Spec.Kinds) > 0 && !slices.Contains(p.Spec.Kinds, holdfastv1alpha1.WorkloadKind(w.Kind)) {
		return false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&p.Spec.Selector)
	if err != nil {
		return false, fmt.Errorf("spec.selector: %w", err)
	}
	return sel.Matches(labels.Set(w.Labels)), nil
}

// NeedsPods reports whether Decide needs the pods of w, which o.Policy selects: a
// single replica under Surge or Protect, a surge in progress, a workload short of
// available pods (degraded, a replacement coming, or one not yet Ready for the
// workload's own minReadySeconds), one whose budget carries the pacing mark, or one
// whose budget blocks a drain under surge: WhenBlocked. Any other workload costs no read
// of its pods, so a change to one workload lists the pods of none but the few in motion.
func NeedsPods(o *Observed, w *Workload) bool {
	p := o.Policy
	if w.custom() {
		// Its Ready count comes only from its pods.
		return w.Selector != nil
	}
	if _, surging := surgeOriginal(w); surging || w.Available < w.Replicas {
		return true
	}
	if w.Kind == holdfastv1alpha1.KindDaemonSet {
		return false
	}
	if w.Replicas == 1 && (p.Spec.SingleReplica == holdfastv1alpha1.SingleReplicaProtect ||
		p.Spec.SingleReplica == holdfastv1alpha1.SingleReplicaSurge && w.Kind == holdfastv1alpha1.KindDeployment) {
		return true
	}
	b := existingBudget(o.Budgets, BudgetName(w.Kind, w.Name))
	if b == nil || b.Labels[holdfastv1alpha1.PolicyLabel] != p.Name {
		return false
	}
	_, pacing := b.Annotations[holdfastv1alpha1.PacingAnnotation]
	return pacing || mayBlockDrains(p, w) && b.Status.DisruptionsAllowed == 0
}

// mayBlockDrains reports whether p would surge w, a Deployment of several replicas,
// when its budget blocks a drain.
func mayBlockDrains(p *holdfastv1alpha1.DisruptionPolicy, w *Workload) bool {
	return p.Spec.Surge == holdfastv1alpha1.SurgeWhenBlocked && w.Kind == holdfastv1alpha1.KindDeployment && w.Replicas > 1
}

// BudgetName is the name of the budget holdfast keeps for a workload. The names of the
// apps kinds' budgets are only cut at 253 characters, as they always were, so that an
// upgrade renames none; those of custom kinds, holdfast-<lowercase kind>-<name>, are cut
// to 63 and end with a hash of the whole name, so that two long names stay apart.
func BudgetName(kind, name string) string {
	var prefix string
	switch kind {
	case holdfastv1alpha1.KindDeployment:
		prefix = "deploy"
	case holdfastv1alpha1.KindStatefulSet:
		prefix = "sts"
	case holdfastv1alpha1.KindDaemonSet:
		prefix = "ds"
	default:
		n := "holdfast-" + strings.ToLower(kind) + "-" + name
		if len(n) <= maxCustomBudgetName {
			return n
		}
		sum := fnv.New32a()
		sum.Write([]byte(n))
		hash := fmt.Sprintf("-%08x", sum.Sum32())
		return strings.TrimRight(n[:maxCustomBudgetName-len(hash)], "-.") + hash
	}
	n := "holdfast-" + prefix + "-" + name
	if len(n) > 253 {
		n = n[:253]
	}
	return n
}

// custom reports whether w is an object of a scale target.
func (w *Workload) custom() bool { return w.APIVersion != "" }

func workloadKey(kind, name string) string { return kind + "/" + name }

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

// BeingDrained reports whether a node is cordoned or tainted by an autoscaler that is
// about to drain it.
func BeingDrained(n *corev1.Node) bool {
	if n == nil {
		return false
	}
	if n.Spec.Unschedulable {
		return true
	}
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return slices.Contains(drainTaints, t.Key) })
}

// outcome is Decide's verdict on one workload.
type outcome struct {
	status holdfastv1alpha1.WorkloadStatus
	budget *policyv1.PodDisruptionBudget
}

// Decide computes the budgets, scales, pod annotations and status of one policy. It
// reads only its argument and does not modify it.
func Decide(o Observed) Decision {
	p := o.Policy
	var d Decision
	if _, err := metav1.LabelSelectorAsSelector(&p.Spec.Selector); err != nil {
		// Nothing is selected and nothing deleted until the selector is fixed.
		d.Status = status(p, nil, fmt.Errorf("spec.selector: %w", err), o.Now)
		return d
	}
	// A window that cannot be read never opens (windowsAt): the policy fails closed.
	win, winErr := windowsAt(p.Spec.MaintenanceWindows, o.Now)
	closed := !win.open
	if len(p.Spec.MaintenanceWindows) > 0 {
		if win.open {
			requeue(&d, win.closesAt.Sub(o.Now))
		} else if !win.nextOpening.IsZero() {
			requeue(&d, win.nextOpening.Sub(o.Now))
		}
	}
	d.Scales = OrphanedSurges(o.Policies, o.Surging)
	wanted := map[string]bool{}
	var outs []holdfastv1alpha1.WorkloadStatus
	for i := range o.Workloads {
		w := &o.Workloads[i]
		if ok, _ := Selects(p, w); !ok {
			continue
		}
		out := decideWorkload(o, w, closed, win, &d)
		if out.budget != nil {
			wanted[out.budget.Name] = true
			d.Apply = append(d.Apply, out.budget)
			out.status.Blocked = allowsNone(existingBudget(o.Budgets, out.budget.Name))
		}
		outs = append(outs, out.status)
	}
	for i := range o.Budgets {
		b := &o.Budgets[i]
		if b.Labels[holdfastv1alpha1.PolicyLabel] == p.Name && !wanted[b.Name] && !ownedByUnreadable(b, o.Unreadable) {
			d.Delete = append(d.Delete, b)
		}
	}
	if len(p.Spec.ScaleTargets) > 0 {
		requeue(&d, scaleTargetPoll)
	}
	d.Status = status(p, outs, nil, o.Now)
	if len(o.Unreadable) > 0 {
		msgs := make([]string, 0, len(o.Unreadable))
		for _, u := range o.Unreadable {
			msgs = append(msgs, u.Message)
		}
		meta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{
			Type: holdfastv1alpha1.ConditionBudgetsReady, Status: metav1.ConditionFalse, Reason: holdfastv1alpha1.ReasonScaleTargetUnreadable,
			Message:            strings.Join(msgs, "; ") + "; the budgets of those kinds are kept as they are until they can be read",
			ObservedGeneration: p.Generation, LastTransitionTime: metav1.NewTime(o.Now),
		})
	}
	d.Status.Window = windowStatus(p.Spec.MaintenanceWindows, win, winErr)
	c := windowCondition(p.Spec.MaintenanceWindows, win, winErr)
	c.ObservedGeneration, c.LastTransitionTime = p.Generation, metav1.NewTime(o.Now)
	meta.SetStatusCondition(&d.Status.Conditions, c)
	return d
}

// decideWorkload decides one selected workload, adding its scales and pod annotations
// to d. closed says that the policy's maintenance windows are all closed.
func decideWorkload(o Observed, w *Workload, closed bool, win windowState, d *Decision) outcome {
	p := o.Policy
	st := holdfastv1alpha1.WorkloadStatus{Kind: w.Kind, Name: w.Name, Replicas: w.Replicas}
	winner := WinnerOf(o.Policies, w)
	lost := winner != nil && winner.Name != p.Name
	other := coveringBudget(o.Budgets, w)
	if original, surging := surgeOriginal(w); surging {
		// The surge is moved on first, whatever else changed (even the policy that wins
		// the workload): the workload must never stay scaled up. Scales are absolute, so
		// two policies moving one surge agree.
		st.Replicas = original
		msg, size, done := surgeStep(o, w, original, d)
		switch {
		case !done && other != "" && !lost:
			st.State, st.Message = holdfastv1alpha1.WorkloadSurging, msg+fmt.Sprintf("; PodDisruptionBudget %s now covers its pods, so holdfast keeps none", other)
			return outcome{status: st}
		case !done && !lost:
			st.State, st.Message, st.Budget = holdfastv1alpha1.WorkloadSurging, msg, BudgetName(w.Kind, w.Name)
			return pace(o, w, w.Replicas, assess(o, w), outcome{status: st, budget: surgeBudget(o, w, original)}, d)
		case done:
			st.Replicas = size
		}
	}
	if lost {
		st.State = holdfastv1alpha1.WorkloadOverridden
		st.Message = fmt.Sprintf("DisruptionPolicy %s is older and also selects it: that policy manages its budget", winner.Name)
		if clusterCopy(p) && !clusterCopy(winner) {
			st.Message = fmt.Sprintf("DisruptionPolicy %s, the namespace's own, also selects it and comes before ClusterDisruptionPolicy %s: that policy manages its budget",
				winner.Name, p.Labels[holdfastv1alpha1.ClusterPolicyLabel])
		}
		return outcome{status: st}
	}
	if w.Selector == nil {
		st.State, st.Message = holdfastv1alpha1.WorkloadSkipped, "its scale subresource reports no usable status.selector, so holdfast cannot tell its pods: no budget; have its controller set the selector"
		return outcome{status: st}
	}
	if other != "" {
		st.State, st.Blocked = holdfastv1alpha1.WorkloadConflict, allowsNone(existingBudget(o.Budgets, other))
		st.Message = fmt.Sprintf("PodDisruptionBudget %s, which holdfast does not manage, already covers its pods: two budgets over one pod make every eviction fail, so holdfast adds none; delete %s or unselect the workload", other, other)
		return outcome{status: st}
	}
	switch {
	case st.Replicas == 0:
		st.State, st.Message = holdfastv1alpha1.WorkloadSkipped, "no replicas: nothing to budget"
		return outcome{status: st}
	case closed:
		return held(p, w, st, win.nextOpening)
	case st.Replicas == 1 && w.Kind != holdfastv1alpha1.KindDaemonSet:
		return pace(o, w, st.Replicas, assess(o, w), singleReplica(o, w, st, d), d)
	}
	return multiReplica(o, w, st, d)
}

// multiReplica gives a workload of several replicas the policy's budget, paced, and
// under surge: WhenBlocked surges it when that budget blocks a drain.
func multiReplica(o Observed, w *Workload, st holdfastv1alpha1.WorkloadStatus, d *Decision) outcome {
	out := budgeted(o.Policy, w, st)
	h := assess(o, w)
	if blocksDrain(o, w, h, out) {
		if msg, started := surgeStart(o, w, d); started {
			out.status.State, out.status.Message = holdfastv1alpha1.WorkloadSurging, msg
			out.budget = surgeBudget(o, w, w.Replicas)
		}
	}
	return pace(o, w, st.Replicas, h, out, d)
}

// blocksDrain reports whether out's budget, as the disruption controller last counted
// it, allows no disruption for a reason a surge can fix: not a closed window (out would
// be held), not pacing or a pod starting (both pass by themselves), but pods that stay
// unavailable. Whether a drain waits on it is surgeStart's question.
func blocksDrain(o Observed, w *Workload, h health, out outcome) bool {
	if !mayBlockDrains(o.Policy, w) || out.budget == nil || len(h.young) > 0 || h.starting > 0 {
		return false
	}
	cur := existingBudget(o.Budgets, out.budget.Name)
	return allowsNone(cur) && cur.Labels[holdfastv1alpha1.PolicyLabel] == o.Policy.Name &&
		equality.Semantic.DeepEqual(cur.Spec, out.budget.Spec)
}

// allowsNone reports whether budget b, as the disruption controller last counted it for
// its current spec, allows no disruption of the pods it covers; false for no budget. A
// budget changed since is left for the count that follows, which wakes the policy again.
func allowsNone(b *policyv1.PodDisruptionBudget) bool {
	return b != nil && b.Status.ObservedGeneration == b.Generation && b.Status.ExpectedPods > 0 && b.Status.DisruptionsAllowed == 0
}

// health is what a workload's pods say at o.Now.
type health struct {
	ready int32
	// young say which Ready pods are not proven yet: Ready for less than minReadySeconds.
	young []string
	// stuck say which pods have not been Ready for startGrace, on nodes not being drained.
	stuck []string
	// starting counts the pods not Ready for less than startGrace.
	starting int
	// next is the soonest a young pod is proven or a starting pod becomes stuck.
	next time.Time
}

// assess reads w's pods. Pods not Ready on a node being drained are left out: the
// drain explains them, and their budget lets them go (unhealthyPodEvictionPolicy).
func assess(o Observed, w *Workload) health {
	var h health
	soon := func(t time.Time) {
		if h.next.IsZero() || t.Before(h.next) {
			h.next = t
		}
	}
	gate := minReady(o.Policy, w)
	for _, pod := range o.Pods[workloadKey(w.Kind, w.Name)] {
		switch {
		case pod.Ready:
			h.ready++
			// Condition times are stored in whole seconds, truncated: counting from the
			// end of that second never opens the gate early.
			proven := pod.Since.Add(time.Second + gate)
			if gate > 0 && o.Now.Before(proven) {
				h.young = append(h.young, fmt.Sprintf("pod %s Ready since %s, counted available from %s", pod.Name, stamp(pod.Since), stamp(proven)))
				soon(proven)
			}
		case BeingDrained(o.Nodes[pod.Node]):
		case o.Now.Before(pod.Since.Add(startGrace)):
			h.starting++
			soon(pod.Since.Add(startGrace))
		case pod.Node == "":
			h.stuck = append(h.stuck, fmt.Sprintf("pod %s not scheduled since %s", pod.Name, stamp(pod.Since)))
		default:
			h.stuck = append(h.stuck, fmt.Sprintf("pod %s not Ready on node %s since %s", pod.Name, pod.Node, stamp(pod.Since)))
		}
	}
	slices.Sort(h.young)
	slices.Sort(h.stuck)
	return h
}

// stamp renders a time for a status message. Messages carry times, not ages, so that
// they stay the same from one reconcile to the next and status is not rewritten.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// minReady is how long a pod of w must have been Ready before its budget counts it: the
// policy's minReadySeconds, or the workload's own when the policy leaves it unset.
func minReady(p *holdfastv1alpha1.DisruptionPolicy, w *Workload) time.Duration {
	if p.Spec.MinReadySeconds != nil {
		return time.Duration(*p.Spec.MinReadySeconds) * time.Second
	}
	return time.Duration(w.MinReadySeconds) * time.Second
}

// pace applies minReadySeconds to the budget out keeps for w (size pods wanted) and
// reports w degraded. Each pod Ready for less than minReadySeconds takes one disruption
// off the budget until it is proven, and a reconcile is due the moment it is: the gate
// always opens by the clock. A pod that is not Ready is not paced (the disruption
// controller already counts it unavailable); past startGrace it makes w Degraded.
func pace(o Observed, w *Workload, size int32, h health, out outcome, d *Decision) outcome {
	st := &out.status
	if out.budget == nil || st.State != holdfastv1alpha1.WorkloadBudgeted && st.State != holdfastv1alpha1.WorkloadSurging {
		return out
	}
	if !h.next.IsZero() {
		requeue(d, h.next.Sub(o.Now))
	}
	if minReady(o.Policy, w) > 0 && (w.Ready < w.Replicas || len(h.young) > 0) {
		// Until the replacements are proven, the next reconcile must read the pods even
		// if the workload's Ready count is whole again.
		if out.budget.Annotations == nil {
			out.budget.Annotations = map[string]string{}
		}
		out.budget.Annotations[holdfastv1alpha1.PacingAnnotation] = "true"
	}
	// A surge's message stays first; a budget's plain one gives way to what is wrong.
	var notes []string
	if st.State == holdfastv1alpha1.WorkloadSurging {
		notes = append(notes, st.Message)
	} else if len(h.stuck) > 0 && !w.RollingOut && h.ready < size {
		st.State = holdfastv1alpha1.WorkloadDegraded
		notes = append(notes, fmt.Sprintf("%d of %d Ready: %s", h.ready, size, strings.Join(h.stuck, ", ")))
	}
	// A budget that already allows nothing (a single replica's minAvailable 1) has nothing
	// to pace.
	if tight := tighten(out.budget.Spec, w.Replicas, int32(len(h.young))); len(h.young) > 0 && !equality.Semantic.DeepEqual(tight, out.budget.Spec) {
		out.budget.Spec = tight
		if st.State == holdfastv1alpha1.WorkloadBudgeted {
			st.State = holdfastv1alpha1.WorkloadPacing
		}
		notes = append(notes, fmt.Sprintf("Pacing: %s (minReadySeconds %d): the budget counts each as unavailable until then", strings.Join(h.young, ", "), int(minReady(o.Policy, w).Seconds())))
	}
	if len(notes) > 0 {
		st.Message = strings.Join(notes, "; ")
	}
	return out
}

// tighten takes n disruptions off what spec allows at replicas pods, in the form the
// disruption controller follows: maxUnavailable stays maxUnavailable.
func tighten(spec policyv1.PodDisruptionBudgetSpec, replicas, n int32) policyv1.PodDisruptionBudgetSpec {
	if spec.MaxUnavailable != nil {
		allowed, _ := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, int(replicas), true)
		spec.MaxUnavailable = ptr.To(intstr.FromInt32(max(0, int32(allowed)-n)))
		return spec
	}
	spec.MinAvailable = ptr.To(intstr.FromInt32(min(replicas, floorOf(spec, replicas)+n)))
	return spec
}

// surgeBudget holds a surged Deployment at the floor of its original size, so that the
// added pod pays for the eviction: minAvailable 1 for a single replica, the policy's
// floor at the original size otherwise. The policy's maxUnavailable as is would raise
// the floor with the surge and never let the eviction through.
func surgeBudget(o Observed, w *Workload, original int32) *policyv1.PodDisruptionBudget {
	if original <= 1 {
		return singleReplicaBudget(o, w, nil)
	}
	floor := floorOf(policyv1.PodDisruptionBudgetSpec{MaxUnavailable: o.Policy.Spec.MaxUnavailable, MinAvailable: o.Policy.Spec.MinAvailable}, original)
	return budgetFor(o.Policy, w, policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(floor))}, nil)
}

// budgeted gives a workload of several replicas the policy's budget, unless that budget
// would allow no disruption.
func budgeted(p *holdfastv1alpha1.DisruptionPolicy, w *Workload, st holdfastv1alpha1.WorkloadStatus) outcome {
	spec := policyv1.PodDisruptionBudgetSpec{MaxUnavailable: p.Spec.MaxUnavailable, MinAvailable: p.Spec.MinAvailable}
	floor := floorOf(spec, st.Replicas)
	if w.Kind == holdfastv1alpha1.KindDaemonSet {
		// The disruption controller finds no scale for a DaemonSet, so it accepts only an
		// integer minAvailable, counted against the pods that exist.
		spec = policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(floor))}
	}
	if floor >= st.Replicas {
		st.State = holdfastv1alpha1.WorkloadNoDisruption
		st.Message = fmt.Sprintf("the policy's budget keeps %d of %d pods available, which allows no disruption: no budget is created, since it would block every drain; lower minAvailable or add replicas", floor, st.Replicas)
		return outcome{status: st}
	}
	st.State = holdfastv1alpha1.WorkloadBudgeted
	st.Budget = BudgetName(w.Kind, w.Name)
	st.Message = fmt.Sprintf("%d of %d pods may be disrupted at once", st.Replicas-floor, st.Replicas)
	return outcome{status: st, budget: budgetFor(p, w, spec, nil)}
}

// held gives a workload a budget that allows no disruption, outside every maintenance
// window: maxUnavailable 0, or for a DaemonSet minAvailable of all its pods.
func held(p *holdfastv1alpha1.DisruptionPolicy, w *Workload, st holdfastv1alpha1.WorkloadStatus, until time.Time) outcome {
	spec := policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0))}
	if w.Kind == holdfastv1alpha1.KindDaemonSet {
		spec = policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(st.Replicas))}
	}
	st.State, st.Budget = holdfastv1alpha1.WorkloadBudgeted, BudgetName(w.Kind, w.Name)
	st.Message = "outside every maintenance window: no voluntary disruption until " + until.UTC().Format(time.RFC3339)
	if until.IsZero() {
		st.Message = "no maintenance window can open (see the WindowOpen condition): no voluntary disruption until the windows are fixed"
	}
	return outcome{status: st, budget: budgetFor(p, w, spec, nil)}
}

// floorOf is how many of replicas pods a budget keeps available, rounded as the
// disruption controller rounds it.
func floorOf(spec policyv1.PodDisruptionBudgetSpec, replicas int32) int32 {
	if spec.MaxUnavailable != nil {
		n, _ := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, int(replicas), true)
		return max(0, replicas-int32(n))
	}
	n, _ := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, int(replicas), true)
	return int32(n)
}

// singleReplica applies the policy's single-replica strategy.
func singleReplica(o Observed, w *Workload, st holdfastv1alpha1.WorkloadStatus, d *Decision) outcome {
	p := o.Policy
	switch {
	case p.Spec.SingleReplica == holdfastv1alpha1.SingleReplicaProtect:
		return protect(o, w, st, d)
	case p.Spec.SingleReplica == holdfastv1alpha1.SingleReplicaSurge && w.Kind == holdfastv1alpha1.KindDeployment:
		if msg, started := surgeStart(o, w, d); started {
			st.State, st.Message = holdfastv1alpha1.WorkloadSurging, msg
		} else {
			st.State = holdfastv1alpha1.WorkloadBudgeted
			st.Message = "single replica under Surge: a drain of its node first scales it to 2, then lets the eviction through once the new pod is Ready"
		}
		st.Budget = BudgetName(w.Kind, w.Name)
		return outcome{status: st, budget: singleReplicaBudget(o, w, nil)}
	case p.Spec.SingleReplica == holdfastv1alpha1.SingleReplicaSurge && w.custom():
		st.State = holdfastv1alpha1.WorkloadSkipped
		st.Message = fmt.Sprintf("single-replica %s under Surge: holdfast surges only Deployments, so it gets no budget and a drain restarts its pod on another node; choose Protect to hold the drain instead", w.Kind)
	case p.Spec.SingleReplica == holdfastv1alpha1.SingleReplicaSurge:
		st.State = holdfastv1alpha1.WorkloadSkipped
		st.Message = "single-replica StatefulSet under Surge: a second copy of the same identity cannot run, so it gets no budget and a drain restarts its pod on another node"
	default:
		st.State = holdfastv1alpha1.WorkloadSkipped
		st.Message = "single replica: any budget would block every drain, so it gets none (singleReplica: Skip); add replicas, or choose Surge or Protect"
	}
	return outcome{status: st}
}

// protect keeps minAvailable 1 and do-not-disrupt on the pod; once a drain of its node
// has waited escapeAfter, it relaxes the budget and removes the annotation.
func protect(o Observed, w *Workload, st holdfastv1alpha1.WorkloadStatus, d *Decision) outcome {
	p := o.Policy
	st.Budget = BudgetName(w.Kind, w.Name)
	drained := drainedNode(o, w)
	if drained == "" {
		annotatePods(o.Pods[workloadKey(w.Kind, w.Name)], true, d)
		st.State = holdfastv1alpha1.WorkloadProtected
		st.Message = "single replica under Protect: minAvailable 1 and karpenter.sh/do-not-disrupt on its pod"
		return outcome{status: st, budget: singleReplicaBudget(o, w, nil)}
	}
	since := o.Now
	if cur := existingBudget(o.Budgets, st.Budget); cur != nil {
		if t, err := time.Parse(time.RFC3339Nano, cur.Annotations[holdfastv1alpha1.BlockedSinceAnnotation]); err == nil {
			since = t
		}
	}
	if p.Spec.EscapeAfter == nil {
		annotatePods(o.Pods[workloadKey(w.Kind, w.Name)], true, d)
		st.State = holdfastv1alpha1.WorkloadProtected
		st.Message = fmt.Sprintf("blocks the drain of node %s (no escapeAfter)", drained)
		return outcome{status: st, budget: singleReplicaBudget(o, w, &since)}
	}
	escapeAt := since.Add(p.Spec.EscapeAfter.Duration)
	if o.Now.Before(escapeAt) {
		annotatePods(o.Pods[workloadKey(w.Kind, w.Name)], true, d)
		st.State = holdfastv1alpha1.WorkloadProtected
		st.Message = fmt.Sprintf("blocks the drain of node %s since %s; lets it through at %s", drained, since.UTC().Format(time.RFC3339), escapeAt.UTC().Format(time.RFC3339))
		requeue(d, escapeAt.Sub(o.Now))
		return outcome{status: st, budget: singleReplicaBudget(o, w, &since)}
	}
	annotatePods(o.Pods[workloadKey(w.Kind, w.Name)], false, d)
	st.State = holdfastv1alpha1.WorkloadEscaped
	st.Message = fmt.Sprintf("the drain of node %s was blocked for escapeAfter (%s): its budget now lets the eviction through", drained, p.Spec.EscapeAfter.Duration)
	b := budgetFor(p, w, policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1))}, &since)
	return outcome{status: st, budget: b}
}

// surgeStart scales a single-replica Deployment up by one when the node of its pod is
// being drained.
func surgeStart(o Observed, w *Workload, d *Decision) (string, bool) {
	node := drainedNode(o, w)
	if node == "" {
		return "", false
	}
	d.Scales = append(d.Scales, Scale{Name: w.Name, Replicas: w.Replicas + 1, Original: ptr.To(w.Replicas), Autoscaler: raisedBounds(w, w.Replicas+1)})
	requeue(d, surgePoll)
	return fmt.Sprintf("node %s is being drained: scaled from %d to %d; the eviction waits until the new pod is Ready on another node", node, w.Replicas, w.Replicas+1), true
}

// surgeStep moves a surge in progress on: it is done (and scaled back) once no pod is
// on a node being drained and the original number of pods is Ready elsewhere, or no pod
// is still starting. Done, it returns the size the workload is left at.
func surgeStep(o Observed, w *Workload, original int32, d *Decision) (string, int32, bool) {
	if w.Replicas != original+1 {
		// Someone else changed the size during the surge: theirs is the size to keep.
		d.Scales = append(d.Scales, Scale{Name: w.Name, Replicas: w.Replicas, Autoscaler: restoredBounds(w)})
		return "", w.Replicas, true
	}
	var ready int32
	for _, pod := range o.Pods[workloadKey(w.Kind, w.Name)] {
		if pod.Ready && !BeingDrained(o.Nodes[pod.Node]) {
			ready++
		}
	}
	// Short of Ready pods, the surge waits for those still starting; once none is, waiting
	// longer changes nothing (the new pod crash-loops, or finds no room), and scaling
	// back deletes the pods that are not Ready first.
	if node := drainedNode(o, w); node != "" || ready < original && assess(o, w).starting > 0 {
		requeue(d, surgePoll)
		if node != "" {
			return fmt.Sprintf("surged from %d to %d for the drain of node %s: %d Ready elsewhere", original, w.Replicas, node, ready), 0, false
		}
		return fmt.Sprintf("surged from %d to %d: waiting for %d Ready pods before scaling back (%d now)", original, w.Replicas, original, ready), 0, false
	}
	d.Scales = append(d.Scales, Scale{Name: w.Name, Replicas: original, Autoscaler: restoredBounds(w)})
	return "", original, true
}

// drainedNode returns the node being drained that one of w's pods is on, or "".
func drainedNode(o Observed, w *Workload) string {
	for _, pod := range o.Pods[workloadKey(w.Kind, w.Name)] {
		if BeingDrained(o.Nodes[pod.Node]) {
			return pod.Node
		}
	}
	return ""
}

func annotatePods(pods []Pod, on bool, d *Decision) {
	for _, pod := range pods {
		if pod.DoNotDisrupt != on {
			d.PodAnnotations = append(d.PodAnnotations, PodAnnotation{Pod: pod.Name, DoNotDisrupt: on})
		}
	}
}

func requeue(d *Decision, after time.Duration) {
	if d.RequeueAfter == 0 || after < d.RequeueAfter {
		d.RequeueAfter = after
	}
}

// singleReplicaBudget is minAvailable 1: no eviction until a second pod is Ready.
func singleReplicaBudget(o Observed, w *Workload, blockedSince *time.Time) *policyv1.PodDisruptionBudget {
	return budgetFor(o.Policy, w, policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1))}, blockedSince)
}

// budgetFor builds the managed budget of w with spec's numbers. It is owned by the
// workload, so that it goes with it, and labelled with the policy.
func budgetFor(p *holdfastv1alpha1.DisruptionPolicy, w *Workload, spec policyv1.PodDisruptionBudgetSpec, blockedSince *time.Time) *policyv1.PodDisruptionBudget {
	spec.Selector = w.Selector.DeepCopy()
	// Pods that are not Ready protect nothing: letting them go keeps a crash-looping pod
	// from blocking a drain forever.
	spec.UnhealthyPodEvictionPolicy = ptr.To(policyv1.AlwaysAllow)
	if spec.MaxUnavailable != nil {
		spec.MaxUnavailable = ptr.To(*spec.MaxUnavailable)
	}
	if spec.MinAvailable != nil {
		spec.MinAvailable = ptr.To(*spec.MinAvailable)
	}
	b := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{
			Name:      BudgetName(w.Kind, w.Name),
			Namespace: p.Namespace,
			Labels:    map[string]string{holdfastv1alpha1.PolicyLabel: p.Name, managedByLabel: managedByValue},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: cmp.Or(w.APIVersion, "apps/v1"), Kind: w.Kind, Name: w.Name, UID: w.UID,
			}},
		},
		Spec: spec,
	}
	if blockedSince != nil {
		b.Annotations = map[string]string{holdfastv1alpha1.BlockedSinceAnnotation: blockedSince.UTC().Format(time.RFC3339Nano)}
	}
	return b
}

// ownedByUnreadable reports whether b belongs to an object of a scale target that could
// not be read: absent from the observation, it is not known to be gone.
func ownedByUnreadable(b *policyv1.PodDisruptionBudget, unreadable []Unreadable) bool {
	return slices.ContainsFunc(b.OwnerReferences, func(ref metav1.OwnerReference) bool {
		return slices.ContainsFunc(unreadable, func(u Unreadable) bool { return u.Target.APIVersion == ref.APIVersion && u.Target.Kind == ref.Kind })
	})
}

func existingBudget(budgets []policyv1.PodDisruptionBudget, name string) *policyv1.PodDisruptionBudget {
	for i := range budgets {
		if budgets[i].Name == name {
			return &budgets[i]
		}
	}
	return nil
}

// coveringBudget returns the name of a budget holdfast does not manage whose selector
// matches w's pods, or "". The first by name, so that messages are stable.
func coveringBudget(budgets []policyv1.PodDisruptionBudget, w *Workload) string {
	var names []string
	for i := range budgets {
		b := &budgets[i]
		if _, managed := b.Labels[holdfastv1alpha1.PolicyLabel]; managed || b.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || sel.Empty() {
			// The disruption controller ignores budgets with an empty or invalid selector.
			continue
		}
		if sel.Matches(labels.Set(w.TemplateLabels)) {
			names = append(names, b.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return slices.Min(names)
}

// WinnerOf returns the policy that manages w: of those selecting it and not being
// deleted, the namespace's own before copies of ClusterDisruptionPolicies, then the
// oldest, then the first by name. It reads only w's kind and labels, so that other
// controllers settle overlapping policies by the same rule as budgets.
func WinnerOf(policies []holdfastv1alpha1.DisruptionPolicy, w *Workload) *holdfastv1alpha1.DisruptionPolicy {
	var best *holdfastv1alpha1.DisruptionPolicy
	for i := range policies {
		q := &policies[i]
		if q.DeletionTimestamp != nil {
			continue
		}
		if ok, err := Selects(q, w); err != nil || !ok {
			continue
		}
		if best == nil || olderThan(q, best) {
			best = q
		}
	}
	return best
}

// clusterCopy reports whether p is a ClusterDisruptionPolicy's copy.
func clusterCopy(p *holdfastv1alpha1.DisruptionPolicy) bool {
	_, ok := p.Labels[holdfastv1alpha1.ClusterPolicyLabel]
	return ok
}

func olderThan(a, b *holdfastv1alpha1.DisruptionPolicy) bool {
	if ca, cb := clusterCopy(a), clusterCopy(b); ca != cb {
		return !ca
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// status counts the outcomes, lists them (problems first) and sets the conditions.
func status(p *holdfastv1alpha1.DisruptionPolicy, outs []holdfastv1alpha1.WorkloadStatus, selectorErr error, now time.Time) holdfastv1alpha1.DisruptionPolicyStatus {
	st := holdfastv1alpha1.DisruptionPolicyStatus{
		ObservedGeneration: p.Generation,
		Conditions:         slices.Clone(p.Status.Conditions),
	}
	var conflicts, overridden int32
	for _, w := range outs {
		if w.Blocked {
			st.Blocked++
		}
		switch w.State {
		case holdfastv1alpha1.WorkloadDegraded:
			st.Budgeted++
			st.Degraded++
		case holdfastv1alpha1.WorkloadBudgeted, holdfastv1alpha1.WorkloadProtected, holdfastv1alpha1.WorkloadSurging, holdfastv1alpha1.WorkloadPacing:
			st.Budgeted++
		case holdfastv1alpha1.WorkloadConflict:
			conflicts++
		case holdfastv1alpha1.WorkloadOverridden:
			overridden++
		default:
			st.Unprotected++
		}
	}
	st.Selected = int32(len(outs))
	st.Conflicting = conflicts + overridden
	slices.SortFunc(outs, func(a, b holdfastv1alpha1.WorkloadStatus) int {
		return cmp.Or(
			cmp.Compare(rank(a.State), rank(b.State)),
			cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Name, b.Name))
	})
	if len(outs) > maxListed {
		outs = outs[:maxListed]
	}
	st.Workloads = outs

	ready := metav1.Condition{Type: holdfastv1alpha1.ConditionBudgetsReady, Status: metav1.ConditionTrue, Reason: holdfastv1alpha1.ReasonAllBudgetsManaged,
		Message: fmt.Sprintf("%d selected workloads have their budget", st.Budgeted)}
	switch {
	case selectorErr != nil:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, holdfastv1alpha1.ReasonInvalidSelector, selectorErr.Error()
	case st.Selected == 0:
		ready.Reason, ready.Message = holdfastv1alpha1.ReasonNoWorkloads, "the policy selects no workload"
	case st.Unprotected+conflicts > 0:
		ready.Status, ready.Reason = metav1.ConditionFalse, holdfastv1alpha1.ReasonSomeWithoutBudget
		ready.Message = fmt.Sprintf("%d of %d selected workloads have no budget from this policy: %d unprotected, %d conflicting; see status.workloads", st.Unprotected+conflicts, st.Selected-overridden, st.Unprotected, conflicts)
	}
	conflicted := metav1.Condition{Type: holdfastv1alpha1.ConditionConflicted, Status: metav1.ConditionFalse, Reason: holdfastv1alpha1.ReasonNoConflicts, Message: "no overlap with other budgets or policies"}
	switch {
	case conflicts > 0:
		conflicted.Status, conflicted.Reason = metav1.ConditionTrue, holdfastv1alpha1.ReasonConflictingBudgets
		conflicted.Message = fmt.Sprintf("%d workloads are covered by budgets holdfast does not manage; %d are managed by older policies", conflicts, overridden)
	case overridden > 0:
		conflicted.Status, conflicted.Reason = metav1.ConditionTrue, holdfastv1alpha1.ReasonOverriddenByPolicy
		conflicted.Message = fmt.Sprintf("%d workloads are managed by older policies that select them too", overridden)
	}
	degraded := metav1.Condition{Type: holdfastv1alpha1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: holdfastv1alpha1.ReasonAllHealthy, Message: "no selected workload is short of Ready pods but for drains and rollouts"}
	if st.Degraded > 0 {
		degraded.Status, degraded.Reason = metav1.ConditionTrue, holdfastv1alpha1.ReasonWorkloadsDegraded
		degraded.Message = fmt.Sprintf("%d selected workloads have fewer Ready pods than they want, not because of a drain or a rollout; see status.workloads", st.Degraded)
	}
	for _, c := range []metav1.Condition{ready, conflicted, degraded} {
		c.ObservedGeneration = p.Generation
		c.LastTransitionTime = metav1.NewTime(now)
		meta.SetStatusCondition(&st.Conditions, c)
	}
	return st
}

// rank orders states in status: what needs attention first.
func rank(s holdfastv1alpha1.WorkloadState) int {
	switch s {
	case holdfastv1alpha1.WorkloadConflict, holdfastv1alpha1.WorkloadNoDisruption, holdfastv1alpha1.WorkloadDegraded:
		return 0
	case holdfastv1alpha1.WorkloadEscaped, holdfastv1alpha1.WorkloadSurging, holdfastv1alpha1.WorkloadSkipped, holdfastv1alpha1.WorkloadPacing:
		return 1
	case holdfastv1alpha1.WorkloadOverridden:
		return 2
	}
	return 3
}
