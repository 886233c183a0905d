package policy

import (
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/holdfast-dev/holdfast/internal/availability"
)

// Overlap is checked on pods, not on templates: a pod carries labels its template does
// not (pod-template-hash, statefulset.kubernetes.io/pod-name), a user's budget may select
// on them, and a budget of one workload may select the pods of another. Two budgets over
// one pod make the Eviction API answer 500 to every eviction of it, so a policy creates
// no budget whose pods any other budget covers, and no budget over pods another budget
// it keeps already covers.

// overlap is the budget, other than w's own, that covers a pod w's budget would cover,
// or "", and whether holdfast manages it: the first by name, so that messages are
// stable. Candidates are the user's budgets, the budgets of policies that take
// precedence over o.Policy (or that are gone: the sweep deletes those), and siblings,
// the budgets o.Policy decides for its other workloads.
func overlap(o Observed, w *Workload, siblings []*policyv1.PodDisruptionBudget) (string, bool) {
	if w.Selector == nil {
		return "", false
	}
	sel, err := metav1.LabelSelectorAsSelector(w.Selector)
	if err != nil {
		return "", false
	}
	own := BudgetName(w.Kind, w.Name)
	var candidates []policyv1.PodDisruptionBudget
	for i := range o.Budgets {
		b := &o.Budgets[i]
		if by := availability.ManagedBy(b); by == "" || by != o.Policy.Name && precedes(o, by) {
			candidates = append(candidates, *b)
		}
	}
	for _, b := range siblings {
		if b.Name != own {
			candidates = append(candidates, *b)
		}
	}
	set := availability.NewBudgetSet(candidates)
	var first *policyv1.PodDisruptionBudget
	for i, pod := range podLabels(o, w) {
		if i > 0 && !sel.Matches(labels.Set(pod)) {
			continue
		}
		for _, b := range set.Covering(o.Policy.Namespace, pod) {
			if first == nil || b.Name < first.Name {
				first = b
			}
		}
	}
	if first == nil {
		return "", false
	}
	return first.Name, availability.ManagedBy(first) != ""
}

// precedes reports whether the budgets of policy q stand against o.Policy's: q is older
// (WinnerOf's order), or gone (its budgets are orphans until the sweep deletes them).
// Only the younger of two policies reports the overlap and removes its budget: two that
// both did would delete and recreate their budgets in turn forever.
func precedes(o Observed, q string) bool {
	for i := range o.Policies {
		if o.Policies[i].Name == q {
			return olderThan(&o.Policies[i], o.Policy)
		}
	}
	return true
}

// podLabels are the labels of the pods w's budget is checked on: w's own template first
// and always, so that a workload with no pod yet is checked too; every workload's
// template, which its pods will carry (so two workloads created together are found before
// their pods exist); and the namespace's live pods when they are known.
func podLabels(o Observed, w *Workload) []map[string]string {
	out := make([]map[string]string, 0, 1+len(o.Workloads)+len(o.PodLabels))
	out = append(out, w.TemplateLabels)
	for i := range o.Workloads {
		out = append(out, o.Workloads[i].TemplateLabels)
	}
	return append(out, o.PodLabels...)
}
