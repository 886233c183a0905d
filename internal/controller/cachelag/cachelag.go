// Package cachelag keeps a reconciler from deciding on an object whose status its own
// last patch has replaced while the cache still holds the old one: deciding from it
// would repeat the patch and the Events derived from the change.
package cachelag

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Retry is how soon a reconcile that found its own status patch not yet in the cache
// tries again; the watch usually delivers it within milliseconds.
const Retry = 200 * time.Millisecond

// Patches maps an object to the resourceVersion its last status patch was computed
// from: meeting that version again means the cache has not seen the patch yet. The zero
// value is ready to use, by concurrent reconciles too.
type Patches struct {
	from sync.Map
}

// Patched notes that the status of key was patched from the object at resourceVersion
// from, and the API server answered with resourceVersion to. A patch that changed
// nothing (to == from: the status differed only in what its JSON drops, as a time's
// fraction of a second) leaves nothing to wait for; waiting would last until someone
// else wrote the object.
func (p *Patches) Patched(key types.NamespacedName, from, to string) {
	if to == from {
		p.from.Delete(key)
		return
	}
	p.from.Store(key, from)
}

// Behind reports whether the object of key, read at resourceVersion rv, is the one its
// last status patch was computed from, so that the cache has not caught up yet.
func (p *Patches) Behind(key types.NamespacedName, rv string) bool {
	from, ok := p.from.Load(key)
	return ok && from == rv
}

// Forget drops key, once its object is gone.
func (p *Patches) Forget(key types.NamespacedName) {
	p.from.Delete(key)
}
