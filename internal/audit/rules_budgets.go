package audit

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/policy"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// covered is the pods a budget covers when every controller is at its scale.
func covered(b *availability.Budget) int32 {
	var n int32
	for _, m := range b.Members {
		n += m.Count
	}
	return n
}

// verdict is the eviction oracle's answer for a ready pod of b, on which the rules about
// one budget's refusals switch.
func verdict(b *availability.Budget) availability.Reason {
	c := b.Count()
	return c.Reason()
}

func budgetNeverAllows(_ *availability.Model, b *availability.Budget) *Result {
	if r := verdict(b); len(b.Members) == 0 || r != availability.ReasonBudgetNeverAllows && r != availability.ReasonSingleReplicaBudget {
		return nil
	}
	res := &Result{Message: fmt.Sprintf("PodDisruptionBudget %s (%s) requires %d of its %s to stay healthy, so it allows no eviction even when every pod is ready: every drain, upgrade or autoscaler consolidation of a node running %s blocks forever.",
		b.Name, availability.BudgetSpec(b.PDB), b.Status.DesiredHealthy, policy.Plural(b.Status.ExpectedPods, "pod"), workloadNames(b.Workloads))}
	fixBudget := obj{"spec": obj{"maxUnavailable": 1, "minAvailable": nil}}
	res.Fix = snippet(fmt.Sprintf("PodDisruptionBudget %s: replace %s with maxUnavailable: 1", b.Name, availability.BudgetSpec(b.PDB)), fixBudget)
	if covered(b) < 2 {
		res.Fix += "\n---\n" + snippet("and run a second replica so that a drain leaves one serving", obj{"spec": obj{"replicas": 2}})
	}
	return res
}

func budgetWithoutFloor(_ *availability.Model, b *availability.Budget) *Result {
	if b.PDB.Spec.MinAvailable != nil || b.PDB.Spec.MaxUnavailable != nil || b.Policy() != "" {
		return nil
	}
	pods := "the pods it selects"
	if len(b.Workloads) > 0 {
		pods = "the pods of " + workloadNames(b.Workloads)
	}
	return &Result{
		Message: fmt.Sprintf("PodDisruptionBudget %s sets neither minAvailable nor maxUnavailable: the disruption controller expects none of its pods and allows 0 disruptions, so every eviction of %s is refused and every drain of their nodes blocks forever.", b.Name, pods),
		Fix:     snippet(fmt.Sprintf("PodDisruptionBudget %s: say how many pods may go at once (check the spelling of the field)", b.Name), obj{"spec": obj{"maxUnavailable": 1}}),
	}
}

func noBudget(_ *availability.Model, w *availability.Workload) *Result {
	if w.Kind == snapshot.KindDaemonSet || w.Desired < 2 || len(w.Budgets) > 0 {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("%s runs %d replicas and no PodDisruptionBudget covers them: draining several nodes at once (a kubectl drain loop, a cluster upgrade, autoscaler consolidation) can evict all of them together.", describe(w), w.Desired),
		Fix:     budgetFix(w),
	}
}

