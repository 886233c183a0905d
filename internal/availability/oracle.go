package availability

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// This file is holdfast's one answer to "which budgets cover this pod, what floor do
// they hold, and may the pod be evicted now, and if not why". The planner, the drain's
// refusal messages, the drain's dry run, the audit rules and the controllers all ask
// it, so that they never disagree. It follows the Kubernetes sources:
// pkg/registry/core/pod/storage/eviction.go (the Eviction API) and
// pkg/controller/disruption/disruption.go (the disruption controller).

// MaxDisruptedPods is the size of a budget's status.disruptedPods beyond which the
// Eviction API refuses every eviction under it (403): that many evictions were let through
// and the disruption controller has not seen them yet.
const MaxDisruptedPods = 2000

// BudgetSelector parses a budget's selector as the Eviction API and the disruption
// controller do in policy/v1: a nil selector selects no pod, an empty one every pod of
// the namespace, and an invalid one no pod (with the error).
func BudgetSelector(pdb *policyv1.PodDisruptionBudget) (labels.Selector, error) {
	sel, err := Selector(pdb.Spec.Selector)
	if err != nil {
		return labels.Nothing(), err
	}
	return sel, nil
}

// Covers reports whether the budget covers a pod of the namespace with these labels.
func Covers(pdb *policyv1.PodDisruptionBudget, namespace string, podLabels map[string]string) bool {
	if pdb.Namespace != namespace {
		return false
	}
	sel, err := BudgetSelector(pdb)
	return err == nil && sel.Matches(labels.Set(podLabels))
}

// Covering returns the budgets of pdbs that cover a pod of the namespace with these
// labels, in the order given. More than one makes the Eviction API refuse the pod.
func Covering(pdbs []policyv1.PodDisruptionBudget, namespace string, podLabels map[string]string) []*policyv1.PodDisruptionBudget {
	return NewBudgetSet(pdbs).Covering(namespace, podLabels)
}

// BudgetSet is budgets with their selectors parsed once, for asking which cover each of
// many pods: parsing a selector checks every label with a regular expression, which at
// thousands of pods was most of a policy decision's time.
type BudgetSet struct {
	budgets   []*policyv1.PodDisruptionBudget
	selectors []labels.Selector
}

// NewBudgetSet parses the budgets' selectors; a budget whose selector does not parse
// covers no pod, as the disruption controller reads it.
func NewBudgetSet(pdbs []policyv1.PodDisruptionBudget) BudgetSet {
	set := BudgetSet{budgets: make([]*policyv1.PodDisruptionBudget, len(pdbs)), selectors: make([]labels.Selector, len(pdbs))}
	for i := range pdbs {
		set.budgets[i] = &pdbs[i]
		set.selectors[i], _ = BudgetSelector(&pdbs[i])
	}
	return set
}

// Covering returns the budgets of the set that cover a pod of the namespace with these
// labels, in the set's order.
func (s BudgetSet) Covering(namespace string, podLabels map[string]string) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for i, b := range s.budgets {
		if b.Namespace == namespace && s.selectors[i].Matches(labels.Set(podLabels)) {
			out = append(out, b)
		}
	}
	return out
}

// UsesScale reports whether a budget's floor is counted from its pods' controllers'
// scale (maxUnavailable, or minAvailable as a percentage) rather than from its pods
// (an integer minAvailable).
func UsesScale(spec policyv1.PodDisruptionBudgetSpec) bool {
	return spec.MaxUnavailable != nil || (spec.MinAvailable != nil && spec.MinAvailable.Type == intstr.String)
}

// ExpectedPods is what the disruption controller expects of a budget covering pods pods
// whose controllers' scales add up to scale: the pods for an integer minAvailable, the
// scale otherwise, none for a budget with neither field.
func ExpectedPods(spec policyv1.PodDisruptionBudgetSpec, pods, scale int32) int32 {
	switch {
	case UsesScale(spec):
		return scale
	case spec.MinAvailable != nil:
		return pods
	}
	return 0
}

