package policy

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
)

const (
	// maxListed bounds status.workloads and status.namesTaken, so that a policy over a
	// large namespace, or a cluster policy over many namespaces, stays a
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
// beta, which still runs in many clusters.
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
	// Annotations are the workload's annotations.
	Annotations map[string]string
	// Surge is a Deployment's surge set, if it has one (Observe attaches it).
	Surge *SurgeSet
}

// SurgeSet is a surge set as Decide reads it: the ReplicaSet a policy owns that runs
// extra pods of a Deployment's template beside the Deployment's own (SurgeOfLabel).
type SurgeSet struct {
	Name string
	// Policy names the DisruptionPolicy that owns it.
	Policy string
	// Deployment and DeploymentUID name the Deployment it stands beside.
	Deployment    string
	DeploymentUID types.UID
	// Replicas is how many extra pods it runs: 0 once its surge is over, while it keeps
	// the record of a hand-off.
	Replicas int32
	// HandOff is its HandOffAnnotation.
	HandOff string
	// Since is when it was made: the Deployment's pods made since are the replacements
	// its surge waits for.
	Since time.Time
	// Pods are its live pods, read with its Deployment's when Decide reads those.
	Pods []Pod
	// Unclaimed says no policy selects its Deployment any more, or the Deployment is
	// gone: nothing is left for it to stand beside.
	Unclaimed bool
}

// Pod is one live (not terminating) pod of a workload whose pods Decide reads.
type Pod struct {
	Name         string
	Node         string
	Ready        bool
	DoNotDisrupt bool
	// SafeToEvict is its cluster-autoscaler.kubernetes.io/safe-to-evict, "" without.
	SafeToEvict string
	// Unsafe says what would keep cluster-autoscaler from evicting the pod but for a
	// safe-to-evict "true" (caUnsafe): local storage, kube-system; "" for nothing but
	// its budgets.
	Unsafe string
	// Surge says the pod is a surge set's.
	Surge bool
	// Since is when the pod's Ready condition last changed, or its creation when it has
	// none yet.
	Since time.Time
	// Created tells the pod a surge added from the one it surged for.
	Created time.Time
	// Zone is the pod's holdfast.dev/zone label, "" when it has none yet.
	Zone string
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
	// PodLabels are the labels of the namespace's live pods, on which overlapping budgets
	// are found besides the workloads' templates. From manifests, which hold no pods,
	// every workload's template stands for its pods.
	PodLabels []map[string]string
	// Marked are the namespace's live pods that carry holdfast's marks, by mark: pod name
	// to the policy that put it on.
	Marked Marks
	// Nodes are the nodes of those pods.
	Nodes map[string]*corev1.Node
	// Claims are Karpenter's NodeClaims of those nodes, keyed by node name; nil without
	// Karpenter.
	Claims map[string]NodeClaim
	// NodeGroups are those nodes that are in cluster-autoscaler's node groups, keyed by
	// node name; nil without cluster-autoscaler.
	NodeGroups map[string]NodeGroupMember
	// Autoscalers is what holdfast knows of the autoscalers' configuration, and Failure
	// the bounds of the response to lost nodes (Settings).
	Autoscalers Autoscalers
	Failure     FailureSettings
	// Consent is what the operator allows the policy's response to lost nodes
	// (ConsentOf).
	Consent Consent
	// Surges are the namespace's surge sets, each attached to its Deployment among
	// Workloads too.
	Surges []SurgeSet
	// Health is what the response to lost nodes reads of every node.
	Health NodeHealth
	// Bystanders are, under fencing, the StatefulSet pods on each lost node that the
	// policy does not fence for (other namespaces', other StatefulSets'), by node: the
	// out-of-service taint releases them too.
	Bystanders map[string][]string
	// LostRoom is the planner's answer, when more than one node is lost at once, on
	// which pods of the lost nodes fit on the survivors: by namespace/name, "" for one
	// that fits, else why not (LostRoomWanted, SetLostRoom). Nil: every pod fits.
	LostRoom map[string]string
	// Stuck are the StatefulSets' pods being deleted on suspect nodes, keyed by
	// workloadKey: a dead kubelet never confirms their deletion (Kubernetes' eviction
	// of the unreachable node's pods leaves them so), and only fencing releases them.
	Stuck map[string][]Pod
	// LostPodLabels are the labels of the namespace's pods on suspect nodes
	// (NodeHealth.Suspects): the workloads they belong to need their pods read.
	LostPodLabels []map[string]string
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

// Surge sets a Deployment's surge set to run Replicas extra pods of the Deployment's
// current template, owned by the policy and keeping the record of a hand-off; or, with
// Delete, removes the set and its pods. Its values are absolute, so that a write
// repeated after a crash, or by another policy taking the set over, changes nothing more.
type Surge struct {
	// Name is the surge set's (SurgeSetName).
	Name          string
	Deployment    string
	DeploymentUID types.UID
	Replicas      int32
	// HandOff is the value for HandOffAnnotation; "" for none.
	HandOff string
	Delete  bool
}

// Decision is what the reconciler does for one policy.
type Decision struct {
	// Effects are its writes, in the order the reconciler makes them (writes.ordered).
	Effects      []Effect
	Status       holdfastv1alpha1.DisruptionPolicyStatus
	RequeueAfter time.Duration
}

// Custom reports whether w is an object of a scale target.
func (w *Workload) Custom() bool { return w.APIVersion != "" }

// WorkloadKey keys Observed.Pods.
func WorkloadKey(kind, name string) string { return kind + "/" + name }

// BeingDrained reports whether a node is cordoned, its maintenance planned
// (availability.Cordoned), or tainted by an autoscaler that is about to drain it.
func BeingDrained(n *corev1.Node) bool {
	if n == nil {
		return false
	}
	if availability.Cordoned(n) {
		return true
	}
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return slices.Contains(drainTaints, t.Key) })
}

