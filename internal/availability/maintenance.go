package availability

import corev1 "k8s.io/api/core/v1"

// MaintenancePlanned reports whether the node's admin has planned maintenance on it: its
// condition MaintenancePlanned (Kubernetes 1.37) is True. A drain is coming, so holdfast
// treats the node as cordoned already (Cordoned).
func MaintenancePlanned(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeMaintenancePlanned {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Cordoned reports whether holdfast places nothing new on the node: it is cordoned, or
// its maintenance is planned, so that a pod put there would only have to move again.
// The scheduler still places pods on a node whose maintenance is only planned; holdfast
// itself does not, and counts the pods there as about to leave.
func Cordoned(n *corev1.Node) bool {
	return n.Spec.Unschedulable || MaintenancePlanned(n)
}