// DesiredHealthy is the floor a budget holds when expected pods are expected: an integer
// minAvailable as is, a percentage of expected rounded up, expected less maxUnavailable
// (a percentage of it rounded up) but never below zero. The error is the controller's
// for a value it cannot parse; it then allows nothing.
func DesiredHealthy(spec policyv1.PodDisruptionBudgetSpec, expected int32) (int32, error) {
	switch {
	case spec.MaxUnavailable != nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, err
		}
		return max(0, expected-int32(n)), nil
	case spec.MinAvailable != nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, err
		}
		return int32(n), nil
	}
	return 0, nil
}

// Floor is DesiredHealthy for a workload of replicas pods that a budget covers alone,
// with an unparsable value read as no floor (the API server rejects those).
func Floor(spec policyv1.PodDisruptionBudgetSpec, replicas int32) int32 {
	n, _ := DesiredHealthy(spec, replicas)
	return n
}

// DisruptionsAllowed is what the disruption controller writes for a budget: the healthy
// pods above the floor, and none while it expects no pod, so that a budget's first pods
// are safe before the controller has counted them.
func DisruptionsAllowed(expected, desired, current int32) int32 {
	if expected <= 0 || current <= desired {
		return 0
	}
	return current - desired
}

// NeverAllows reports whether a budget expecting expected pods and holding desired of
// them allows no disruption even with every one of them healthy: minAvailable equal to
// the replicas (1 of 1 on a single replica, or 50% of 1 rounded up), 100%,
// maxUnavailable 0. A budget expecting no pod is not counted: it allows nothing only
// until pods appear.
func NeverAllows(expected, desired int32) bool {
	return expected > 0 && DisruptionsAllowed(expected, desired, expected) == 0
}

// AllowsNone reports whether a budget, as the disruption controller last counted it for
// its current spec, allows no disruption of the pods it covers; false for no budget, for
// one not counted since its spec changed (the next count decides), and for one over no
// pod.
func AllowsNone(pdb *policyv1.PodDisruptionBudget) bool {
	return pdb != nil && pdb.Status.ObservedGeneration >= pdb.Generation && pdb.Status.ExpectedPods > 0 &&
		pdb.Status.DisruptionsAllowed <= 0
}

// BudgetSpec renders a budget's floor as "minAvailable 1" or "maxUnavailable 25%" for
// messages.
func BudgetSpec(pdb *policyv1.PodDisruptionBudget) string {
	switch s := pdb.Spec; {
	case s.MinAvailable != nil:
		return "minAvailable " + s.MinAvailable.String()
	case s.MaxUnavailable != nil:
		return "maxUnavailable " + s.MaxUnavailable.String()
	}
	return "no minAvailable or maxUnavailable"
}

// heldMessage explains a budget a DisruptionPolicy keeps that allows no eviction by
// itself, by how the operator recorded that it opens (Opening).
func heldMessage(name string, pdb *policyv1.PodDisruptionBudget) string {
	held := fmt.Sprintf("PodDisruptionBudget %s (%s) allows no eviction by itself", name, BudgetSpec(pdb))
	o, p := OpeningOf(pdb), ManagedBy(pdb)
	switch {
	case o.Surges():
		return fmt.Sprintf("%s: DisruptionPolicy %s first starts an extra pod beside its single replica, then lets the eviction through once that pod is Ready", held, p)
	case o.Protects() && o.EscapeAfter == nil:
		return fmt.Sprintf("%s: DisruptionPolicy %s protects its single replica and sets no escapeAfter, so the drain of its node waits until the pod is moved by hand", held, p)
	case o.Protects():
		return fmt.Sprintf("%s: DisruptionPolicy %s protects its single replica: the drain of its node waits escapeAfter (%s), then the budget lets the eviction through", held, p, *o.EscapeAfter)
	}
	// Held otherwise: outside every maintenance window, or until the policy makes room.
	return fmt.Sprintf("%s: DisruptionPolicy %s holds it for now (outside its maintenance windows, or until it makes room); the policy's status says which", held, p)
}

