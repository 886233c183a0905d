package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Labels that holdfast puts on, or reads from, companion pods.
const (
	// CompanionLabel names the NodeCompanion a pod, Deployment or budget belongs to.
	CompanionLabel = "holdfast.dev/companion"
	// GuardLabel is set by a companion pod on itself, with value GuardHold, to refuse
	// the drain of its node. Removing the label (or setting another value) clears the guard.
	GuardLabel = "holdfast.dev/guard"
	// GuardHold is the GuardLabel value that holds the node.
	GuardHold = "hold"
)

// Condition types of a NodeCompanion.
const (
	// ConditionReady is True when every node that should have a companion has a Ready one.
	ConditionReady = "Ready"
	// ConditionDegraded is True when the target is gone or a node has lacked its companion
	// for longer than a drain or a start-up explains.
	ConditionDegraded = "Degraded"
)

// NodeCompanionSpec is what a NodeCompanion asks for: one pod from Template on every node
// where Target's pods can run, evicted at most MaxUnavailable nodes at a time.
// +kubebuilder:validation:XValidation:rule="has(self.daemonSet) != has(self.nodeSelector)",message="set exactly one target: spec.daemonSet or spec.nodeSelector"
// +kubebuilder:validation:XValidation:rule="!has(self.template.spec.nodeName) || size(self.template.spec.nodeName) == 0",message="spec.template.spec.nodeName must be empty: holdfast places one companion on every eligible node"
// +kubebuilder:validation:XValidation:rule="!has(self.template.spec.affinity) || !has(self.template.spec.affinity.podAntiAffinity)",message="spec.template.spec.affinity.podAntiAffinity must be empty: holdfast sets the one-per-node anti-affinity itself"
// +kubebuilder:validation:XValidation:rule="!has(self.daemonSet) || !has(self.template.spec.affinity) || !has(self.template.spec.affinity.nodeAffinity)",message="spec.template.spec.affinity.nodeAffinity must be empty when spec.daemonSet is set: holdfast copies the DaemonSet's node affinity"
type NodeCompanionSpec struct {
	// DaemonSet is the DaemonSet whose nodes get a companion: its nodeSelector, required
	// node affinity and tolerations decide which nodes are eligible, and they are copied to
	// the companions as they change.
	// +optional
	DaemonSet *DaemonSetReference `json:"daemonSet,omitempty"`

	// NodeSelector picks the eligible nodes by label when there is no DaemonSet to follow.
	// Nodes with taints that the companion does not tolerate are not eligible.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Template is the companion pod. holdfast adds its labels, the one-per-node
	// anti-affinity, the target's scheduling constraints, the priority class and the
	// tolerations.
	//
	// The CRD keeps the template as given rather than carry the pod template's schema,
	// which would make it too big for a client-side apply: hack/crdschema/podtemplate.yaml
	// declares only what the CEL rules read. decodeTemplate checks the rest.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Template corev1.PodTemplateSpec `json:"template"`

	// MaxUnavailable is how many nodes may be without a Ready companion at once, through
	// drains and rollouts: an integer of at least 1 or a percentage of the eligible nodes
	// (rounded up). Defaults to 1.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 && self <= 2147483647 : self.matches('^[1-9][0-9]?%$|^100%$')",message="maxUnavailable must be an integer from 1 to 2147483647 or a percentage from 1% to 100%: 0 would block every drain"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// PriorityClassName is given to the companion pods, so that the scheduler preempts
	// less important pods rather than leave a node without its companion.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// Tolerations are added to the companion pods, after the DaemonSet's own.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Guard lets a companion pod refuse the drain of its own node, for example while the
	// node holds the last copy of some data.
	// +optional
	Guard *Guard `json:"guard,omitempty"`

	// DecodeErrors is set when the NodeCompanion is read, never stored: each field of
	// the stored spec whose value cannot be decoded (stored before the schema refused
	// it), with that value, and each field of the template that a pod template does not
	// have (the CRD does not check the template's fields). Fields that cannot be decoded
	// are left empty; either way the operator changes nothing the NodeCompanion manages
	// until they are fixed, and reports them (condition Ready, reason InvalidSpec, and a
	// Warning Event).
	DecodeErrors []string `json:"-"`
}

