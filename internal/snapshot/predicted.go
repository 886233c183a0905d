package snapshot

// Predicted is a Snapshot as holdfast's operator will make it, which internal/predict
// makes: the DisruptionPolicies in effect (ClusterDisruptionPolicies' copies included)
// with the statuses the operator writes, and the budgets, surge sets, taints and marks
// their decisions make. What holdfast predicts (plan drain, plan failure, the audit of
// its own objects) reasons about a Predicted. A Snapshot as read from manifests or a
// cluster lacks all of that, and is another type, so that the two cannot be mixed up.
type Predicted struct {
	*Snapshot
}
