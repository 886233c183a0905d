package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Annotations and taints of the response to a lost node.
const (
	// NodeDownAnnotation, set on a Node by a person or an agent that has checked the
	// machine is powered off (a cloud API, a BMC), is proof that the node's pods run no
	// more: StatefulSet pods stuck on it are released under fencing: Verified. Its value
	// is the RFC 3339 time of the check, and it proves only a failure after the node's
	// last Lease renewal, so that it can never prove a later failure; "true" proves the
	// current one, and holdfast removes the annotation when the node is back.
	NodeDownAnnotation = "holdfast.dev/node-down"
	// FencedAnnotation is set on a Node that holdfast tainted out-of-service, with the
	// RFC 3339 time and the proof; the taint is removed, and the annotation with it, once
	// the node is back. A taint without it is a person's, and holdfast leaves it.
	FencedAnnotation = "holdfast.dev/fenced"
	// OutOfServiceTaintKey is the taint of non-graceful node shutdown: on a node that is
	// not Ready, Kubernetes force-deletes the pods that do not tolerate it and detaches
	// their volumes, so that a StatefulSet can start its pod elsewhere.
	OutOfServiceTaintKey = "node.kubernetes.io/out-of-service"
	// LostTaintKey is the NoSchedule taint holdfast puts on a lost node (its Lease
	// unrenewed for 30 s), so that the replicas added for its pods are not scheduled
	// onto it before the node-lifecycle controller taints it, 50 s after the kubelet's
	// last word. Removed once the node's Lease is renewed again.
	LostTaintKey = "holdfast.dev/lost"
)

// FailureSurge says whether holdfast adds replicas for the pods of a lost node.
// +kubebuilder:validation:Enum=Replace;Never
type FailureSurge string

const (
	// FailureSurgeReplace starts one extra pod beside a Deployment (in its surge set,
	// a ReplicaSet the policy owns) for each of its pods on a lost node, at once,
	// without deleting the originals (they may still be serving behind a network
	// partition), and removes them once the node returns or Kubernetes has replaced
	// them. The Deployment is never written.
	FailureSurgeReplace FailureSurge = "Replace"
	// FailureSurgeNever leaves a lost node's pods to Kubernetes: replaced once the
	// unreachable taint's toleration (300 s by default) runs out.
	FailureSurgeNever FailureSurge = "Never"
)

// Fencing says whether holdfast releases the StatefulSet pods of a lost node.
// +kubebuilder:validation:Enum=Never;Verified
type Fencing string

const (
	// FencingNever leaves StatefulSet pods of a lost node Terminating until the Node is
	// deleted or someone force-deletes them, as Kubernetes does.
	FencingNever Fencing = "Never"
	// FencingVerified taints a lost node node.kubernetes.io/out-of-service once there is
	// proof that it is down (its Karpenter NodeClaim gone, or the holdfast.dev/node-down
	// annotation with a time after its last Lease renewal), so that Kubernetes deletes
	// its pods and the StatefulSet starts them elsewhere. The taint releases every
	// StatefulSet pod on the node, whichever namespace's: only a ClusterDisruptionPolicy
	// fences, or every policy where the operator runs with --allow-namespaced-fencing
	// (status condition FencingAllowed).
	FencingVerified Fencing = "Verified"
)

// NodeFailureSpec is what holdfast does when a node running selected pods is lost:
// its kubelet stops renewing the node's Lease (a crash, a power loss, a kernel panic, a
// network partition).
// +kubebuilder:validation:XValidation:rule="!has(self.fenceAfter) || self.fencing == 'Verified'",message="nodeFailure.fenceAfter applies only to fencing: Verified"
type NodeFailureSpec struct {
	// Surge, Replace, adds a replica to each selected Deployment for each of its pods
	// on a lost node, and removes them once the node is back or Kubernetes has replaced
	// the pods. Defaults to Replace.
	// +kubebuilder:default=Replace
	// +optional
	Surge FailureSurge `json:"surge,omitempty"`

	// LostAfter is how long a node's Lease may go unrenewed before its pods count as
	// lost. A kubelet renews it every 10 s; the node-lifecycle controller waits 50 s
	// before it marks the node unreachable. A false alarm costs a replica added for a
	// while, never a pod deleted. From 15s to 10m; defaults to 30s.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+)$') && duration(self) >= duration('15s') && duration(self) <= duration('10m')",message="lostAfter must be a duration from 15s to 10m, such as 30s"
	// +optional
	LostAfter *metav1.Duration `json:"lostAfter,omitempty"`

	// Fencing, Verified, releases the StatefulSet pods of a lost node once the node is
	// proven down (see FencingVerified), by tainting it out-of-service; the taint is
	// removed when the node is back. Two pods of one identity never run at once: without
	// proof, nothing is released. It needs a cluster administrator's consent: a
	// ClusterDisruptionPolicy's template, or the operator's --allow-namespaced-fencing.
	// Defaults to Never.
	// +kubebuilder:default=Never
	// +optional
	Fencing Fencing `json:"fencing,omitempty"`

	// FenceAfter, under fencing: Verified, takes a node unreachable this long for proof
	// that it is down: time, not proof. RISK: a node cut off by a network partition, not
	// down, keeps running its pods; after this time a second pod of the same identity
	// starts elsewhere, and both may write to the same data. It counts only where the
	// operator runs with --allow-fence-after, a cluster administrator's choice for a
	// cluster whose nodes stop their own pods when cut off (a watchdog). Unset, or not
	// allowed, only real proof fences.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+)$') && duration(self) >= duration('1m')",message="fenceAfter must be a duration of at least 1m, such as 10m"
	// +optional
	FenceAfter *metav1.Duration `json:"fenceAfter,omitempty"`
}