func budgetMatchesNothing(m *availability.Model, b *availability.Budget) *Result {
	if len(b.Members) > 0 {
		return nil
	}
	var why string
	switch {
	case b.SelectorErr != nil:
		why = fmt.Sprintf("has an invalid selector (%v)", b.SelectorErr)
	case b.PDB.Spec.Selector == nil:
		why = "has no selector"
	case m.Source == snapshot.SourceLive:
		why = fmt.Sprintf("selects %q and no pod in namespace %s has those labels", b.Selector.String(), b.Namespace)
	default:
		why = fmt.Sprintf("selects %q and no workload of namespace %s in the manifests has those labels", b.Selector.String(), b.Namespace)
	}
	res := &Result{Message: fmt.Sprintf("PodDisruptionBudget %s %s: it protects nothing, so the pods it was written for can all be evicted at once.", b.Name, why)}
	// Point at the one unprotected workload of the namespace when there is exactly one.
	var orphans []*availability.Workload
	// The workloads are sorted by kind, then namespace: the namespace's are found by
	// kind, not by looking at every workload for every budget that matches nothing.
	ws := m.Workloads
	for len(ws) > 0 {
		kind := ws[0].Kind
		first := sort.Search(len(ws), func(i int) bool { return ws[i].Kind != kind || ws[i].Namespace >= b.Namespace })
		for _, w := range ws[first:] {
			if w.Kind != kind || w.Namespace != b.Namespace {
				break
			}
			if len(w.Budgets) == 0 && w.Kind != snapshot.KindDaemonSet {
				orphans = append(orphans, w)
			}
		}
		ws = ws[sort.Search(len(ws), func(i int) bool { return ws[i].Kind != kind }):]
	}
	if len(orphans) == 1 {
		res.Fix = snippet(fmt.Sprintf("PodDisruptionBudget %s: select the pods of %s", b.Name, describe(orphans[0])),
			obj{"spec": obj{"selector": obj{"matchLabels": podLabels(orphans[0])}}})
	} else {
		res.Fix = snippet(fmt.Sprintf("PodDisruptionBudget %s: select the labels of the pods to protect (kubectl get pods -n %s --show-labels)", b.Name, b.Namespace),
			obj{"spec": obj{"selector": obj{"matchLabels": obj{"app": "<app>"}}}})
	}
	return res
}

func overlappingBudgets(_ *availability.Model, b *availability.Budget) *Result {
	shared := map[*availability.Budget]int32{}
	example := map[*availability.Budget]string{}
	for _, p := range b.Members {
		for _, o := range p.Budgets {
			// Report each pair once, on the budget that sorts first.
			if o == b || o.Name < b.Name {
				continue
			}
			shared[o] += p.Count
			if _, ok := example[o]; !ok {
				example[o] = p.Name
			}
		}
	}
	if len(shared) == 0 {
		return nil
	}
	others := slices.SortedFunc(maps.Keys(shared), func(x, y *availability.Budget) int { return strings.Compare(x.Name, y.Name) })
	var parts []string
	for _, o := range others {
		parts = append(parts, fmt.Sprintf("%s (%s, e.g. %s)", o.Name, policy.Plural(shared[o], "pod"), example[o]))
	}
	return &Result{
		Message: fmt.Sprintf("PodDisruptionBudget %s covers the same pods as %s: the Eviction API answers 500 for a pod with more than one budget, so every drain of their nodes fails.", b.Name, strings.Join(parts, ", ")),
		Fix: snippet(fmt.Sprintf("keep one budget per pod: delete %s, or narrow the selectors so they no longer overlap", others[0].Name),
			obj{"spec": obj{"selector": obj{"matchLabels": b.PDB.Spec.Selector.MatchLabels}}}),
	}
}

func budgetUncomputable(_ *availability.Model, b *availability.Budget) *Result {
	unmanaged := b.UsesScale() && len(b.UnmanagedPods) > 0
	if b.SelectorErr != nil || (b.SyncError == "" && !unmanaged) {
		return nil
	}
	var over, cause string
	switch {
	case b.SyncError != "":
		over, cause = workloadNames(b.Workloads), b.SyncError
		if over == "" {
			over = "its pods"
		}
	default:
		over = "pods with no controller (" + strings.Join(firstN(b.UnmanagedPods, 3), ", ") + ")"
		cause = "pods without a controller have no scale to count"
	}
	res := &Result{Message: fmt.Sprintf("PodDisruptionBudget %s uses %s over %s, which the disruption controller cannot compute (%s): it keeps disruptionsAllowed at 0 and every eviction of these pods is refused.",
		b.Name, availability.BudgetSpec(b.PDB), over, cause)}
	floor := any("<number of pods - 1>")
	if n := covered(b); n >= 2 {
		floor = n - 1
	}
	res.Fix = snippet(fmt.Sprintf("PodDisruptionBudget %s: an integer minAvailable, the only form computed for DaemonSet and bare pods; keep it one below the pod count as nodes come and go (a holdfast DisruptionPolicy does)", b.Name),
		obj{"spec": obj{"maxUnavailable": nil, "minAvailable": floor}})
	return res
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}

