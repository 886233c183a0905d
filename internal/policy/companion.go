package policy

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
)

const (
	// degradedAfter is how long a node may lack its companion, other than through a
	// drain, before the NodeCompanion reports Degraded: long enough for a scheduling and
	// start-up, short enough for a human to notice a companion that cannot run.
	degradedAfter = 2 * time.Minute
	// maxListedNodes caps the node lists in status, which must stay small on big clusters;
	// the counts stay exact.
	maxListedNodes = 20
	// SpecHashAnnotation records the hash of the Deployment spec holdfast last wrote, so
	// that a reconcile compares its intent rather than a spec the apiserver has defaulted.
	SpecHashAnnotation = "holdfast.dev/spec-hash"
	// evictionReason is the DisruptionTarget reason the Eviction API sets on a pod before
	// deleting it: the trace a drain leaves on a companion.
	evictionReason = "EvictionByEvictionAPI"
)

// Reasons of the Ready and Degraded conditions and of the node gaps.
const (
	ReasonAllNodesCovered   = "AllNodesCovered"
	ReasonBudgetHeld        = "BudgetHeld"
	ReasonCompanionsMissing = "CompanionsMissing"
	ReasonTargetNotFound    = "TargetNotFound"
	ReasonAsExpected        = "AsExpected"

	GapDrained  = "Drained"
	GapPending  = "Pending"
	GapNotReady = "NotReady"
	GapCordoned = "Cordoned"
)

// CompanionObserved is what a reconcile gathered: the NodeCompanion, its target, the nodes and the
// companion pods, and the evictions seen on the pod watch since the last status write.
type CompanionObserved struct {
	Companion *holdfastv1alpha1.NodeCompanion
	// DaemonSet is the target; nil for a node selector target or when it is not found.
	DaemonSet *appsv1.DaemonSet
	// TargetMissing is true when spec.daemonSet names a DaemonSet that does not exist.
	TargetMissing bool
	Nodes         []corev1.Node
	Pods          []corev1.Pod
	// Evictions maps a node to when its companion was evicted.
	Evictions map[string]time.Time
	Now       time.Time
}

// CompanionDecision is what the controller should make true.
type CompanionDecision struct {
	// Deployment is nil when the owned Deployment must be left as it is (target missing).
	Deployment *appsv1.Deployment
	// Budget is nil when the budgets must be left as they are (target missing).
	Budget *policyv1.PodDisruptionBudget
	// GuardBudget is nil when no guard budget should exist.
	GuardBudget *policyv1.PodDisruptionBudget
	// StalePods are companion pods bound to nodes that no longer exist.
	StalePods []*corev1.Pod
	Status    holdfastv1alpha1.NodeCompanionStatus
	// OpenEvictions are the evictions whose drain is not over. Status records every one
	// (drained, or evicted and not seen cordoned yet), so that they outlive the process;
	// the controller also keeps them until its status write is in its cache.
	OpenEvictions map[string]time.Time
	// RequeueAfter is when the status would change with no event: a gap turning Degraded.
	RequeueAfter time.Duration
}

type nodeState struct {
	node      *corev1.Node
	companion *corev1.Pod // a non-terminating companion pod bound to the node
}

// nodeCase is one eligible node as the companion decision sees it.
type nodeCase struct {
	name  string
	state *nodeState
	// drained says its companion was evicted while it was cordoned, drainedAt when.
	drained   bool
	drainedAt time.Time
	now       time.Time
}

// nodeVerdict is what one eligible node means: covered (no reason), missing its
// companion (a gap's reason and message), or excluded from the count.
type nodeVerdict struct {
	excluded        bool
	reason, message string
	since           time.Time
}

// nodeStep decides a node, or passes it on to the next step.
type nodeStep func(c *nodeCase) (nodeVerdict, bool)

// nodeChain decides each eligible node: the first step that applies decides it; a node
// none applies to has no companion yet.
var nodeChain = []nodeStep{cordonedAway, covering, drainedHolds, companionNotReady}

func (c *nodeCase) decide() nodeVerdict {
	for _, step := range nodeChain {
		if v, ok := step(c); ok {
			return v
		}
	}
	return nodeVerdict{reason: GapPending, message: msgNoCompanion, since: c.now}
}

// cordonedAway leaves out a cordoned node whose companion went away without a drain: the
// scheduler never places a companion there, so it would hold the budget forever.
func cordonedAway(c *nodeCase) (nodeVerdict, bool) {
	if !c.state.node.Spec.Unschedulable || c.state.companion != nil || c.drained {
		return nodeVerdict{}, false
	}
	return nodeVerdict{excluded: true, reason: GapCordoned, message: msgCordonedAway, since: c.now}, true
}

