package disruptionpolicy

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// A pod's owners are read from the cache, but a ReplicaSet, from the API server: the
// cache holds only surge sets, and a metadata read of it would start an informer of every
// ReplicaSet of the cluster. One that is gone is nil, untyped.
func TestOwner(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: "shop", Name: name} }
	cache := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(&appsv1.Deployment{ObjectMeta: meta("web")}, &appsv1.StatefulSet{ObjectMeta: meta("db")}).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*metav1.PartialObjectMetadata); ok {
				t.Errorf("%s read as metadata from the cache", key)
			}
			return c.Get(ctx, key, obj, opts...)
		}}).Build()
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&appsv1.ReplicaSet{ObjectMeta: meta("web-5d8f")}).Build()
	r := &observer{client: cache, live: live}
	ctx := context.Background()
	for _, tc := range []struct {
		kind, name string
		found      bool
	}{
		{"Deployment", "web", true}, {"StatefulSet", "db", true}, {"ReplicaSet", "web-5d8f", true},
		{"Deployment", "gone", false}, {"StatefulSet", "gone", false}, {"ReplicaSet", "gone", false}, {"Job", "web", false},
	} {
		o, err := r.Owner(ctx, "shop", tc.kind, tc.name)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.kind, tc.name, err)
		}
		if found := o != nil; found != tc.found {
			t.Errorf("%s %s: found %t (%T), want %t", tc.kind, tc.name, found, o, tc.found)
		}
		if o != nil && o.GetName() != tc.name {
			t.Errorf("%s %s: read %s", tc.kind, tc.name, o.GetName())
		}
	}
}
