package policy

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// Settings are what a cluster administrator tells the operator with its flags, and no
// namespaced policy can change; plan and audit take the same flags to predict it. The
// zero value is every default.
type Settings struct {
	Autoscalers Autoscalers
	Failure     FailureSettings
}

// FailureSettings bound the response to lost nodes.
type FailureSettings struct {
	// BrakeShare is the share of the cluster's nodes that, lost at once in more than one
	// zone (or in a cluster without zones), makes holdfast hold back. 0 means 0.2; 1 or
	// more never holds back.
	BrakeShare float64
	// BrakeWindow is how close the last renewals of nodes' Leases must be for the nodes
	// to count as lost at once. 0 means 30 s.
	BrakeWindow time.Duration
	// FenceAfter lets a policy's nodeFailure.fenceAfter count as proof that a node is
	// down. It is time, not proof: a node cut off by a partition keeps running its pods.
	FenceAfter bool
	// NamespacedFencing lets every namespace's policy fence. Without it, only a
	// ClusterDisruptionPolicy's copies fence, when its template does.
	NamespacedFencing bool
}

// DefaultSettings are the operator flags' defaults, which the zero value of each field
// stands for: cluster-autoscaler's own defaults, without its node groups. The brake's
// share: a failure that wide and that scattered is more often the network, the control
// plane or holdfast's own view than the machines (Karpenter stops repairing nodes above
// the same share); a zone going dark alone is acted on, within what fits on the
// survivors. Its window: a kubelet renews its Lease every 10 s, so nodes that die
// together stop within a renewal or two of each other.
var DefaultSettings = Settings{
	Autoscalers: Autoscalers{Threshold: 0.5, UnneededTime: 10 * time.Minute, Recheck: 5 * time.Minute},
	Failure:     FailureSettings{BrakeShare: 0.2, BrakeWindow: 30 * time.Second},
}

func (s FailureSettings) brakeShare() float64 {
	if s.BrakeShare > 0 {
		return s.BrakeShare
	}
	return DefaultSettings.Failure.BrakeShare
}

func (s FailureSettings) brakeWindow() time.Duration {
	if s.BrakeWindow > 0 {
		return s.BrakeWindow
	}
	return DefaultSettings.Failure.BrakeWindow
}

// Consent is what a cluster administrator allows a policy's response to lost nodes
// beyond adding replicas, which anyone may undo: tainting nodes out-of-service, which
// releases every StatefulSet pod on them, whichever namespace's.
type Consent struct {
	// Fence: the policy may fence.
	Fence bool
	// FenceAfter: its fenceAfter counts as proof.
	FenceAfter bool
	// Why says what is not allowed and how to allow it; "" when nothing asked for is
	// refused.
	Why string
}

// ConsentOf is the consent for p under s; owner is the ClusterDisruptionPolicy p's
// label names as its origin (nil for none). A copy is consented to when that cluster
// policy controls it and its own template fences: only a cluster administrator makes
// those, and a namespace cannot forge one by labelling its own policy.
func ConsentOf(p *holdfastv1alpha1.DisruptionPolicy, s FailureSettings, owner *holdfastv1alpha1.ClusterDisruptionPolicy) Consent {
	if !fencing(p) {
		return Consent{}
	}
	c := Consent{Fence: s.NamespacedFencing || copiedFencing(p, owner)}
	if !c.Fence {
		c.Why = msgFencingNotAllowed
		return c
	}
	if p.Spec.NodeFailure.FenceAfter != nil {
		if c.FenceAfter = s.FenceAfter; !c.FenceAfter {
			c.Why = msgFenceAfterNotAllowed
		}
	}
	return c
}

// copiedFencing reports whether p is owner's copy (owner controls it) and owner's
// template fences.
func copiedFencing(p *holdfastv1alpha1.DisruptionPolicy, owner *holdfastv1alpha1.ClusterDisruptionPolicy) bool {
	if owner == nil || p.Labels[holdfastv1alpha1.ClusterPolicyLabel] != owner.Name {
		return false
	}
	f := owner.Spec.Template.NodeFailure
	if f == nil || f.Fencing != holdfastv1alpha1.FencingVerified {
		return false
	}
	for _, ref := range p.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && ref.Kind == "ClusterDisruptionPolicy" && ref.Name == owner.Name && ref.UID == owner.UID {
			return true
		}
	}
	return false
}

// fencingCondition is ConditionFencingAllowed for p under consent c; false when p does
// not ask for fencing.
func fencingCondition(p *holdfastv1alpha1.DisruptionPolicy, c Consent) (metav1.Condition, bool) {
	if !fencing(p) {
		return metav1.Condition{}, false
	}
	cond := metav1.Condition{Type: holdfastv1alpha1.ConditionFencingAllowed, Status: metav1.ConditionTrue, Reason: holdfastv1alpha1.ReasonFencingConsented,
		Message: "StatefulSet pods on a lost node are released once the node is proven down"}
	switch {
	case !c.Fence:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, holdfastv1alpha1.ReasonNoFencingConsent, c.Why
	case c.Why != "":
		cond.Reason, cond.Message = holdfastv1alpha1.ReasonFenceAfterIgnored, c.Why
	case c.FenceAfter:
		cond.Message += ", or once it is unreachable for fenceAfter " + p.Spec.NodeFailure.FenceAfter.Duration.String() + " (time, not proof: the operator allows it)"
	}
	return cond, true
}

// StatedConsent is the consent p's status states (ConditionFencingAllowed), as the
// operator wrote it or predict.Operator predicted it with the operator's settings: what
// audit and plan read of a snapshot, which holds no settings. p nil is no policy.
func StatedConsent(p *holdfastv1alpha1.DisruptionPolicy) Consent {
	if p == nil || !fencing(p) {
		return Consent{}
	}
	c := meta.FindStatusCondition(p.Status.Conditions, holdfastv1alpha1.ConditionFencingAllowed)
	if c == nil {
		return Consent{}
	}
	allowed := c.Status == metav1.ConditionTrue
	out := Consent{Fence: allowed, FenceAfter: allowed && c.Reason == holdfastv1alpha1.ReasonFencingConsented && p.Spec.NodeFailure.FenceAfter != nil}
	if c.Reason != holdfastv1alpha1.ReasonFencingConsented {
		out.Why = c.Message
	}
	return out
}
