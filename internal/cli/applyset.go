package cli

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/holdfast-dev/holdfast/config"
)

// holdfast install records what it applied as an ApplySet, the labels and annotations
// that kubectl's own `apply --prune --applyset` reads and writes: a parent object lists
// the kinds and namespaces of the set, and every member carries the set's ID in a label.
// A later install lists those kinds there by that label, and deletes what the new
// manifests no longer hold.
const (
	// applySetPartOfLabel is on every member, with the set's ID as value.
	applySetPartOfLabel = "applyset.kubernetes.io/part-of"
	// applySetIDLabel is on the parent, with the set's ID as value.
	applySetIDLabel = "applyset.kubernetes.io/id"
	// applySetToolingAnnotation names, on the parent, the tool that manages the set, as
	// "name/version": kubectl refuses to prune a set another tool manages, and so does
	// holdfast.
	applySetToolingAnnotation = "applyset.kubernetes.io/tooling"
	// applySetKindsAnnotation lists, on the parent, the kinds of the members, as sorted
	// "Kind.group" ("Kind" for the core group), comma-separated.
	applySetKindsAnnotation = "applyset.kubernetes.io/contains-group-kinds"
	// applySetNamespacesAnnotation lists, on the parent, the namespaces other than the
	// parent's own that hold members.
	applySetNamespacesAnnotation = "applyset.kubernetes.io/additional-namespaces"

	// applySetParentName is the Secret in installNamespace that is the parent of what
	// holdfast install applies, as `kubectl apply --applyset=holdfast-install` names it.
	applySetParentName = "holdfast-install"
	// applySetTool is the tool part of the tooling annotation.
	applySetTool = "holdfast"
)

// applySetID is the ID of the set whose parent is the named object, as the ApplySet
// specification derives it: the URL-safe base64 of the SHA-256 of
// "name.namespace.kind.group", between "applyset-" and "-v1".
func applySetID(name, namespace, kind, group string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{name, namespace, kind, group}, ".")))
	return "applyset-" + base64.RawURLEncoding.EncodeToString(sum[:]) + "-v1"
}

// installSetID is the ID of holdfast install's set, whose parent is a core Secret.
func installSetID() string {
	return applySetID(applySetParentName, installNamespace, "Secret", "")
}

// applySetRecord is what a parent records of its set.
type applySetRecord struct {
	kinds      []schema.GroupKind
	namespaces []string
}

// recordOf is what the parent of objs records, the parent being in parentNamespace.
func recordOf(objs []*unstructured.Unstructured, parentNamespace string) applySetRecord {
	var r applySetRecord
	for _, u := range objs {
		r.kinds = append(r.kinds, u.GroupVersionKind().GroupKind())
		if ns := u.GetNamespace(); ns != "" && ns != parentNamespace {
			r.namespaces = append(r.namespaces, ns)
		}
	}
	return r.normal()
}

// union is the record of both sets: what the parent says while a new set replaces an
// old one, so that a stop in between leaves nothing the next install cannot find.
func (r applySetRecord) union(o applySetRecord) applySetRecord {
	return applySetRecord{kinds: append(slices.Clone(r.kinds), o.kinds...), namespaces: append(slices.Clone(r.namespaces), o.namespaces...)}.normal()
}

func (r applySetRecord) normal() applySetRecord {
	slices.SortFunc(r.kinds, func(a, b schema.GroupKind) int { return cmp.Compare(groupKindString(a), groupKindString(b)) })
	slices.Sort(r.namespaces)
	return applySetRecord{kinds: slices.Compact(r.kinds), namespaces: slices.Compact(r.namespaces)}
}

// annotations are the parent's annotations that hold the record.
func (r applySetRecord) annotations() map[string]string {
	kinds := make([]string, len(r.kinds))
	for i, gk := range r.kinds {
		kinds[i] = groupKindString(gk)
	}
	return map[string]string{
		applySetKindsAnnotation:      strings.Join(kinds, ","),
		applySetNamespacesAnnotation: strings.Join(r.namespaces, ","),
	}
}

// parseRecord reads a parent's record from its annotations.
func parseRecord(annotations map[string]string) applySetRecord {
	var r applySetRecord
	for s := range strings.SplitSeq(annotations[applySetKindsAnnotation], ",") {
		if s != "" {
			r.kinds = append(r.kinds, schema.ParseGroupKind(s))
		}
	}
	for s := range strings.SplitSeq(annotations[applySetNamespacesAnnotation], ",") {
		if s != "" {
			r.namespaces = append(r.namespaces, s)
		}
	}
	return r.normal()
}

// groupKindString is a kind as the ApplySet annotations write it: "Kind.group", or
// "Kind" for the core group.
func groupKindString(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

// objectKey names one object of a set.
type objectKey struct {
	kind      schema.GroupKind
	namespace string
	name      string
}

func keyOf(u *unstructured.Unstructured) objectKey {
	return objectKey{kind: u.GroupVersionKind().GroupKind(), namespace: u.GetNamespace(), name: u.GetName()}
}

// toPrune is the members found in the cluster that the applied set no longer holds,
// in the reverse of the apply order (what lives in a namespace before the namespace).
// CustomResourceDefinitions are never pruned: deleting one deletes every object of its
// kind, every policy and companion of the cluster, which only an uninstall means to do.
func toPrune(found []objectKey, applied []*unstructured.Unstructured) (prune []objectKey, kept []objectKey) {
	want := map[objectKey]bool{}
	for _, u := range applied {
		want[keyOf(u)] = true
	}
	for _, k := range found {
		switch {
		case want[k]:
		case k.kind == crdKind:
			kept = append(kept, k)
		default:
			prune = append(prune, k)
		}
	}
	slices.SortFunc(prune, deleteOrder)
	slices.SortFunc(kept, deleteOrder)
	return prune, kept
}

// deleteOrder orders objects to be deleted: the reverse of the apply order, so that
// what lives in a namespace goes before the namespace.
func deleteOrder(a, b objectKey) int {
	return cmp.Or(config.Rank(b.kind.Kind)-config.Rank(a.kind.Kind), cmp.Compare(groupKindString(a.kind), groupKindString(b.kind)),
		cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
}

var (
	crdKind        = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
	deploymentKind = schema.GroupKind{Group: "apps", Kind: "Deployment"}
)
