package policy

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// ObserveCluster reads, from the namespaces and every DisruptionPolicy there is, what
// DecideCluster needs for p: the live namespaces its selector picks, its copies, and the
// namespaces whose own policy has its name (that policy wins: it gets no copy).
func ObserveCluster(p *holdfastv1alpha1.ClusterDisruptionPolicy, namespaces []corev1.Namespace, policies []holdfastv1alpha1.DisruptionPolicy, now time.Time) ClusterObserved {
	obs := ClusterObserved{Policy: p, Now: now}
	for i := range policies {
		if metav1.IsControlledBy(&policies[i], p) {
			obs.Copies = append(obs.Copies, policies[i])
		}
	}
	sel, err := metav1.LabelSelectorAsSelector(&p.Spec.NamespaceSelector)
	if err != nil {
		obs.SelectorErr = err
		return obs
	}
	for _, ns := range namespaces {
		// A terminating namespace refuses new objects; its copy goes with it.
		if ns.Status.Phase == corev1.NamespaceTerminating || ns.DeletionTimestamp != nil || !sel.Matches(labels.Set(ns.Labels)) {
			continue
		}
		obs.Namespaces = append(obs.Namespaces, ns.Name)
		if slices.ContainsFunc(obs.Copies, func(c holdfastv1alpha1.DisruptionPolicy) bool { return c.Namespace == ns.Name }) {
			continue
		}
		if slices.ContainsFunc(policies, func(q holdfastv1alpha1.DisruptionPolicy) bool { return q.Namespace == ns.Name && q.Name == p.Name }) {
			obs.Taken = append(obs.Taken, ns.Name)
		}
	}
	slices.Sort(obs.Namespaces)
	return obs
}

// InEffect returns the DisruptionPolicies the operator keeps for the namespaces and
// policies given: the namespaces' own, and each ClusterDisruptionPolicy's copies where
// DecideCluster puts them, sorted by namespace and name. A copy not yet made counts from
// its cluster policy's creation, which orders it among the other copies as it will be.
func InEffect(namespaces []corev1.Namespace, policies []holdfastv1alpha1.DisruptionPolicy, cluster []holdfastv1alpha1.ClusterDisruptionPolicy, now time.Time) []holdfastv1alpha1.DisruptionPolicy {
	out := slices.Clone(policies)
	for i := range cluster {
		cp := &cluster[i]
		d := DecideCluster(ObserveCluster(cp, namespaces, policies, now))
		for _, c := range d.Delete {
			out = slices.DeleteFunc(out, func(q holdfastv1alpha1.DisruptionPolicy) bool { return q.Namespace == c.Namespace && q.Name == c.Name })
		}
		for _, c := range append(d.Create, d.Apply...) {
			c.CreationTimestamp = cp.CreationTimestamp
			at := slices.IndexFunc(out, func(q holdfastv1alpha1.DisruptionPolicy) bool { return q.Namespace == c.Namespace && q.Name == c.Name })
			if at >= 0 {
				c.CreationTimestamp = out[at].CreationTimestamp
				out[at] = *c
				continue
			}
			out = append(out, *c)
		}
	}
	slices.SortFunc(out, func(a, b holdfastv1alpha1.DisruptionPolicy) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}