// ManagedBy is the DisruptionPolicy that manages the budget (its
// holdfast.dev/disruption-policy label), empty for a user's own.
func ManagedBy(pdb *policyv1.PodDisruptionBudget) string {
	return pdb.Labels[holdfastv1alpha1.PolicyLabel]
}

// Count is one budget as an eviction is judged against it: the object and the four
// numbers, either the ones the disruption controller wrote (CountOf) or holdfast's own
// (Budget.Count).
type Count struct {
	PDB    *policyv1.PodDisruptionBudget
	Status Status
	// Stale is true when the numbers were counted for an older spec: the Eviction API
	// then refuses every eviction until the controller counts again.
	Stale bool
	// SyncError is why the disruption controller cannot count the budget, when it
	// cannot: it then keeps disruptionsAllowed at 0.
	SyncError string
}

// CountOf reads a budget's count from its status, as the Eviction API reads it.
func CountOf(pdb *policyv1.PodDisruptionBudget) Count {
	c := Count{PDB: pdb, Stale: pdb.Status.ObservedGeneration < pdb.Generation, Status: Status{
		ExpectedPods: pdb.Status.ExpectedPods, DesiredHealthy: pdb.Status.DesiredHealthy,
		CurrentHealthy: pdb.Status.CurrentHealthy, DisruptionsAllowed: pdb.Status.DisruptionsAllowed,
	}}
	if cond := meta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition); cond != nil &&
		cond.Status == metav1.ConditionFalse && cond.Reason == policyv1.SyncFailedReason {
		c.SyncError = cond.Message
	}
	return c
}

// CountsOf reads the counts of budgets from their status.
func CountsOf(pdbs []*policyv1.PodDisruptionBudget) []Count {
	out := make([]Count, len(pdbs))
	for i, p := range pdbs {
		out[i] = CountOf(p)
	}
	return out
}

// Candidate is what the Eviction API reads of the pod to evict.
type Candidate struct {
	Phase corev1.PodPhase
	// Ready is the pod's Ready condition, the Eviction API's test of health.
	Ready bool
	// Terminating is true for a pod with a deletion timestamp.
	Terminating bool
}

// CandidateOf reads a pod as the Eviction API does.
func CandidateOf(pod *corev1.Pod) Candidate {
	return Candidate{Phase: pod.Status.Phase, Ready: PodReady(pod), Terminating: pod.DeletionTimestamp != nil}
}

// Reason says why an eviction is allowed or refused. The values are stable: they appear
// in messages, Events and JSON.
type Reason string

// Why an eviction is allowed.
const (
	// ReasonNotRunning: a pending, succeeded or failed pod is deleted without a budget
	// being asked.
	ReasonNotRunning Reason = "NotRunning"
	// ReasonTerminating: a pod being deleted is deleted again without a budget.
	ReasonTerminating Reason = "Terminating"
	// ReasonNoBudget: no budget covers the pod.
	ReasonNoBudget Reason = "NoBudget"
	// ReasonDisruptionAllowed: the budget has a disruption to give.
	ReasonDisruptionAllowed Reason = "DisruptionAllowed"
	// ReasonUnhealthyAlwaysAllow: the pod is not ready and its budget's
	// unhealthyPodEvictionPolicy is AlwaysAllow.
	ReasonUnhealthyAlwaysAllow Reason = "UnhealthyAlwaysAllow"
	// ReasonUnhealthyBudgetHealthy: the pod is not ready and its budget has the healthy
	// pods it needs without it (IfHealthyBudget, the default).
	ReasonUnhealthyBudgetHealthy Reason = "UnhealthyBudgetHealthy"
)

