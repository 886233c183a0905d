package snapshot

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// What is skipped with a note rather than read: a repository keeps files that are not
// Kubernetes objects beside its manifests, and a CI job that fails on them hides the
// findings of the rest.

// kustomizeGroup is the API group of kustomization files.
const kustomizeGroup = "kustomize.config.k8s.io"

// notKubernetes says why a document is no Kubernetes object, or returns nil when it is
// meant as one. A mapping with a kind or metadata is meant as one, even when broken (a
// kind without apiVersion): that is an error, reported where it is read. Anything else,
// a Helm values.yaml or Chart.yaml, a dashboard, a workflow, is skipped.
func notKubernetes(file string, n *yamlv3.Node) error {
	if n.Kind != yamlv3.MappingNode {
		return fmt.Errorf("not a Kubernetes object (a YAML %s), skipped", nodeKind(n))
	}
	if lookup(n, []string{"kind"}) != nil || lookup(n, []string{"metadata"}) != nil {
		return nil
	}
	switch strings.ToLower(filepath.Base(file)) {
	case "kustomization.yaml", "kustomization.yml", "kustomization":
		return errKustomization
	}
	return fmt.Errorf("not a Kubernetes object (no kind or metadata), skipped")
}

var errKustomization = errors.New("a kustomization, skipped: audit what it builds with -k DIR")

func nodeKind(n *yamlv3.Node) string {
	if n.Kind == yamlv3.SequenceNode {
		return "sequence"
	}
	return "scalar"
}

// knownGroup reports whether holdfast knows the kinds of an API group: Kubernetes' own,
// and holdfast's. Any other group is a custom resource's.
func knownGroup(group string) bool {
	switch group {
	case holdfastv1alpha1.GroupVersion.Group, "apiextensions.k8s.io", "apiregistration.k8s.io":
		return true
	}
	return scheme.Scheme.IsGroupRegistered(group)
}

// unknownKind is the note for an object of a group holdfast does not know.
func unknownKind(gvk schema.GroupVersionKind) error {
	if gvk.Group == kustomizeGroup {
		return errKustomization
	}
	return fmt.Errorf("kind %s of %s is a custom resource holdfast does not know, skipped: the pods it makes are not audited", gvk.Kind, gvk.GroupVersion())
}

// removal is when an API version stopped being served, and what replaces it.
type removal struct {
	in, use string
}

// removedAPIs are the API versions Kubernetes no longer serves, by "apiVersion" or by
// "apiVersion kind" where a version's kinds went at different releases. holdfast reads
// the workloads and budgets among them as their current versions, so that old manifests
// are still audited, and warns: the API server refuses them.
var removedAPIs = map[string]removal{
	"extensions/v1beta1 Deployment":             {"1.16", "apps/v1"},
	"extensions/v1beta1 DaemonSet":              {"1.16", "apps/v1"},
	"extensions/v1beta1 ReplicaSet":             {"1.16", "apps/v1"},
	"extensions/v1beta1 NetworkPolicy":          {"1.16", "networking.k8s.io/v1"},
	"extensions/v1beta1 PodSecurityPolicy":      {"1.16", "Pod Security Admission"},
	"policy/v1beta1 PodSecurityPolicy":          {"1.25", "Pod Security Admission"},
	"extensions/v1beta1":                        {"1.22", "networking.k8s.io/v1"},
	"apps/v1beta1":                              {"1.16", "apps/v1"},
	"apps/v1beta2":                              {"1.16", "apps/v1"},
	"networking.k8s.io/v1beta1":                 {"1.22", "networking.k8s.io/v1"},
	"apiextensions.k8s.io/v1beta1":              {"1.22", "apiextensions.k8s.io/v1"},
	"apiregistration.k8s.io/v1beta1":            {"1.22", "apiregistration.k8s.io/v1"},
	"admissionregistration.k8s.io/v1beta1":      {"1.22", "admissionregistration.k8s.io/v1"},
	"rbac.authorization.k8s.io/v1beta1":         {"1.22", "rbac.authorization.k8s.io/v1"},
	"scheduling.k8s.io/v1beta1":                 {"1.22", "scheduling.k8s.io/v1"},
	"certificates.k8s.io/v1beta1":               {"1.22", "certificates.k8s.io/v1"},
	"coordination.k8s.io/v1beta1":               {"1.22", "coordination.k8s.io/v1"},
	"storage.k8s.io/v1beta1":                    {"1.22", "storage.k8s.io/v1"},
	"batch/v1beta1":                             {"1.25", "batch/v1"},
	"discovery.k8s.io/v1beta1":                  {"1.25", "discovery.k8s.io/v1"},
	"events.k8s.io/v1beta1":                     {"1.25", "events.k8s.io/v1"},
	"node.k8s.io/v1beta1":                       {"1.25", "node.k8s.io/v1"},
	"policy/v1beta1":                            {"1.25", "policy/v1"},
	"autoscaling/v2beta1":                       {"1.25", "autoscaling/v2"},
	"autoscaling/v2beta2":                       {"1.26", "autoscaling/v2"},
	"storage.k8s.io/v1beta1 CSIStorageCapacity": {"1.27", "storage.k8s.io/v1"},
	"flowcontrol.apiserver.k8s.io/v1beta1":      {"1.26", "flowcontrol.apiserver.k8s.io/v1"},
	"flowcontrol.apiserver.k8s.io/v1beta2":      {"1.29", "flowcontrol.apiserver.k8s.io/v1"},
	"flowcontrol.apiserver.k8s.io/v1beta3":      {"1.32", "flowcontrol.apiserver.k8s.io/v1"},
}

// removedAPI is the warning for an object of a removed API version, or nil.
func removedAPI(gvk schema.GroupVersionKind) error {
	apiVersion := gvk.GroupVersion().String()
	r, ok := removedAPIs[apiVersion+" "+gvk.Kind]
	if !ok {
		if r, ok = removedAPIs[apiVersion]; !ok {
			return nil
		}
	}
	err := fmt.Errorf("%s %s was removed in Kubernetes %s and the API server refuses it: use %s", apiVersion, gvk.Kind, r.in, r.use)
	if _, read := decoders[gvk]; read {
		err = fmt.Errorf("%w (read here as if it were)", err)
	}
	return err
}