func singleReplicaNoStrategy(_ *availability.Model, w *availability.Workload) *Result {
	if w.Kind == snapshot.KindDaemonSet || w.Desired != 1 || w.Facts.DoNotDisrupt {
		return nil
	}
	if w.HPA != nil && w.HPA.Spec.MinReplicas != nil && *w.HPA.Spec.MinReplicas >= 2 {
		return nil
	}
	for _, b := range w.Budgets {
		if b.Policy() != "" {
			return nil // the DisruptionPolicy's single-replica strategy is its strategy
		}
	}
	return &Result{
		Message: fmt.Sprintf("%s runs a single replica and declares no strategy for disruptions: every drain, upgrade or autoscaler consolidation of its node takes it down until the replacement is ready.%s", describe(w), autoscalerNotes(w.Facts)),
		Fix: snippet(describe(w)+": run two replicas (and add a PodDisruptionBudget with maxUnavailable: 1)", obj{"spec": obj{"replicas": 2}}) +
			"\n---\n" + snippet("or, if it must stay single, tell autoscalers not to disrupt it and move it yourself",
			obj{"spec": obj{"template": obj{"metadata": obj{"annotations": obj{availability.AnnotationKarpenterDoNotDisrupt: "true"}}}}}) +
			"\n---\n" + snippet("or let holdfast start a second replica before each drain of its node",
			obj{"apiVersion": "holdfast.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": obj{"name": "defaults", "namespace": w.Namespace},
				"spec": obj{"selector": obj{}, "maxUnavailable": 1, "singleReplica": "Surge"}}),
	}
}

// autoscalerNotes says what a template's autoscaler annotations do and do not do, as
// Karpenter and cluster-autoscaler read them, for a single replica they leave exposed.
func autoscalerNotes(f availability.TemplateFacts) string {
	var notes []string
	if f.DoNotDisruptFor > 0 {
		notes = append(notes, fmt.Sprintf(" karpenter.sh/do-not-disrupt: %s keeps Karpenter off each pod's node only for the pod's first %s.", f.DoNotDisruptFor, f.DoNotDisruptFor))
	}
	if f.DoNotEvict {
		notes = append(notes, " karpenter.sh/do-not-evict is ignored since Karpenter v1: it was renamed karpenter.sh/do-not-disrupt.")
	}
	if f.NotSafeToEvict {
		notes = append(notes, " cluster-autoscaler.kubernetes.io/safe-to-evict: \"false\" keeps only cluster-autoscaler from scaling its node down: Karpenter and drains still evict it.")
	}
	return strings.Join(notes, "")
}

func budgetAboveHPAMinimum(_ *availability.Model, b *availability.Budget) *Result {
	minAvailable := b.PDB.Spec.MinAvailable
	if minAvailable == nil {
		return nil
	}
	switch verdict(b) {
	case availability.ReasonBudgetNeverAllows, availability.ReasonSingleReplicaBudget, availability.ReasonPolicyHeld, availability.ReasonBudgetUncomputable:
		return nil // the budget blocks at every size: reported as that
	}
	var atMinimum int32
	var hpa *availability.Workload
	for _, w := range b.Workloads {
		n := w.Desired
		if w.HPA != nil {
			n = 1
			if w.HPA.Spec.MinReplicas != nil {
				n = *w.HPA.Spec.MinReplicas
			}
			hpa = w
		}
		atMinimum += n
	}
	if hpa == nil {
		return nil
	}
	desired, err := availability.DesiredHealthy(policyv1.PodDisruptionBudgetSpec{MinAvailable: minAvailable}, atMinimum)
	if err != nil || desired < atMinimum {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("PodDisruptionBudget %s requires %d healthy pods (minAvailable: %s) but HorizontalPodAutoscaler %s scales %s down to %s: whenever traffic is low the budget allows no eviction and drains block.",
			b.Name, desired, minAvailable.String(), hpa.HPA.Name, describe(hpa), policy.Plural(atMinimum, "replica")),
		Fix: snippet(fmt.Sprintf("PodDisruptionBudget %s: a floor that follows the scale", b.Name), obj{"spec": obj{"maxUnavailable": 1, "minAvailable": nil}}),
	}
}