// covering counts a node whose companion is Ready.
func covering(c *nodeCase) (nodeVerdict, bool) {
	return nodeVerdict{}, c.state.companion != nil && availability.PodReady(c.state.companion)
}

// drainedHolds keeps a drained node, still cordoned, holding the budget: the protection
// itself, one node at a time.
func drainedHolds(c *nodeCase) (nodeVerdict, bool) {
	if !c.drained {
		return nodeVerdict{}, false
	}
	return nodeVerdict{reason: GapDrained, message: msgDrainedHolds(c.drainedAt), since: c.drainedAt}, true
}

// companionNotReady is a node whose companion is there but not Ready.
func companionNotReady(c *nodeCase) (nodeVerdict, bool) {
	if c.state.companion == nil {
		return nodeVerdict{}, false
	}
	return nodeVerdict{reason: GapNotReady, message: msgCompanionNotReady(c.state.companion.Name), since: c.now}, true
}

// DecideCompanion computes the owned objects and the status of a NodeCompanion. It is pure: the
// same CompanionObserved always gives the same CompanionDecision.
//
// Which nodes count (and so hold the budget when their companion is down) is the heart
// of it. An eligible node counts unless it is cordoned and has no companion, because the
// scheduler never places a companion on a cordoned node: such a node would hold one unit
// of the budget forever and block every other drain. The exception is a cordoned node
// whose companion was evicted (a drain): it keeps counting until it is uncordoned or
// deleted, which is the protection itself, one node at a time. A companion that left a
// cordoned node any other way (a rollout, a crash, a deletion) does not hold the budget.
func DecideCompanion(o CompanionObserved) CompanionDecision {
	nc := o.Companion
	old := nc.Status
	var d CompanionDecision

	ds := o.DaemonSet
	if nc.Spec.DaemonSet == nil {
		ds = nil
	}
	p := placementOf(nc, ds)
	nodes := map[string]*nodeState{}
	var eligibleNodes []*corev1.Node
	for i := range o.Nodes {
		n := &o.Nodes[i]
		if o.TargetMissing || !availability.Eligible(n, p.nodeSelector, p.affinity, p.tolerations) {
			continue
		}
		nodes[n.Name] = &nodeState{node: n}
		eligibleNodes = append(eligibleNodes, n)
	}
	pods := readCompanionPods(o, nodes)
	d.StalePods = pods.stale
	ready, guarded, seen := pods.ready, pods.guarded, pods.evicted

	var drained map[string]time.Time
	d.OpenEvictions, drained = drainedNodes(slices.Concat(old.Drained, old.Evicted), seen, nodes)

	oldMissing, oldExcluded := gapsByNode(old.Missing), gapsByNode(old.Excluded)
	var desired []string
	var missing, excluded []holdfastv1alpha1.NodeGap
	var covered int32
	for _, name := range slices.Sorted(maps.Keys(nodes)) {
		c := &nodeCase{name: name, state: nodes[name], now: o.Now}
		c.drainedAt, c.drained = drained[name]
		v := c.decide()
		switch {
		case v.excluded:
			excluded = append(excluded, gap(oldExcluded, name, v.reason, v.message, v.since))
			continue
		case v.reason == "":
			covered++
		default:
			missing = append(missing, gap(oldMissing, name, v.reason, v.message, v.since))
		}
		desired = append(desired, name)
	}

	st := holdfastv1alpha1.NodeCompanionStatus{
		ObservedGeneration: nc.Generation,
		Desired:            int32(len(desired)),
		Ready:              ready,
		NodesCovered:       covered,
		NodesMissing:       int32(len(missing)),
		Missing:            capGaps(missing),
		Excluded:           capGaps(excluded),
		Guarded:            slices.Sorted(maps.Keys(guarded)),
		Conditions:         slices.Clone(old.Conditions),
	}
	for _, name := range slices.Sorted(maps.Keys(d.OpenEvictions)) {
		n := holdfastv1alpha1.DrainedNode{Node: name, Since: metav1.NewTime(d.OpenEvictions[name])}
		if _, ok := drained[name]; ok {
			st.Drained = append(st.Drained, n)
		} else {
			st.Evicted = append(st.Evicted, n)
		}
	}

	if !o.TargetMissing {
		d.Deployment = deployment(nc, ds, eligibleNodes, int32(len(desired)))
		d.Budget, d.GuardBudget = budgets(nc, int32(len(desired)), int32(len(guarded)))
	}
	if o.TargetMissing {
		// The companions are left as they are, and so is the count they were made for.
		st.Desired = old.Desired
		st.NodesCovered = ready
	}
	d.RequeueAfter = setConditions(&st, nc, o.TargetMissing, missing, o.Now)
	d.Status = st
	return d
}

