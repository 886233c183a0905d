package clusterdisruptionpolicy

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/announce"
)

// Event reasons, one per change a human would want to know about.
const (
	EventNameTaken     = "NameTaken"
	EventPolicyCopied  = "PolicyCopied"
	EventPolicyRemoved = "PolicyRemoved"
)

// statusEvents returns the Events that explain the move from one status of the policy
// named name to the next: a Warning for each namespace newly listed in namesTaken. They
// are derived from status, so that a repeated reconcile or a restarted operator does not
// repeat them.
func statusEvents(name string, old, cur holdfastv1alpha1.ClusterDisruptionPolicyStatus) []announce.Event {
	var out []announce.Event
	for _, ns := range cur.NamesTaken {
		if slices.Contains(old.NamesTaken, ns) {
			continue
		}
		out = append(out, announce.Warning(EventNameTaken, fmt.Sprintf(
			"namespace %s has a DisruptionPolicy named %s of its own, so it gets no copy of this policy: rename or delete that DisruptionPolicy for the namespace to get the copy",
			ns, name)).About(policyRef(ns, name, "")))
	}
	return out
}

// copied is the Event for copy c, just created.
func copied(c *holdfastv1alpha1.DisruptionPolicy) announce.Event {
	return announce.Normal(EventPolicyCopied, fmt.Sprintf("namespace %s is selected: copied the policy there as DisruptionPolicy %s", c.Namespace, c.Name)).
		About(policyRef(c.Namespace, c.Name, c.UID))
}

// removed is the Event for copy c, just deleted.
func removed(c *holdfastv1alpha1.DisruptionPolicy) announce.Event {
	return announce.Normal(EventPolicyRemoved, fmt.Sprintf("namespace %s is no longer selected: deleted the copy there, DisruptionPolicy %s, and its budgets with it", c.Namespace, c.Name)).
		About(policyRef(c.Namespace, c.Name, c.UID))
}

// policyRef refers to a DisruptionPolicy, so that the Events about different namespaces
// stay apart.
func policyRef(ns, name string, uid types.UID) *corev1.ObjectReference {
	return &corev1.ObjectReference{
		APIVersion: holdfastv1alpha1.GroupVersion.String(), Kind: "DisruptionPolicy",
		Namespace: ns, Name: name, UID: uid,
	}
}