// Why an eviction is refused.
const (
	// ReasonOverlappingBudgets: more than one budget covers the pod (500).
	ReasonOverlappingBudgets Reason = "OverlappingBudgets"
	// ReasonBudgetStale: the budget's status was counted for an older spec (429).
	ReasonBudgetStale Reason = "BudgetStale"
	// ReasonBudgetInvalid: disruptionsAllowed is negative, or status.disruptedPods holds
	// more than MaxDisruptedPods evictions the controller has not seen (403).
	ReasonBudgetInvalid Reason = "BudgetInvalid"
	// ReasonBudgetUncomputable: the disruption controller cannot count the budget
	// (maxUnavailable or a percentage over DaemonSet pods, say), so it allows nothing (429).
	ReasonBudgetUncomputable Reason = "BudgetUncomputable"
	// ReasonSingleReplicaBudget: a budget over one replica that needs it healthy: it
	// never allows an eviction (429).
	ReasonSingleReplicaBudget Reason = "SingleReplicaBudget"
	// ReasonBudgetNeverAllows: a budget that allows nothing even with every pod healthy (429).
	ReasonBudgetNeverAllows Reason = "BudgetNeverAllows"
	// ReasonPolicyHeld: a budget a DisruptionPolicy manages allows nothing by itself; the
	// policy makes room for a drain (429 until it does).
	ReasonPolicyHeld Reason = "PolicyHeld"
	// ReasonUnhealthyPod: the pod is not ready, and under IfHealthyBudget its budget is
	// short of healthy pods, so its eviction needs a disruption the budget has not (429).
	ReasonUnhealthyPod Reason = "UnhealthyPod"
	// ReasonBudgetExhausted: the budget has no disruption to give now; it will once its
	// pods are healthy again (429).
	ReasonBudgetExhausted Reason = "BudgetExhausted"
)

// Eviction is the Eviction API's answer for one pod, with its reason.
type Eviction struct {
	Allowed bool
	// Code is the HTTP status of a refusal: 429 for a budget with no disruption to give,
	// 500 for a pod under more than one budget, 403 for a budget whose status the API
	// cannot trust.
	Code   int
	Reason Reason
	// Permanent is true for a refusal that waiting cannot end: a budget, the workload or
	// the pod's labels must change.
	Permanent bool
	// Budget is the budget that decided, when one did: the only one covering the pod.
	Budget *Count
	// Overlapping are the budgets covering the pod when there are several.
	Overlapping []*policyv1.PodDisruptionBudget
	// Message says why in one sentence, naming the budget.
	Message string
}

