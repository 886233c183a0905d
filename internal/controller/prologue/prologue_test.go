package prologue

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/controller/cachelag"
	"github.com/holdfast-dev/holdfast/internal/controller/invalidspec"
)

// TestGet: each way a reconcile ends before deciding, and the way it goes on. A stored
// spec the operator cannot decode needs the API server's decoding: the e2e validation
// tests (stored_test.go) cover it.
func TestGet(t *testing.T) {
	key := types.NamespacedName{Namespace: "shop", Name: "web"}
	policy := func(mod func(*holdfastv1alpha1.DisruptionPolicy)) *holdfastv1alpha1.DisruptionPolicy {
		p := &holdfastv1alpha1.DisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		if mod != nil {
			mod(p)
		}
		return p
	}
	tests := map[string]struct {
		stored *holdfastv1alpha1.DisruptionPolicy
		behind bool
		// undecodable stores a spec holding an escapeAfter the API no longer accepts.
		undecodable     bool
		done, gone, inv bool
		requeue         bool
	}{
		"gone": {done: true, gone: true},
		"being deleted": {stored: policy(func(p *holdfastv1alpha1.DisruptionPolicy) {
			p.DeletionTimestamp, p.Finalizers = &metav1.Time{Time: time.Now()}, []string{"x"}
		}), done: true},
		"cache behind":      {stored: policy(nil), behind: true, done: true, requeue: true},
		"goes on to decide": {stored: policy(nil)},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			if err := holdfastv1alpha1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			b := fake.NewClientBuilder().WithScheme(scheme)
			if tt.stored != nil {
				b = b.WithObjects(tt.stored)
			}
			c := b.Build()
			reporter, err := invalidspec.New(prometheus.NewRegistry(), "DisruptionPolicy", nil)
			if err != nil {
				t.Fatal(err)
			}
			p := Prologue{Kind: "DisruptionPolicy", Client: c, Patches: &cachelag.Patches{}, Invalid: reporter}
			if tt.behind {
				stored := &holdfastv1alpha1.DisruptionPolicy{}
				if err := c.Get(context.Background(), key, stored); err != nil {
					t.Fatal(err)
				}
				p.Patches.Patched(key, stored.ResourceVersion, "a version after it")
			}
			var gone, inv bool
			done, res, err := p.Get(context.Background(), reconcile.Request{NamespacedName: key}, &holdfastv1alpha1.DisruptionPolicy{},
				func(context.Context) error { inv = true; return nil }, func() error { gone = true; return nil })
			if err != nil {
				t.Fatal(err)
			}
			if done != tt.done || gone != tt.gone || inv != tt.inv || (res.RequeueAfter > 0) != tt.requeue {
				t.Errorf("done %t, gone %t, invalid %t, requeue %s; want %t, %t, %t, requeue %t", done, gone, inv, res.RequeueAfter, tt.done, tt.gone, tt.inv, tt.requeue)
			}
		})
	}
}
