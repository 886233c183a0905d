package policy

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/availability"
)

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

// budgeted gives a workload of several replicas the policy's budget, unless that budget
// would allow no disruption.
func budgeted(p *holdfastv1alpha1.DisruptionPolicy, w *Workload, st holdfastv1alpha1.WorkloadStatus) verdict {
	spec := policyv1.PodDisruptionBudgetSpec{MaxUnavailable: p.Spec.MaxUnavailable, MinAvailable: p.Spec.MinAvailable}
	floor := availability.Floor(spec, st.Replicas)
	if w.Kind == holdfastv1alpha1.KindDaemonSet {
		// The disruption controller finds no scale for a DaemonSet, so it accepts only an
		// integer minAvailable, counted against the pods that exist.
		spec = policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(floor))}
	}
	if availability.NeverAllows(st.Replicas, floor) {
		st.State, st.Message = holdfastv1alpha1.WorkloadNoDisruption, msgNoDisruption(floor, st.Replicas)
		return verdict{status: st}
	}
	st.State, st.Budget = holdfastv1alpha1.WorkloadBudgeted, BudgetName(w.Kind, w.Name)
	st.Message = msgBudgeted(st.Replicas-floor, st.Replicas)
	return verdict{status: st, budget: budgetFor(p, w, spec, nil)}
}

// held gives a workload a budget that allows no disruption, outside every maintenance
// window: maxUnavailable 0, or for a DaemonSet minAvailable of all its pods.
func held(p *holdfastv1alpha1.DisruptionPolicy, w *Workload, st holdfastv1alpha1.WorkloadStatus, until time.Time) verdict {
	spec := policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0))}
	if w.Kind == holdfastv1alpha1.KindDaemonSet {
		spec = policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(st.Replicas))}
	}
	st.State, st.Budget = holdfastv1alpha1.WorkloadBudgeted, BudgetName(w.Kind, w.Name)
	st.Message = msgHeld(until)
	return verdict{status: st, budget: budgetFor(p, w, spec, nil)}
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

// OwnBudget reports whether b is a budget holdfast made: labelled managed-by holdfast
// and owned by the workload it is named after, as budgetFor makes it (or one of its zone
// budgets, named after the workload and the zone). A label alone is not enough to delete
// a budget by: a user's budget may carry a copied policy label.
func OwnBudget(b *policyv1.PodDisruptionBudget) bool {
	return b.Labels[managedByLabel] == managedByValue && slices.ContainsFunc(b.OwnerReferences, func(ref metav1.OwnerReference) bool {
		if zone, ok := b.Labels[holdfastv1alpha1.ZoneLabel]; ok {
			return zoneBudgetName(&Workload{Kind: ref.Kind, Name: ref.Name}, zoneSuffix(zone)) == b.Name
		}
		return BudgetName(ref.Kind, ref.Name) == b.Name
	})
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
