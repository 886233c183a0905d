package v1alpha1

// Reasons of the Ready condition (ConditionReady) of DisruptionPolicy and
// ClusterDisruptionPolicy, which sums up their other conditions: False carries the reason
// of the first condition that says the policy is not working.
const (
	// ReasonWorking: no other condition says the policy is not working.
	ReasonWorking = "Working"
	// ReasonPending: a condition Ready depends on has not been written yet.
	ReasonPending = "Pending"
)
