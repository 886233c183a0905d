// Package prologue is what every reconcile of one of holdfast's kinds does before it
// decides anything.
package prologue

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/holdfast-dev/holdfast/internal/controller/cachelag"
	"github.com/holdfast-dev/holdfast/internal/controller/invalidspec"
)

// Object is one of holdfast's kinds as a reconcile reads it.
type Object interface {
	client.Object
	// SpecDecodeErrors say which fields of the stored spec cannot be decoded.
	SpecDecodeErrors() []string
}

// Prologue holds what a controller keeps per object across reconciles.
type Prologue struct {
	Kind    string
	Client  client.Reader
	Patches *cachelag.Patches
	Invalid *invalidspec.Reporter
}

// Get reads the object req names into obj, and ends the reconcile (done) where every
// holdfast controller ends it first: the object is gone (gone runs, once what is kept of
// it is forgotten), being deleted (what it owns goes with it), read from a cache behind
// the controller's own last status patch (looked at again soon), or holding a spec that
// cannot be decoded (invalid reports it).
func (p Prologue) Get(ctx context.Context, req reconcile.Request, obj Object, invalid func(context.Context) error, gone func() error) (done bool, res ctrl.Result, err error) {
	if err := p.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if !apierrors.IsNotFound(err) {
			return true, ctrl.Result{}, fmt.Errorf("getting %s %s: %w", p.Kind, req.NamespacedName, err)
		}
		p.Patches.Forget(req.NamespacedName)
		p.Invalid.Forget(req.NamespacedName)
		return true, ctrl.Result{}, gone()
	}
	switch {
	case obj.GetDeletionTimestamp() != nil:
		return true, ctrl.Result{}, nil
	case p.Patches.Behind(req.NamespacedName, obj.GetResourceVersion()):
		return true, ctrl.Result{RequeueAfter: cachelag.Retry}, nil
	case len(obj.SpecDecodeErrors()) > 0:
		return true, ctrl.Result{}, invalid(ctx)
	}
	p.Invalid.Forget(req.NamespacedName)
	return false, ctrl.Result{}, nil
}
