package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ClusterPolicyLabel is set on every DisruptionPolicy that a ClusterDisruptionPolicy
// keeps in a namespace it selects, with the cluster policy's name as value. Such copies
// come after the namespace's own DisruptionPolicies in precedence.
const ClusterPolicyLabel = "holdfast.dev/cluster-disruption-policy"

// Condition types and reasons of a ClusterDisruptionPolicy.
const (
	// ConditionPoliciesReady is True when every selected namespace has the policy.
	ConditionPoliciesReady = "PoliciesReady"

	ReasonAllNamespacesCovered = "AllNamespacesCovered"
	ReasonNamesTaken           = "NamesTaken"
	ReasonInvalidNamespaces    = "InvalidNamespaceSelector"
)

// ClusterDisruptionPolicySpec selects namespaces and states the DisruptionPolicy each
// of them gets.
type ClusterDisruptionPolicySpec struct {
	// NamespaceSelector picks namespaces by their labels. An empty selector selects every
	// namespace.
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`
	// Template is the DisruptionPolicy kept, under the cluster policy's name, in every
	// selected namespace. A namespace's own DisruptionPolicies that select the same
	// workloads come first.
	Template DisruptionPolicySpec `json:"template"`
}

// ClusterDisruptionPolicyStatus sums the statuses of the policy's copies.
type ClusterDisruptionPolicyStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Namespaces is the number of selected namespaces that have the policy.
	// +optional
	Namespaces int32 `json:"namespaces"`
	// Selected, Budgeted, Conflicting, Unprotected, Degraded and Blocked are the sums of
	// the copies' counts.
	// +optional
	Selected int32 `json:"selected"`
	// +optional
	Budgeted int32 `json:"budgeted"`
	// +optional
	Conflicting int32 `json:"conflicting"`
	// +optional
	Unprotected int32 `json:"unprotected"`
	// +optional
	Degraded int32 `json:"degraded"`
	// +optional
	Blocked int32 `json:"blocked"`
	// NamesTaken lists the selected namespaces (at most 50, sorted) where a
	// DisruptionPolicy of the same name that is not this one's copy is in the way.
	// +optional
	// +listType=atomic
	NamesTaken []string `json:"namesTaken,omitempty"`
	// Conditions are PoliciesReady.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ClusterDisruptionPolicy keeps a DisruptionPolicy, its template, in every namespace its
// selector picks, and removes it from namespaces that stop matching. The copies are
// owned by it, so they go with it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cdp,categories=holdfast
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="the name must be at most 63 characters: its copies' budgets carry it as a label value"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Namespaces",type=integer,JSONPath=`.status.namespaces`
// +kubebuilder:printcolumn:name="Selected",type=integer,JSONPath=`.status.selected`
// +kubebuilder:printcolumn:name="Budgeted",type=integer,JSONPath=`.status.budgeted`
// +kubebuilder:printcolumn:name="Conflicting",type=integer,JSONPath=`.status.conflicting`
// +kubebuilder:printcolumn:name="Unprotected",type=integer,JSONPath=`.status.unprotected`
// +kubebuilder:printcolumn:name="Blocked",type=integer,JSONPath=`.status.blocked`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterDisruptionPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterDisruptionPolicySpec   `json:"spec"`
	Status ClusterDisruptionPolicyStatus `json:"status,omitempty"`
}

// ClusterDisruptionPolicyList is a list of ClusterDisruptionPolicies.
// +kubebuilder:object:root=true
type ClusterDisruptionPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterDisruptionPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &ClusterDisruptionPolicy{}, &ClusterDisruptionPolicyList{})
		return nil
	})
}