// Decide computes the budgets, surges, pod annotations and status of one policy. It
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
			d.RequeueAfter = sooner(d.RequeueAfter, win.closesAt.Sub(o.Now))
		} else if !win.nextOpening.IsZero() {
			d.RequeueAfter = sooner(d.RequeueAfter, win.nextOpening.Sub(o.Now))
		}
	}
	var ws writes
	ws.surges = unclaimedSurges(o)
	f := assessLosses(o)
	d.RequeueAfter = sooner(d.RequeueAfter, f.next)
	// Two passes: the first finds the budgets the policy would make, the second checks
	// each against the others, so that two workloads whose budgets would cover one pod
	// both report the conflict, whatever exists already.
	var selected []*Workload
	var siblings []*policyv1.PodDisruptionBudget
	for i := range o.Workloads {
		w := &o.Workloads[i]
		if ok, _ := Selects(p, w); !ok {
			continue
		}
		selected = append(selected, w)
		if v := decideWorkload(o, w, win, closed, nil, f); v.budget != nil {
			siblings = append(siblings, v.budget)
		}
	}
	wanted := map[string]bool{}
	kept := map[PodMark]map[string]bool{DoNotDisrupt: {}, SafeToEvict: {}}
	var outs []holdfastv1alpha1.WorkloadStatus
	var lostNodes []string
	for _, w := range selected {
		_, nodes := f.lostPods(o, w)
		lostNodes = append(lostNodes, nodes...)
		fences, next := f.fences(o, w, nodes)
		ws.fence = append(ws.fence, fences...)
		d.RequeueAfter = sooner(d.RequeueAfter, next)
		v := decideWorkload(o, w, win, closed, siblings, f)
		ws.surges = append(ws.surges, v.surges...)
		ws.annotations = append(ws.annotations, v.annotations...)
		if v.status.State == holdfastv1alpha1.WorkloadProtected {
			for _, pod := range o.Pods[WorkloadKey(w.Kind, w.Name)] {
				kept[DoNotDisrupt][pod.Name] = true
			}
		}
		if pod, ok := caMark(o, w, v); ok {
			kept[SafeToEvict][pod.Name] = true
			if pod.SafeToEvict == "" {
				ws.annotations = append(ws.annotations, PodAnnotation{Pod: pod.Name, Mark: SafeToEvict, Set: true})
			}
		}
		d.RequeueAfter = sooner(d.RequeueAfter, v.requeueAfter)
		if zonable(o, w, v) {
			z := decideZones(o, w, v.budget, closed, f.lost)
			for _, b := range z.budgets() {
				wanted[b.Name] = true
			}
			for _, name := range z.keep {
				wanted[name] = true
			}
			ws.unlabel = append(ws.unlabel, z.unlabel...)
			ws.tighten, ws.loosen = append(ws.tighten, z.tighten...), append(ws.loosen, z.loosen...)
			ws.labels = append(ws.labels, z.labels...)
			d.RequeueAfter = sooner(d.RequeueAfter, z.requeueAfter)
			v.status.Budget, v.status.Zone = z.budget, z.zone
			switch {
			case keepsMessage(v.status.State):
				if !closed {
					v.status.Message += "; " + z.message
				}
			case !closed:
				v.status.Message = z.message // else the window's hold says why nothing may go
			}
			v.status.Blocked = availability.AllowsNone(existingBudget(o.Budgets, z.budget))
		} else if v.budget != nil {
			wanted[v.budget.Name] = true
			ws.apply = append(ws.apply, v.budget)
			v.status.Blocked = availability.AllowsNone(existingBudget(o.Budgets, v.budget.Name))
		}
		outs = append(outs, v.status)
	}
	for i := range o.Budgets {
		b := &o.Budgets[i]
		if b.Labels[holdfastv1alpha1.PolicyLabel] == p.Name && OwnBudget(b) && !wanted[b.Name] && !ownedByUnreadable(b, o.Unreadable) {
			ws.delete = append(ws.delete, b)
		}
	}
	ws.annotations = append(ws.annotations, unmark(o.Marked, func(by string) bool { return by == p.Name }, kept)...)
	if len(p.Spec.ScaleTargets) > 0 {
		d.RequeueAfter = sooner(d.RequeueAfter, scaleTargetPoll)
	}
	d.Status = status(p, outs, nil, o.Now)
	if len(o.Unreadable) > 0 {
		msgs := make([]string, 0, len(o.Unreadable))
		for _, u := range o.Unreadable {
			msgs = append(msgs, u.Message)
		}
		meta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{
			Type: holdfastv1alpha1.ConditionBudgetsReady, Status: metav1.ConditionFalse, Reason: holdfastv1alpha1.ReasonScaleTargetUnreadable,
			Message: msgUnreadable(msgs), ObservedGeneration: p.Generation, LastTransitionTime: metav1.NewTime(o.Now),
		})
	}
	d.Status.LostNodes = lostNodesStatus(lostNodes)
	ws.fence = compactFences(ws.fence)
	if f.brake == "" && surgesForFailure(p) && len(d.Status.LostNodes) > 0 {
		ws.quarantine = unquarantined(o, withSuspects(o, d.Status.LostNodes))
	}
	ws.hand = handOffTaints(o, ws.surges)
	d.Effects = ws.ordered()
	nl := nodesLostCondition(d.Status, f.brake)
	nl.ObservedGeneration, nl.LastTransitionTime = p.Generation, metav1.NewTime(o.Now)
	meta.SetStatusCondition(&d.Status.Conditions, nl)
	if fc, ok := fencingCondition(p, o.Consent); ok {
		fc.ObservedGeneration, fc.LastTransitionTime = p.Generation, metav1.NewTime(o.Now)
		meta.SetStatusCondition(&d.Status.Conditions, fc)
	} else {
		meta.RemoveStatusCondition(&d.Status.Conditions, holdfastv1alpha1.ConditionFencingAllowed)
	}
	d.Status.Window = windowStatus(p.Spec.MaintenanceWindows, win, winErr)
	c := windowCondition(p.Spec.MaintenanceWindows, win, winErr)
	c.ObservedGeneration, c.LastTransitionTime = p.Generation, metav1.NewTime(o.Now)
	meta.SetStatusCondition(&d.Status.Conditions, c)
	return d
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
		case holdfastv1alpha1.WorkloadRecovering:
			st.Recovering++
			if w.Budget != "" {
				st.Budgeted++
			}
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
			cmp.Compare(rank(a), rank(b)),
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
		ready.Message = msgSomeWithoutBudget(st.Unprotected+conflicts, st.Selected-overridden, st.Unprotected, conflicts)
	}
	conflicted := metav1.Condition{Type: holdfastv1alpha1.ConditionConflicted, Status: metav1.ConditionFalse, Reason: holdfastv1alpha1.ReasonNoConflicts, Message: "no overlap with other budgets or policies"}
	switch {
	case conflicts > 0:
		conflicted.Status, conflicted.Reason = metav1.ConditionTrue, holdfastv1alpha1.ReasonConflictingBudgets
		conflicted.Message = msgConflicting(conflicts, overridden)
	case overridden > 0:
		conflicted.Status, conflicted.Reason = metav1.ConditionTrue, holdfastv1alpha1.ReasonOverriddenByPolicy
		conflicted.Message = fmt.Sprintf("%d workloads are managed by older policies that select them too", overridden)
	}
	degraded := metav1.Condition{Type: holdfastv1alpha1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: holdfastv1alpha1.ReasonAllHealthy, Message: "no selected workload is short of Ready pods but for drains and rollouts"}
	if st.Degraded > 0 {
		degraded.Status, degraded.Reason = metav1.ConditionTrue, holdfastv1alpha1.ReasonWorkloadsDegraded
		degraded.Message = msgDegradedWorkloads(st.Degraded)
	}
	for _, c := range []metav1.Condition{ready, conflicted, degraded} {
		c.ObservedGeneration = p.Generation
		c.LastTransitionTime = metav1.NewTime(now)
		meta.SetStatusCondition(&st.Conditions, c)
	}
	return st
}

// rank orders workloads in status: what needs attention first, then what is in
// progress (a zone being disrupted among them: its Events are derived from status).
func rank(w holdfastv1alpha1.WorkloadStatus) int {
	switch w.State {
	case holdfastv1alpha1.WorkloadConflict, holdfastv1alpha1.WorkloadNoDisruption, holdfastv1alpha1.WorkloadDegraded, holdfastv1alpha1.WorkloadRecovering:
		return 0
	case holdfastv1alpha1.WorkloadEscaped, holdfastv1alpha1.WorkloadSurging, holdfastv1alpha1.WorkloadSkipped, holdfastv1alpha1.WorkloadPacing:
		return 1
	case holdfastv1alpha1.WorkloadOverridden:
		return 2
	}
	if w.Zone != "" {
		return 1
	}
	return 3
}
