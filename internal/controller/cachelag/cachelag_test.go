package cachelag

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestBehindUntilTheCacheMovesOn(t *testing.T) {
	var p Patches
	key := types.NamespacedName{Name: "fleet"}
	if p.Behind(key, "7") {
		t.Error("behind before any patch")
	}
	p.Patched(key, "7", "8")
	if !p.Behind(key, "7") {
		t.Error("not behind when the cache still holds the object the patch was computed from")
	}
	if p.Behind(key, "8") {
		t.Error("behind once the cache holds a newer object")
	}
	if p.Behind(types.NamespacedName{Namespace: "a", Name: "fleet"}, "7") {
		t.Error("another object behind")
	}
	p.Forget(key)
	if p.Behind(key, "7") {
		t.Error("behind after Forget")
	}
}

// A patch the API server found to change nothing keeps the resourceVersion: the cache
// holds its result already, and nothing is left to wait for.
func TestNoOpPatchLeavesNothingToWaitFor(t *testing.T) {
	var p Patches
	key := types.NamespacedName{Name: "fleet"}
	p.Patched(key, "7", "8")
	p.Patched(key, "8", "8")
	if p.Behind(key, "8") {
		t.Error("behind after a patch that changed nothing")
	}
}
