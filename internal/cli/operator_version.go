package cli

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// operatorSelector finds the operator's Deployment, whichever way it was installed: the
// chart and config/manager both label it so.
const operatorSelector = "app.kubernetes.io/name=holdfast,app.kubernetes.io/component=operator"

// OperatorVersion is a running operator's version, as its Deployment tells it, or why it
// is not known.
type OperatorVersion struct {
	Version string `json:"version,omitempty"`
	// Deployment is namespace/name.
	Deployment string `json:"deployment,omitempty"`
	Image      string `json:"image,omitempty"`
	// Ready is ready replicas of desired, e.g. 1/1.
	Ready string `json:"ready,omitempty"`
	// Unknown says why there is no version: not installed, no access, no cluster.
	Unknown string `json:"unknown,omitempty"`
}

// findOperators reads the operators' Deployments in every namespace. The version is the
// app.kubernetes.io/version label, which the chart sets from the image tag, or else the
// image's tag.
func findOperators(ctx context.Context, kube kubernetes.Interface) []OperatorVersion {
	list, err := kube.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: operatorSelector})
	switch {
	case apierrors.IsForbidden(err):
		return []OperatorVersion{{Unknown: "not allowed to list Deployments in all namespaces, where holdfast looks for the operator"}}
	case err != nil:
		return []OperatorVersion{{Unknown: fmt.Sprintf("cannot read the cluster: %v", err)}}
	case len(list.Items) == 0:
		return []OperatorVersion{{Unknown: "not installed (no Deployment labelled " + operatorSelector + ")"}}
	}
	var ops []OperatorVersion
	for _, d := range list.Items {
		op := OperatorVersion{Deployment: d.Namespace + "/" + d.Name, Version: d.Labels["app.kubernetes.io/version"]}
		if cs := d.Spec.Template.Spec.Containers; len(cs) > 0 {
			op.Image = cs[0].Image
			op.Version = cmp.Or(op.Version, imageTag(op.Image))
		}
		desired := int32(1)
		if d.Spec.Replicas != nil {
			desired = *d.Spec.Replicas
		}
		op.Ready = fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, desired)
		ops = append(ops, op)
	}
	return ops
}

// imageTag is an image reference's tag or digest, or "" when it has neither.
func imageTag(image string) string {
	if _, digest, ok := strings.Cut(image, "@"); ok {
		return digest
	}
	// A colon before the last slash is a registry's port, not a tag.
	name := image[strings.LastIndex(image, "/")+1:]
	if _, tag, ok := strings.Cut(name, ":"); ok {
		return tag
	}
	return ""
}
