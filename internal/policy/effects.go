package policy

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// Effect is one write the operator makes for a policy: ApplyBudget, DeleteBudget,
// PodZone, NodeTaint, Surge or PodAnnotation. Decide returns a policy's effects in the
// one order that survives a crash between any two of them (see writes.ordered); the
// reconciler makes them in that order, and predict applies the same list to a snapshot,
// so that what audit and plan predict is what the operator does.
type Effect interface {
	// Loosens says the write may let more disruptions through than before it. A crash
	// just before the first such write leaves budgets at least as strict as before.
	Loosens() bool
}

// ApplyBudget creates or updates one of the policy's budgets.
type ApplyBudget struct {
	Budget *policyv1.PodDisruptionBudget
	// Loosen marks a zone-aware budget that lets more go than the one it replaces.
	Loosen bool
}

// DeleteBudget deletes one of the policy's budgets that no workload wants any more, as
// it was read: a budget another policy took over meanwhile stays.
type DeleteBudget struct {
	Budget *policyv1.PodDisruptionBudget
}

// NodeTaint puts one of holdfast's taints on a node: LostTaintKey (quarantine),
// OutOfServiceTaintKey (fence, with the proof that the node is down) or
// HandOffTaintKey. The node watcher takes them off.
type NodeTaint struct {
	Node string
	Key  string
	// Proof is why a fenced node is known to be down; "" for the other taints.
	Proof string
	// Bystanders are the StatefulSet pods a fence releases that the policy does not
	// fence for, named in its Event (Observed.Bystanders).
	Bystanders []string
}

func (e ApplyBudget) Loosens() bool { return e.Loosen }
func (DeleteBudget) Loosens() bool  { return true }
func (NodeTaint) Loosens() bool     { return false }
func (Surge) Loosens() bool         { return false }
func (PodAnnotation) Loosens() bool { return false }

// Loosens: a label set moves a pod into its zone's budget, which may let it go; a label
// removed moves it back under the workload's budget, held at 0 until the end.
func (e PodZone) Loosens() bool { return e.Zone != "" }

// Taint is the taint t puts on its node at now.
func (t NodeTaint) Taint(now time.Time) corev1.Taint {
	taint := corev1.Taint{Key: t.Key, TimeAdded: ptr.To(metav1.NewTime(now))}
	switch t.Key {
	case holdfastv1alpha1.LostTaintKey:
		taint.Effect = corev1.TaintEffectNoSchedule
	case holdfastv1alpha1.OutOfServiceTaintKey:
		taint.Value, taint.Effect = "nodeshutdown", corev1.TaintEffectNoExecute
	default:
		taint.Effect = corev1.TaintEffectPreferNoSchedule
	}
	return taint
}

// On returns a copy of n with t's taint added at now, unless n has a taint of its key
// already (another policy's effect made it first), and its annotations.
func (t NodeTaint) On(n *corev1.Node, now time.Time) *corev1.Node {
	out := n.DeepCopy()
	if !slices.ContainsFunc(out.Spec.Taints, func(c corev1.Taint) bool { return c.Key == t.Key }) {
		out.Spec.Taints = append(out.Spec.Taints, t.Taint(now))
	}
	for k, v := range t.Annotations(now) {
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[k] = v
	}
	return out
}

// Annotations are the node annotations t sets in the same write as its taint: a fence
// records its time and proof (FencedAnnotation), so that the node watcher releases only
// the fences holdfast made.
func (t NodeTaint) Annotations(now time.Time) map[string]string {
	if t.Key != holdfastv1alpha1.OutOfServiceTaintKey {
		return nil
	}
	return map[string]string{holdfastv1alpha1.FencedAnnotation: now.UTC().Format(time.RFC3339) + " " + t.Proof}
}

// EffectsOf are the effects of type T among effects, in their order.
func EffectsOf[T Effect](effects []Effect) []T {
	var out []T
	for _, e := range effects {
		if t, ok := e.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// writes are a policy's effects by kind, as Decide finds them; ordered lists them.
type writes struct {
	unlabel                 []PodZone
	tighten, apply, loosen  []*policyv1.PodDisruptionBudget
	labels                  []PodZone
	quarantine, fence, hand []NodeTaint
	surges                  []Surge
	annotations             []PodAnnotation
	delete                  []*policyv1.PodDisruptionBudget
}

// ordered lists the effects in the order that survives a crash between any two:
//   - zone-aware pods leave their zone's budget first, the budgets that tighten are
//     written next, then the others, those that loosen last, then the pods move into
//     their zone's budget (see zones.go): budgets stay at least as strict as before or
//     after;
//   - lost nodes are quarantined and fenced before the surges for their pods, and a node
//     handed over is tainted before its surge, so that the scheduler places the new
//     pods elsewhere;
//   - surges come after the budgets that let their evictions through;
//   - pods' marks follow, set and removed: Protect's do-not-disrupt, and the
//     safe-to-evict of a hand-off to cluster-autoscaler, which comes after the surge
//     whose new pod the eviction it lets cluster-autoscaler try will wait for; a crash
//     just before leaves the hand-off unmarked (cluster-autoscaler's pace, as without
//     the mark) until the next reconcile marks it, and a crash just before a removal
//     leaves the mark on for a reconcile more, when the budget, which the mark does not
//     open, still decides the eviction;
//   - the budgets no workload wants go last.
func (w writes) ordered() []Effect {
	budgets := func(bs []*policyv1.PodDisruptionBudget, loosen bool) []ApplyBudget {
		out := make([]ApplyBudget, len(bs))
		for i, b := range bs {
			out[i] = ApplyBudget{Budget: b, Loosen: loosen}
		}
		return out
	}
	deletes := make([]DeleteBudget, len(w.delete))
	for i, b := range w.delete {
		deletes[i] = DeleteBudget{Budget: b}
	}
	var out []Effect
	out = appendEffects(out, w.unlabel...)
	out = appendEffects(out, budgets(w.tighten, false)...)
	out = appendEffects(out, budgets(w.apply, false)...)
	out = appendEffects(out, budgets(w.loosen, true)...)
	out = appendEffects(out, w.labels...)
	out = appendEffects(out, slices.Concat(w.quarantine, w.fence, w.hand)...)
	out = appendEffects(out, w.surges...)
	out = appendEffects(out, w.annotations...)
	return appendEffects(out, deletes...)
}

// appendEffects appends effects of one kind to out.
func appendEffects[T Effect](out []Effect, effects ...T) []Effect {
	for _, e := range effects {
		out = append(out, e)
	}
	return out
}
