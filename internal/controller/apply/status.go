package apply

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Status writes cur as obj's whole status, with a merge patch from old, the status obj
// was read with. The whole status, not a diff: a diff leaves out counts that are zero in
// both, and the API server then never shows them. And null for every field old has
// that cur leaves out (omitempty), at any depth: a merge patch keeps what it does not
// name, so the stale field would stay, the patch would change nothing, the object's
// resourceVersion would not move, and a reconciler waiting to see its own patch in the
// cache would wait for ever.
func Status(ctx context.Context, c client.Client, obj client.Object, old, cur any) error {
	patch, err := StatusPatch(old, cur)
	if err != nil {
		return fmt.Errorf("encoding status of %s: %w", klog.KObj(obj), err)
	}
	if err := c.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("patching status of %s: %w", klog.KObj(obj), err)
	}
	return nil
}

// StatusPatch is the merge patch Status sends.
func StatusPatch(old, cur any) ([]byte, error) {
	was, err := asMap(old)
	if err != nil {
		return nil, err
	}
	now, err := asMap(cur)
	if err != nil {
		return nil, err
	}
	nullRemoved(was, now)
	return json.Marshal(map[string]any{"status": now})
}

// nullRemoved sets to nil every key of was that now lacks, in now and in the objects
// both hold under one key. Lists are replaced whole by a merge patch: nothing to do.
func nullRemoved(was, now map[string]any) {
	for k, v := range was {
		next, ok := now[k]
		if !ok {
			now[k] = nil
			continue
		}
		if a, ok := v.(map[string]any); ok {
			if b, ok := next.(map[string]any); ok {
				nullRemoved(a, b)
			}
		}
	}
}

func asMap(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	return out, json.Unmarshal(data, &out)
}
