// Package v1alpha1 holds holdfast's API types, group holdfast.dev, version v1alpha1.
// +kubebuilder:object:generate=true
// +groupName=holdfast.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every holdfast type.
	GroupVersion = schema.GroupVersion{Group: "holdfast.dev", Version: "v1alpha1"}

	// SchemeBuilder registers holdfast's types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds holdfast's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