// CanEvict answers as the Eviction API does for a pod under budgets (the budgets
// covering it, as Covering finds them), in the API's order: a pod not running or being
// deleted is deleted without asking any budget; several budgets refuse with 500; a pod
// that is not ready goes under AlwaysAllow, or under IfHealthyBudget while its budget
// has the healthy pods it needs; anything else takes one of the budget's disruptions.
func CanEvict(pod Candidate, budgets []Count) Eviction {
	switch {
	case pod.Terminating:
		return Eviction{Allowed: true, Reason: ReasonTerminating, Message: "the pod is being deleted already, so no budget applies"}
	case pod.Phase == corev1.PodPending || pod.Phase == corev1.PodSucceeded || pod.Phase == corev1.PodFailed:
		return Eviction{Allowed: true, Reason: ReasonNotRunning, Message: fmt.Sprintf("the pod is %s, not running, so no budget applies", pod.Phase)}
	}
	switch len(budgets) {
	case 0:
		return Eviction{Allowed: true, Reason: ReasonNoBudget, Message: "no budget covers the pod"}
	case 1:
	default:
		pdbs := make([]*policyv1.PodDisruptionBudget, len(budgets))
		for i := range budgets {
			pdbs[i] = budgets[i].PDB
		}
		return Eviction{Code: 500, Reason: ReasonOverlappingBudgets, Permanent: true, Overlapping: pdbs, Message: OverlappingMessage(pdbs)}
	}
	b := &budgets[0]
	s := b.Status
	name := b.PDB.Namespace + "/" + b.PDB.Name
	if !pod.Ready {
		if p := b.PDB.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow {
			return Eviction{Allowed: true, Reason: ReasonUnhealthyAlwaysAllow, Budget: b,
				Message: fmt.Sprintf("the pod is not ready and PodDisruptionBudget %s's unhealthyPodEvictionPolicy is AlwaysAllow", name)}
		}
		if s.CurrentHealthy >= s.DesiredHealthy && s.DesiredHealthy > 0 {
			return Eviction{Allowed: true, Reason: ReasonUnhealthyBudgetHealthy, Budget: b,
				Message: fmt.Sprintf("the pod is not ready and PodDisruptionBudget %s has the %d healthy pods it needs without it", name, s.DesiredHealthy)}
		}
	}
	if v := b.Verdict(); v.Reason != ReasonBudgetExhausted || pod.Ready || s.CurrentHealthy >= s.DesiredHealthy {
		return v
	}
	return Eviction{Code: 429, Reason: ReasonUnhealthyPod, Budget: b,
		Message: fmt.Sprintf("the pod is not ready and PodDisruptionBudget %s has %d of the %d healthy pods it needs: under unhealthyPodEvictionPolicy IfHealthyBudget the Eviction API refuses it (AlwaysAllow would let it go)", name, s.CurrentHealthy, s.DesiredHealthy)}
}

// Verdict is the budget's answer to the eviction of a ready pod it alone covers: what
// every rule about one budget's refusals switches on, so that audit says what the
// Eviction API does.
func (b *Count) Verdict() Eviction {
	r := b.Reason()
	v := Eviction{Reason: r, Budget: b, Allowed: r == ReasonDisruptionAllowed, Message: b.message(r)}
	switch r {
	case ReasonBudgetInvalid:
		v.Code = 403
	case ReasonBudgetStale, ReasonBudgetExhausted, ReasonPolicyHeld:
		v.Code = 429
	case ReasonBudgetUncomputable, ReasonSingleReplicaBudget, ReasonBudgetNeverAllows:
		v.Code, v.Permanent = 429, true
	}
	return v
}

// Reason is Verdict's reason alone: the rules switch on it, and most never print the
// message, which took most of the time of asking.
func (b *Count) Reason() Reason {
	s := b.Status
	switch {
	case b.Stale:
		return ReasonBudgetStale
	case s.DisruptionsAllowed < 0, len(b.PDB.Status.DisruptedPods) > MaxDisruptedPods:
		return ReasonBudgetInvalid
	case s.DisruptionsAllowed > 0:
		return ReasonDisruptionAllowed
	case b.SyncError != "":
		return ReasonBudgetUncomputable
	case NeverAllows(s.ExpectedPods, s.DesiredHealthy) && ManagedBy(b.PDB) != "":
		return ReasonPolicyHeld
	case NeverAllows(s.ExpectedPods, s.DesiredHealthy) && s.ExpectedPods == 1:
		return ReasonSingleReplicaBudget
	case NeverAllows(s.ExpectedPods, s.DesiredHealthy):
		return ReasonBudgetNeverAllows
	}
	return ReasonBudgetExhausted
}