// companionPods is what a NodeCompanion's pods say: the nodes whose companion was evicted
// and when (the evictions remembered included), the Ready companions, the nodes whose
// guard holds, and the pods bound to nodes that no longer exist.
type companionPods struct {
	evicted map[string]time.Time
	ready   int32
	guarded map[string]bool
	stale   []*corev1.Pod
}

// readCompanionPods reads o's pods, and gives each eligible node in nodes its companion.
func readCompanionPods(o CompanionObserved, nodes map[string]*nodeState) companionPods {
	existing := map[string]bool{}
	for i := range o.Nodes {
		existing[o.Nodes[i].Name] = true
	}
	seen := maps.Clone(o.Evictions)
	if seen == nil {
		seen = map[string]time.Time{}
	}
	out := companionPods{evicted: seen, guarded: map[string]bool{}}
	for i := range o.Pods {
		pod := &o.Pods[i]
		if pod.Spec.NodeName != "" && !existing[pod.Spec.NodeName] {
			// Terminating or not, no kubelet will ever confirm its end.
			out.stale = append(out.stale, pod)
			continue
		}
		if node, at, ok := EvictedFrom(pod); ok {
			// Being evicted: it no longer covers its node, which is now drained.
			if prev, dup := seen[node]; !dup || at.Before(prev) {
				seen[node] = at
			}
			continue
		}
		if pod.DeletionTimestamp != nil {
			continue
		}
		if availability.PodReady(pod) {
			out.ready++
		}
		if pod.Spec.NodeName == "" {
			continue
		}
		if s := nodes[pod.Spec.NodeName]; s != nil && (s.companion == nil || availability.PodReady(pod)) {
			s.companion = pod
		}
		if g := o.Companion.Spec.Guard; g != nil && g.Enabled && pod.Labels[holdfastv1alpha1.GuardLabel] == holdfastv1alpha1.GuardHold {
			out.guarded[pod.Spec.NodeName] = true
		}
	}
	return out
}

// drainedNodes merges the evictions remembered in status with those just seen. An
// eviction stays open until its node is deleted or leaves the target, or a companion runs
// there again: the drain is then over. The informers of nodes and pods
// are separate streams, so the eviction can be seen before the cordon that preceded it;
// an open eviction on a node that is not (yet) cordoned is kept, not dropped. Of the open
// evictions, those on nodes that are cordoned and have no companion are drained nodes.
func drainedNodes(remembered []holdfastv1alpha1.DrainedNode, seen map[string]time.Time, nodes map[string]*nodeState) (open, drained map[string]time.Time) {
	open = map[string]time.Time{}
	add := func(node string, at time.Time) {
		s := nodes[node]
		// The evicted pod is no companion (it carries the eviction or is gone), and the
		// note came from the same pod stream as the cache: any companion there is new.
		if s == nil || s.companion != nil {
			return
		}
		if prev, ok := open[node]; !ok || at.Before(prev) {
			open[node] = at
		}
	}
	for _, r := range remembered {
		add(r.Node, r.Since.Time)
	}
	for node, at := range seen {
		add(node, at)
	}
	drained = map[string]time.Time{}
	for node, at := range open {
		if s := nodes[node]; s.node.Spec.Unschedulable && s.companion == nil {
			drained[node] = at
		}
	}
	return open, drained
}

func gapsByNode(gaps []holdfastv1alpha1.NodeGap) map[string]holdfastv1alpha1.NodeGap {
	m := make(map[string]holdfastv1alpha1.NodeGap, len(gaps))
	for _, g := range gaps {
		m[g.Node] = g
	}
	return m
}

// gap builds a NodeGap, keeping the time it was first seen when it is the same gap as
// before, so that status does not change on every pass.
func gap(old map[string]holdfastv1alpha1.NodeGap, node, reason, message string, since time.Time) holdfastv1alpha1.NodeGap {
	if prev, ok := old[node]; ok && prev.Reason == reason {
		since = prev.Since.Time
	}
	return holdfastv1alpha1.NodeGap{Node: node, Reason: reason, Message: message, Since: metav1.NewTime(since)}
}

func capGaps(gaps []holdfastv1alpha1.NodeGap) []holdfastv1alpha1.NodeGap {
	if len(gaps) > maxListedNodes {
		return gaps[:maxListedNodes]
	}
	return gaps
}

