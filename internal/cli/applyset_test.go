package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The set's ID is the ApplySet specification's: kubectl finds the same set from the
// same parent. The value was computed apart, with Python's hashlib and base64.
func TestInstallSetID(t *testing.T) {
	if got, want := installSetID(), "applyset-g86plkQzGCnrVkcZnQK-PlQjwGWpRqS_YfmTAmDDBKw-v1"; got != want {
		t.Errorf("installSetID() = %s, want %s", got, want)
	}
}

func object(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// The parent records each kind and other namespace once, sorted, in the annotations'
// spelling, and reads back what it wrote.
func TestApplySetRecord(t *testing.T) {
	objs := []*unstructured.Unstructured{
		object("v1", "Namespace", "", "holdfast-system"),
		object("apps/v1", "Deployment", "holdfast-system", "holdfast-operator"),
		object("rbac.authorization.k8s.io/v1", "Role", "holdfast-drain", "holdfast-drainer"),
		object("rbac.authorization.k8s.io/v1", "Role", "holdfast-system", "holdfast-operator"),
		object("v1", "Namespace", "", "holdfast-drain"),
	}
	r := recordOf(objs, "holdfast-system")
	want := map[string]string{
		applySetKindsAnnotation:      "Deployment.apps,Namespace,Role.rbac.authorization.k8s.io",
		applySetNamespacesAnnotation: "holdfast-drain",
	}
	if diff := cmp.Diff(want, r.annotations()); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(r, parseRecord(r.annotations()), cmp.AllowUnexported(applySetRecord{})); diff != "" {
		t.Errorf("read back (-wrote +read):\n%s", diff)
	}
	old := parseRecord(map[string]string{applySetKindsAnnotation: "ConfigMap,Namespace", applySetNamespacesAnnotation: "old"})
	if got, want := old.union(r).annotations()[applySetKindsAnnotation], "ConfigMap,Deployment.apps,Namespace,Role.rbac.authorization.k8s.io"; got != want {
		t.Errorf("union's kinds = %s, want %s", got, want)
	}
	if got, want := old.union(r).annotations()[applySetNamespacesAnnotation], "holdfast-drain,old"; got != want {
		t.Errorf("union's namespaces = %s, want %s", got, want)
	}
}

// Members the manifests no longer hold are pruned, what lives in a namespace before the
// namespace; a CustomResourceDefinition is kept.
func TestToPrune(t *testing.T) {
	deployment := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	service := schema.GroupKind{Kind: "Service"}
	namespace := schema.GroupKind{Kind: "Namespace"}
	applied := []*unstructured.Unstructured{object("apps/v1", "Deployment", "holdfast-system", "holdfast-operator")}
	found := []objectKey{
		{kind: namespace, name: "holdfast-old"},
		{kind: crdKind, name: "olds.holdfast.dev"},
		{kind: deployment, namespace: "holdfast-system", name: "holdfast-operator"},
		{kind: service, namespace: "holdfast-system", name: "holdfast-operator-metrics"},
		{kind: deployment, namespace: "holdfast-old", name: "holdfast-old"},
	}
	prune, kept := toPrune(found, applied)
	wantPrune := []objectKey{
		{kind: deployment, namespace: "holdfast-old", name: "holdfast-old"},
		{kind: service, namespace: "holdfast-system", name: "holdfast-operator-metrics"},
		{kind: namespace, name: "holdfast-old"},
	}
	if diff := cmp.Diff(wantPrune, prune, cmp.AllowUnexported(objectKey{})); diff != "" {
		t.Errorf("pruned (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]objectKey{{kind: crdKind, name: "olds.holdfast.dev"}}, kept, cmp.AllowUnexported(objectKey{})); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
}
