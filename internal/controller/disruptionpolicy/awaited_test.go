package disruptionpolicy

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Another namespace's Deployment or StatefulSet deleted or scaled down wakes the
// policies that await it (policy.Observed.Awaited), and only those; a policy that awaits
// nothing more, or is gone, is forgotten.
func TestAwaitingPolicies(t *testing.T) {
	r := &reconciler{}
	shop, web := types.NamespacedName{Namespace: "shop", Name: "p"}, types.NamespacedName{Namespace: "web", Name: "p"}
	r.awaited.set(shop, []string{"Deployment/batch/filler", "StatefulSet/batch/db"})
	r.awaited.set(web, []string{"Deployment/batch/filler"})
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: "batch", Name: name} }
	less := func(a, b reconcile.Request) bool { return a.String() < b.String() }
	for _, tc := range []struct {
		obj  client.Object
		want []reconcile.Request
	}{
		{&appsv1.Deployment{ObjectMeta: meta("filler")}, []reconcile.Request{{NamespacedName: shop}, {NamespacedName: web}}},
		{&appsv1.StatefulSet{ObjectMeta: meta("db")}, []reconcile.Request{{NamespacedName: shop}}},
		// A StatefulSet of the Deployment's name is another workload.
		{&appsv1.StatefulSet{ObjectMeta: meta("filler")}, nil},
		{&appsv1.Deployment{ObjectMeta: meta("other")}, nil},
		{&appsv1.DaemonSet{ObjectMeta: meta("filler")}, nil},
	} {
		got := r.awaitingPolicies(context.Background(), tc.obj)
		if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(less), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%T %s woke (-want +got):\n%s", tc.obj, tc.obj.GetName(), diff)
		}
	}
	r.awaited.set(shop, nil)
	if got := r.awaitingPolicies(context.Background(), &appsv1.StatefulSet{ObjectMeta: meta("db")}); len(got) != 0 {
		t.Errorf("a policy that awaits nothing more woken: %v", got)
	}
}

// Only what makes a workload's pods leave passes: its deletion, its deletion in the
// foreground begun, fewer replicas.
func TestShrunk(t *testing.T) {
	deployment := func(replicas *int32, deleting bool) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "batch", Name: "filler"}, Spec: appsv1.DeploymentSpec{Replicas: replicas}}
		if deleting {
			d.DeletionTimestamp = ptr.To(metav1.Now())
		}
		return d
	}
	set := func(replicas int32) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "batch", Name: "db"}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas)}}
	}
	p := shrunk()
	for name, tc := range map[string]struct {
		old, new client.Object
		want     bool
	}{
		"scaled down":                    {deployment(ptr.To[int32](3), false), deployment(ptr.To[int32](1), false), true},
		"scaled up":                      {deployment(ptr.To[int32](1), false), deployment(ptr.To[int32](3), false), false},
		"replicas unset, from 2":         {deployment(ptr.To[int32](2), false), deployment(nil, false), true},
		"status only":                    {deployment(ptr.To[int32](2), false), deployment(ptr.To[int32](2), false), false},
		"deletion in the foreground":     {deployment(ptr.To[int32](2), false), deployment(ptr.To[int32](2), true), true},
		"a StatefulSet scaled to 0":      {set(2), set(0), true},
		"a StatefulSet at the same size": {set(2), set(2), false},
	} {
		if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: passed %t, want %t", name, got, tc.want)
		}
	}
	if !p.Delete(event.DeleteEvent{Object: set(1)}) {
		t.Error("a deletion did not pass")
	}
	if p.Create(event.CreateEvent{Object: set(1)}) {
		t.Error("a creation passed")
	}
}