func criticalDaemonSetUnprotected(_ *availability.Model, w *availability.Workload) *Result {
	if w.Kind != snapshot.KindDaemonSet || !w.Facts.Critical || w.Companion {
		return nil
	}
	return &Result{
		Message: fmt.Sprintf("%s is marked critical but drains run with --ignore-daemonsets: no budget stops its pods going down on every drained node at once, and no NodeCompanion guards its nodes.", describe(w)),
		Fix: snippet("add a NodeCompanion: one pod per node of the DaemonSet, drained one node at a time", obj{
			"apiVersion": "holdfast.dev/v1alpha1",
			"kind":       "NodeCompanion",
			"metadata":   obj{"name": w.Name + "-companion", "namespace": w.Namespace},
			"spec": obj{
				"daemonSet":      obj{"name": w.Name},
				"maxUnavailable": 1,
				"template":       obj{"spec": obj{"containers": []obj{{"name": "guard", "image": "<image that reports whether the node's data is safe>"}}}},
			},
		}),
	}
}

func budgetBlockedNow(_ *availability.Model, b *availability.Budget) *Result {
	if len(b.Members) == 0 || b.Status.ExpectedPods <= 0 || verdict(b) != availability.ReasonBudgetExhausted {
		return nil
	}
	var unready []string
	for _, p := range b.Members {
		if p.Pod != nil && !p.Ready {
			unready = append(unready, p.Name)
		}
	}
	res := &Result{Message: fmt.Sprintf("PodDisruptionBudget %s allows no eviction right now: it needs %s and has %d",
		b.Name, policy.Plural(b.Status.DesiredHealthy, "healthy pod"), b.Status.CurrentHealthy)}
	if len(unready) > 0 {
		res.Message += " (not ready: " + strings.Join(firstN(unready, 3), ", ") + ")"
	}
	res.Message += "; every drain of a node running its pods waits until they recover."
	policy := b.PDB.Spec.UnhealthyPodEvictionPolicy
	if len(unready) > 0 && (policy == nil || *policy != policyv1.AlwaysAllow) {
		res.Fix = snippet(fmt.Sprintf("PodDisruptionBudget %s: let drains evict pods that are not ready anyway", b.Name),
			obj{"spec": obj{"unhealthyPodEvictionPolicy": string(policyv1.AlwaysAllow)}})
	} else {
		res.Fix = fmt.Sprintf("# find why its pods are not ready: kubectl describe pods -n %s -l %s", b.Namespace, b.Selector.String())
	}
	return res
}

func budgetStatusStale(_ *availability.Model, b *availability.Budget) *Result {
	pdb := b.PDB
	if c := meta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition); c != nil &&
		c.Status == metav1.ConditionFalse && c.Reason == policyv1.SyncFailedReason {
		return &Result{
			Message: fmt.Sprintf("PodDisruptionBudget %s failed to sync (%s): the disruption controller keeps disruptionsAllowed at 0 and every eviction of its pods is refused.", b.Name, c.Message),
			Fix:     "# fix the cause above; for DaemonSet or bare pods use an integer minAvailable (see HF005)",
		}
	}
	if pdb.Status.ObservedGeneration < pdb.Generation {
		return &Result{
			Message: fmt.Sprintf("PodDisruptionBudget %s has status for generation %d but its spec is at generation %d: the Eviction API refuses every eviction of its pods until the disruption controller catches up.", b.Name, pdb.Status.ObservedGeneration, pdb.Generation),
			Fix:     "# check that kube-controller-manager runs the disruption controller: kubectl get --raw /readyz and its logs",
		}
	}
	return nil
}
