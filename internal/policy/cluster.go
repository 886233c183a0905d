package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// ClusterObserved is everything DecideCluster reads for one ClusterDisruptionPolicy.
type ClusterObserved struct {
	Policy *holdfastv1alpha1.ClusterDisruptionPolicy
	// Namespaces are the live namespaces the selector picks, sorted.
	Namespaces []string
	// Copies are the policy's copies, in any namespace.
	Copies []holdfastv1alpha1.DisruptionPolicy
	// Taken are the selected namespaces where a DisruptionPolicy of the policy's name is
	// not one of its copies.
	Taken []string
	// SelectorErr is the namespace selector's error, if it is invalid.
	SelectorErr error
	Now         time.Time
}

// ClusterDecision is what the reconciler does for one ClusterDisruptionPolicy.
type ClusterDecision struct {
	// Create are the copies for selected namespaces that have none.
	Create []*holdfastv1alpha1.DisruptionPolicy
	// Apply are the copies that exist, to update where they differ.
	Apply []*holdfastv1alpha1.DisruptionPolicy
	// Delete are the copies in namespaces the policy no longer selects.
	Delete []*holdfastv1alpha1.DisruptionPolicy
	Status holdfastv1alpha1.ClusterDisruptionPolicyStatus
}

// DecideCluster computes the copies and status of one ClusterDisruptionPolicy. It reads
// only its argument and does not modify it.
func DecideCluster(o ClusterObserved) ClusterDecision {
	p := o.Policy
	var d ClusterDecision
	ready := metav1.Condition{Type: holdfastv1alpha1.ConditionPoliciesReady, Status: metav1.ConditionTrue, Reason: holdfastv1alpha1.ReasonAllNamespacesCovered}
	if o.SelectorErr != nil {
		// Nothing is created or deleted until the selector is fixed.
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, holdfastv1alpha1.ReasonInvalidNamespaces, "spec.namespaceSelector: "+o.SelectorErr.Error()
		d.Status = clusterStatus(p, nil, nil, ready, o.Now)
		return d
	}
	hasCopy := map[string]bool{}
	for _, c := range o.Copies {
		hasCopy[c.Namespace] = true
	}
	wanted := map[string]bool{}
	for _, ns := range o.Namespaces {
		switch {
		case slices.Contains(o.Taken, ns):
		case hasCopy[ns]:
			wanted[ns] = true
			d.Apply = append(d.Apply, copyIn(p, ns))
		default:
			wanted[ns] = true
			d.Create = append(d.Create, copyIn(p, ns))
		}
	}
	var kept []holdfastv1alpha1.DisruptionPolicy
	for i := range o.Copies {
		c := &o.Copies[i]
		if wanted[c.Namespace] {
			kept = append(kept, *c)
		} else if c.DeletionTimestamp == nil {
			d.Delete = append(d.Delete, c)
		}
	}
	taken := slices.Sorted(slices.Values(o.Taken))
	ready.Message = fmt.Sprintf("%d selected namespaces have the policy", len(wanted))
	if len(taken) > 0 {
		ready.Status, ready.Reason = metav1.ConditionFalse, holdfastv1alpha1.ReasonNamesTaken
		ready.Message = fmt.Sprintf("%d of %d selected namespaces have a DisruptionPolicy named %s of their own, so they get no copy: %s",
			len(taken), len(o.Namespaces), p.Name, strings.Join(taken[:min(len(taken), 5)], ", "))
	}
	d.Status = clusterStatus(p, kept, taken, ready, o.Now)
	d.Status.Namespaces = int32(len(wanted))
	return d
}

// copyIn is the policy's copy in namespace ns: its template under its name, labelled
// as a copy (which puts it after the namespace's own policies) and owned by it, so that
// it goes with it.
func copyIn(p *holdfastv1alpha1.ClusterDisruptionPolicy, ns string) *holdfastv1alpha1.DisruptionPolicy {
	return &holdfastv1alpha1.DisruptionPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name:      p.Name,
			Namespace: ns,
			Labels:    map[string]string{holdfastv1alpha1.ClusterPolicyLabel: p.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: holdfastv1alpha1.GroupVersion.String(), Kind: "ClusterDisruptionPolicy",
				Name: p.Name, UID: p.UID, Controller: ptr.To(true),
			}},
		},
		Spec: *p.Spec.Template.DeepCopy(),
	}
}

// clusterStatus sums the copies' counts and sets the condition.
func clusterStatus(p *holdfastv1alpha1.ClusterDisruptionPolicy, copies []holdfastv1alpha1.DisruptionPolicy, taken []string, ready metav1.Condition, now time.Time) holdfastv1alpha1.ClusterDisruptionPolicyStatus {
	st := holdfastv1alpha1.ClusterDisruptionPolicyStatus{
		ObservedGeneration: p.Generation,
		NamesTaken:         taken[:min(len(taken), maxListed)],
		Conditions:         slices.Clone(p.Status.Conditions),
	}
	for _, c := range copies {
		st.Selected += c.Status.Selected
		st.Budgeted += c.Status.Budgeted
		st.Conflicting += c.Status.Conflicting
		st.Unprotected += c.Status.Unprotected
		st.Degraded += c.Status.Degraded
		st.Blocked += c.Status.Blocked
	}
	ready.ObservedGeneration, ready.LastTransitionTime = p.Generation, metav1.NewTime(now)
	meta.SetStatusCondition(&st.Conditions, ready)
	return st
}