// DaemonSetReference names a DaemonSet.
type DaemonSetReference struct {
	// Name of the DaemonSet.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Namespace of the DaemonSet; defaults to the NodeCompanion's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// Guard configures per-node drain refusal. A companion pod holds its node by labelling
// itself holdfast.dev/guard=hold (it needs RBAC to patch its own pod); while the label is
// there, the Eviction API refuses to evict that pod, so `kubectl drain` of that node
// waits, and every other node stays drainable.
type Guard struct {
	// Enabled turns the guard on. Off, the guard label is ignored and every companion
	// counts against one budget.
	Enabled bool `json:"enabled"`
}

// NodeGap is a node that lacks a Ready companion, or is left out on purpose.
type NodeGap struct {
	// Node is the node's name.
	Node string `json:"node"`
	// Reason is Drained, Pending or NotReady for a missing companion, Cordoned for an
	// excluded node.
	Reason string `json:"reason"`
	// Message says what to do about it.
	Message string `json:"message"`
	// Since is when holdfast first saw the gap.
	Since metav1.Time `json:"since"`
}

// NodeCompanionStatus is what the controller last saw.
type NodeCompanionStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Desired is the number of nodes that should have a companion.
	// +optional
	Desired int32 `json:"desired"`
	// Ready is the number of Ready companion pods.
	// +optional
	Ready int32 `json:"ready"`
	// NodesCovered is the number of desired nodes with a Ready companion.
	// +optional
	NodesCovered int32 `json:"nodesCovered"`
	// NodesMissing is the number of desired nodes without a Ready companion; each one
	// holds part of the disruption budget.
	// +optional
	NodesMissing int32 `json:"nodesMissing"`
	// Missing lists the desired nodes without a Ready companion (at most 20), sorted by
	// name.
	// +optional
	// +listType=map
	// +listMapKey=node
	Missing []NodeGap `json:"missing,omitempty"`
	// Excluded lists eligible nodes left out of the desired count (at most 20): cordoned
	// nodes whose companion went away without a drain, so that they do not hold the budget.
	// +optional
	// +listType=map
	// +listMapKey=node
	Excluded []NodeGap `json:"excluded,omitempty"`
	// Drained lists cordoned nodes whose companion was evicted: they count as desired,
	// and so hold the budget, until they are uncordoned or deleted. This is the
	// controller's memory of evictions, which the cluster does not keep.
	// +optional
	// +listType=map
	// +listMapKey=node
	Drained []DrainedNode `json:"drained,omitempty"`
	// Evicted lists the nodes whose companion was evicted but that are not seen
	// cordoned (yet: a cordon and the eviction after it reach the operator on separate
	// watches), with when. Kept in status rather than in the operator's memory, so that a
	// restarted operator or a new leader still counts those nodes against the budget once
	// their cordon shows.
	// +optional
	// +listType=map
	// +listMapKey=node
	Evicted []DrainedNode `json:"evicted,omitempty"`
	// Guarded lists the nodes whose companion holds the guard, sorted.
	// +optional
	// +listType=set
	Guarded []string `json:"guarded,omitempty"`
	// Conditions are Ready and Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DrainedNode is a node whose companion was evicted while it was cordoned.
type DrainedNode struct {
	// Node is the node's name.
	Node string `json:"node"`
	// Since is when the eviction was seen.
	Since metav1.Time `json:"since"`
}

// NodeCompanion runs one companion pod next to every pod of a DaemonSet (or on every
// node matching a selector), as a Deployment with one-per-node anti-affinity and a
// disruption budget, so that drains take companions down one node at a time even when
// they pass --ignore-daemonsets.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=nc,categories=holdfast
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desired`
// +kubebuilder:printcolumn:name="Ready Pods",type=integer,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="Covered",type=integer,JSONPath=`.status.nodesCovered`
// +kubebuilder:printcolumn:name="Missing",type=integer,JSONPath=`.status.nodesMissing`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeCompanion struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeCompanionSpec   `json:"spec"`
	Status NodeCompanionStatus `json:"status,omitempty"`
}

// NodeCompanionList is a list of NodeCompanions.
// +kubebuilder:object:root=true
type NodeCompanionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeCompanion `json:"items"`
}