// setConditions sets Ready and Degraded and returns when Degraded would next change.
func setConditions(st *holdfastv1alpha1.NodeCompanionStatus, nc *holdfastv1alpha1.NodeCompanion, targetMissing bool, missing []holdfastv1alpha1.NodeGap, now time.Time) time.Duration {
	readyC := metav1.Condition{Type: holdfastv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonAllNodesCovered,
		Message: fmt.Sprintf("%d of %d nodes have a Ready companion", st.NodesCovered, st.Desired)}
	degradedC := metav1.Condition{Type: holdfastv1alpha1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: ReasonAsExpected, Message: "no node lacks its companion for long"}
	var requeue time.Duration

	var drained, late []string
	for _, g := range missing {
		switch {
		case g.Reason == GapDrained:
			drained = append(drained, g.Node+" (since "+g.Since.UTC().Format(time.RFC3339)+")")
		case now.Sub(g.Since.Time) >= degradedAfter:
			late = append(late, g.Node+" ("+g.Reason+")")
		default:
			if wait := degradedAfter - now.Sub(g.Since.Time); requeue == 0 || wait < requeue {
				requeue = wait
			}
		}
	}
	switch {
	case targetMissing:
		msg := fmt.Sprintf("DaemonSet %s/%s not found: the companions are left as they are; delete the NodeCompanion to remove them", CompanionNamespace(nc), nc.Spec.DaemonSet.Name)
		readyC.Status, readyC.Reason, readyC.Message = metav1.ConditionFalse, ReasonTargetNotFound, msg
		degradedC.Status, degradedC.Reason, degradedC.Message = metav1.ConditionTrue, ReasonTargetNotFound, msg
		requeue = 0
	case len(drained) > 0:
		readyC.Status, readyC.Reason = metav1.ConditionFalse, ReasonBudgetHeld
		readyC.Message = "drained and still cordoned, holding the disruption budget: " + strings.Join(drained, ", ") + "; uncordon or delete to release it"
	case len(missing) > 0:
		readyC.Status, readyC.Reason = metav1.ConditionFalse, ReasonCompanionsMissing
		readyC.Message = fmt.Sprintf("%d of %d nodes lack a Ready companion", len(missing), st.Desired)
	}
	if !targetMissing && len(late) > 0 {
		degradedC.Status, degradedC.Reason = metav1.ConditionTrue, ReasonCompanionsMissing
		degradedC.Message = fmt.Sprintf("without a Ready companion for over %s: %s", degradedAfter, strings.Join(late, ", "))
	}
	for _, c := range []metav1.Condition{readyC, degradedC} {
		c.ObservedGeneration = nc.Generation
		// meta.SetStatusCondition keeps the old transition time when the status is
		// unchanged; setting it here keeps the clock injected.
		c.LastTransitionTime = metav1.NewTime(now)
		meta.SetStatusCondition(&st.Conditions, c)
	}
	return requeue
}

// EvictedFrom returns the node a pod was evicted from through the Eviction API, and when.
func EvictedFrom(pod *corev1.Pod) (string, time.Time, bool) {
	if pod.Spec.NodeName == "" {
		return "", time.Time{}, false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == evictionReason {
			return pod.Spec.NodeName, c.LastTransitionTime.Time, true
		}
	}
	return "", time.Time{}, false
}

func CompanionNamespace(nc *holdfastv1alpha1.NodeCompanion) string {
	if nc.Spec.DaemonSet != nil && nc.Spec.DaemonSet.Namespace != "" {
		return nc.Spec.DaemonSet.Namespace
	}
	return nc.Namespace
}

// CompanionLabels are the labels that tie pods, the Deployment and the budgets to one
// NodeCompanion.
func CompanionLabels(nc *holdfastv1alpha1.NodeCompanion) map[string]string {
	return map[string]string{holdfastv1alpha1.CompanionLabel: nc.Name}
}

func ownedMeta(nc *holdfastv1alpha1.NodeCompanion, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       nc.Namespace,
		Labels:          map[string]string{holdfastv1alpha1.CompanionLabel: nc.Name, managedByLabel: managedByValue},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(nc, holdfastv1alpha1.GroupVersion.WithKind("NodeCompanion"))},
	}
}

