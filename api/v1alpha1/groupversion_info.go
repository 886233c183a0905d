// Package v1alpha1 holds holdfast's API types, group holdfast.dev, version v1alpha1.
// +kubebuilder:object:generate=true
// +groupName=holdfast.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every holdfast type.
	GroupVersion = schema.GroupVersion{Group: "holdfast.dev", Version: "v1alpha1"}

	// SchemeBuilder registers holdfast's types with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds holdfast's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes lists every kind of the group; a new kind adds its pair here.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&NodeCompanion{}, &NodeCompanionList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
