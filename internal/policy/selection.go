package policy

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
)

// Selects reports whether policy p selects workload w: its kind is listed (in kinds, or
// in scaleTargets for a custom one) and its labels match the selector.
func Selects(p *holdfastv1alpha1.DisruptionPolicy, w *Workload) (bool, error) {
	if w.Custom() {
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
// single replica under Surge or Protect, one with a surge set, a workload short of
// available pods (degraded, a replacement coming, or one not yet Ready for the
// workload's own minReadySeconds), one whose budget carries the pacing mark, or one
// whose budget blocks a drain under surge: WhenBlocked. Any other workload costs no read
// of its pods, so a change to one workload lists the pods of none but the few in motion.
func NeedsPods(o *Observed, w *Workload) bool {
	p := o.Policy
	if w.Custom() {
		// Its Ready count comes only from its pods.
		return w.Selector != nil
	}
	if ZoneAware(p, w) {
		// Its pods are labelled with their zones, and say which zone is disrupted.
		return true
	}
	if w.Surge != nil || w.Available < w.Replicas || selectsAny(w.Selector, o.LostPodLabels) {
		return true
	}
	if w.Kind == holdfastv1alpha1.KindDaemonSet {
		return false
	}
	if w.Replicas == 1 && (Protects(p) || Surges(p, w.Kind)) {
		return true
	}
	b := existingBudget(o.Budgets, BudgetName(w.Kind, w.Name))
	if b == nil || b.Labels[holdfastv1alpha1.PolicyLabel] != p.Name {
		return false
	}
	_, pacing := b.Annotations[holdfastv1alpha1.PacingAnnotation]
	return pacing || mayBlockDrains(p, w) && availability.AllowsNone(b)
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

// selectsAny reports whether selector matches one of the label sets.
func selectsAny(selector *metav1.LabelSelector, sets []map[string]string) bool {
	if len(sets) == 0 || selector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(sets, func(l map[string]string) bool { return sel.Matches(labels.Set(l)) })
}