// deployment builds the companion Deployment: one pod per node through required hostname
// anti-affinity, and maxSurge 0 so that a rollout frees a node before it fills it again
// (with a surge, the new pod has nowhere to go and the rollout hangs Pending).
func deployment(nc *holdfastv1alpha1.NodeCompanion, ds *appsv1.DaemonSet, eligibleNodes []*corev1.Node, replicas int32) *appsv1.Deployment {
	tmpl := *nc.Spec.Template.DeepCopy()
	tmpl.Labels = maps.Clone(tmpl.Labels)
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	maps.Copy(tmpl.Labels, CompanionLabels(nc))

	spec := &tmpl.Spec
	if ds != nil {
		spec.NodeSelector = maps.Clone(spec.NodeSelector)
		if len(ds.Spec.Template.Spec.NodeSelector) > 0 && spec.NodeSelector == nil {
			spec.NodeSelector = map[string]string{}
		}
		maps.Copy(spec.NodeSelector, ds.Spec.Template.Spec.NodeSelector)
		if a := ds.Spec.Template.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			if spec.Affinity == nil {
				spec.Affinity = &corev1.Affinity{}
			}
			spec.Affinity.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.DeepCopy()}
		}
	} else if len(nc.Spec.NodeSelector) > 0 {
		spec.NodeSelector = maps.Clone(spec.NodeSelector)
		if spec.NodeSelector == nil {
			spec.NodeSelector = map[string]string{}
		}
		maps.Copy(spec.NodeSelector, nc.Spec.NodeSelector)
	}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: CompanionLabels(nc)},
			TopologyKey:   corev1.LabelHostname,
		}},
	}
	spec.Tolerations = companionTolerations(nc, ds, eligibleNodes)
	if nc.Spec.PriorityClassName != "" {
		spec.PriorityClassName = nc.Spec.PriorityClassName
	}

	one := intstr.FromInt32(1)
	zero := intstr.FromInt32(0)
	dep := &appsv1.Deployment{
		ObjectMeta: ownedMeta(nc, nc.Name),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: CompanionLabels(nc)},
			Template: tmpl,
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &zero, MaxUnavailable: &one},
			},
		},
	}
	dep.Annotations = map[string]string{SpecHashAnnotation: hashOf(dep.Spec)}
	return dep
}

// budgets builds the disruption budgets. Without a guard, one budget with the spec's
// maxUnavailable covers every companion and follows the Deployment's scale by itself.
//
// With a guard, a companion that labels itself holdfast.dev/guard=hold must become
// unevictable without touching any other node. A pod covered by two budgets cannot be
// evicted at all (the Eviction API answers 500), so the two budgets split the pods:
//   - the guard budget selects the held pods and allows no disruption (maxUnavailable 0),
//     so `kubectl drain` of a held node retries until the label goes;
//   - the main budget selects every other companion. Its maxUnavailable would be taken
//     against the Deployment's full scale, so every held pod would also use up one unit
//     of it; it gets instead an integer minAvailable computed from the nodes that are not
//     held: desired - held - maxUnavailable.
//
// The pod sets the label itself, so a guard takes effect at once even if the operator is
// down. Clearing it moves the pod back under the main budget before the operator raises
// minAvailable, which allows one extra disruption for that moment.
func budgets(nc *holdfastv1alpha1.NodeCompanion, desired, held int32) (*policyv1.PodDisruptionBudget, *policyv1.PodDisruptionBudget) {
	maxUnavailable := intstr.FromInt32(1)
	if nc.Spec.MaxUnavailable != nil {
		maxUnavailable = *nc.Spec.MaxUnavailable
	}
	main := &policyv1.PodDisruptionBudget{
		ObjectMeta: ownedMeta(nc, nc.Name),
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: CompanionLabels(nc)},
			MaxUnavailable: &maxUnavailable,
		},
	}
	if nc.Spec.Guard == nil || !nc.Spec.Guard.Enabled {
		return main, nil
	}
	unheld := desired - held
	floor, err := availability.DesiredHealthy(policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &maxUnavailable}, desired)
	allowed := desired - floor
	if err != nil {
		allowed = 1
	}
	minAvailable := intstr.FromInt32(max(unheld-allowed, 0))
	main.Spec.MaxUnavailable = nil
	main.Spec.MinAvailable = &minAvailable
	main.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{
		Key: holdfastv1alpha1.GuardLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{holdfastv1alpha1.GuardHold},
	}}

	zero := intstr.FromInt32(0)
	guard := &policyv1.PodDisruptionBudget{
		ObjectMeta: ownedMeta(nc, nc.Name+"-guard"),
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector: &metav1.LabelSelector{
				MatchLabels: CompanionLabels(nc),
				MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: holdfastv1alpha1.GuardLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{holdfastv1alpha1.GuardHold},
				}},
			},
			MaxUnavailable: &zero,
		},
	}
	return main, guard
}

func hashOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// A Deployment spec always marshals; an empty hash forces an update.
		return ""
	}
	h := fnv.New64a()
	h.Write(b)
	return fmt.Sprintf("%016x", h.Sum64())
}
