package contest

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Writer names, from an object's managedFields, the other writer of f: of the
// managers that own is false for, the latest whose fields hold f (a taint's f:spec and
// f:taints; an annotation's f:metadata, f:annotations and its key). A writer that
// removed a key owns nothing of it, so without such a manager it is the latest other
// manager. Writes through a subresource (a status) cannot touch holdfast's fields and
// are passed over. "" when no other manager is recorded.
func Writer(entries []metav1.ManagedFieldsEntry, f Field, own func(manager string) bool) string {
	var holder, latest *metav1.ManagedFieldsEntry
	for i := range entries {
		e := &entries[i]
		if own(e.Manager) || e.Subresource != "" {
			continue
		}
		if latest == nil || later(e, latest) {
			latest = e
		}
		if holds(e.FieldsV1, f.managed) && (holder == nil || later(e, holder)) {
			holder = e
		}
	}
	switch {
	case holder != nil:
		return holder.Manager
	case latest != nil:
		return latest.Manager
	}
	return ""
}

// holds says the fields reach the end of path.
func holds(fields *metav1.FieldsV1, path [3]string) bool {
	if fields == nil {
		return false
	}
	raw := fields.GetRawBytes()
	for _, step := range path {
		if step == "" {
			break
		}
		var set map[string]json.RawMessage
		if json.Unmarshal(raw, &set) != nil {
			return false
		}
		next, ok := set[step]
		if !ok {
			return false
		}
		raw = next
	}
	return true
}

// later says a was written after b; an entry without a time is the oldest.
func later(a, b *metav1.ManagedFieldsEntry) bool {
	switch {
	case a.Time == nil:
		return false
	case b.Time == nil:
		return true
	}
	return a.Time.After(b.Time.Time)
}