// message says why the budget answers r.
func (b *Count) message(r Reason) string {
	s := b.Status
	name := b.PDB.Namespace + "/" + b.PDB.Name
	switch r {
	case ReasonBudgetStale:
		return fmt.Sprintf("PodDisruptionBudget %s (%s) is still being processed: its status was counted for an older spec", name, BudgetSpec(b.PDB))
	case ReasonBudgetInvalid:
		if s.DisruptionsAllowed < 0 {
			return fmt.Sprintf("PodDisruptionBudget %s has a negative disruptionsAllowed", name)
		}
		return fmt.Sprintf("PodDisruptionBudget %s lists more than %d evictions the disruption controller has not seen yet", name, MaxDisruptedPods)
	case ReasonDisruptionAllowed:
		return fmt.Sprintf("PodDisruptionBudget %s allows %d disruption(s)", name, s.DisruptionsAllowed)
	case ReasonBudgetUncomputable:
		return fmt.Sprintf("PodDisruptionBudget %s (%s) cannot be computed by the disruption controller (%s), so it allows no eviction: use an integer minAvailable", name, BudgetSpec(b.PDB), b.SyncError)
	case ReasonPolicyHeld:
		return heldMessage(name, b.PDB)
	case ReasonSingleReplicaBudget:
		return fmt.Sprintf("PodDisruptionBudget %s (%s) wants %d healthy of %d expected pods, so it never allows an eviction: on a single replica every drain of its node waits forever; run 2 replicas or use maxUnavailable 1", name, BudgetSpec(b.PDB), s.DesiredHealthy, s.ExpectedPods)
	case ReasonBudgetNeverAllows:
		return fmt.Sprintf("PodDisruptionBudget %s (%s) wants %d healthy of %d expected pods, so it never allows an eviction: scale the workload to at least %d replicas or relax the budget", name, BudgetSpec(b.PDB), s.DesiredHealthy, s.ExpectedPods, s.DesiredHealthy+1)
	}
	return ExhaustedMessage(b)
}

// ExhaustedMessage describes a budget with no disruption to give, with its numbers, and
// says who makes room when a DisruptionPolicy manages it.
func ExhaustedMessage(b *Count) string {
	s := b.Status
	msg := fmt.Sprintf("PodDisruptionBudget %s/%s (%s): %d of %d healthy, needs %d, allows %d",
		b.PDB.Namespace, b.PDB.Name, BudgetSpec(b.PDB), s.CurrentHealthy, s.ExpectedPods, s.DesiredHealthy, s.DisruptionsAllowed)
	switch policy := ManagedBy(b.PDB); {
	case policy != "" && b.PDB.Annotations[holdfastv1alpha1.PacingAnnotation] != "":
		msg += "; paced by DisruptionPolicy " + policy + ": the next eviction waits until the latest replacement has been Ready for minReadySeconds"
	case policy != "":
		msg += "; managed by DisruptionPolicy " + policy + ", which makes room for the drain"
	}
	return msg
}

// OverlappingMessage explains the Eviction API's 500 for a pod under several budgets.
func OverlappingMessage(pdbs []*policyv1.PodDisruptionBudget) string {
	names := make([]string, len(pdbs))
	for i, p := range pdbs {
		names[i] = p.Namespace + "/" + p.Name
	}
	slices.Sort(names)
	return fmt.Sprintf("the pod is covered by %d PodDisruptionBudgets (%s) and the Eviction API refuses to evict such pods: make the budgets' selectors disjoint",
		len(pdbs), strings.Join(names, ", "))
}

// Count is the budget with holdfast's own numbers, computed from the snapshot for its
// current spec.
func (b *Budget) Count() Count {
	return Count{PDB: b.PDB, Status: b.Status, SyncError: b.SyncError}
}

// Candidate is the member as the Eviction API reads it; a template stands for running
// replicas.
func (m *Member) Candidate() Candidate {
	c := Candidate{Phase: corev1.PodRunning, Ready: m.Ready, Terminating: m.Terminating}
	if m.Pod != nil {
		c.Phase = m.Pod.Status.Phase
	}
	return c
}

// Eviction answers for one member as the Eviction API would, with holdfast's own numbers
// for its budgets rather than their possibly stale status.
func (m *Model) Eviction(p *Member) Eviction {
	counts := make([]Count, len(p.Budgets))
	for i, b := range p.Budgets {
		counts[i] = b.Count()
	}
	return CanEvict(p.Candidate(), counts)
}
