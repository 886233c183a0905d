package disruptionpolicy

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
)

// Issue 30 item 13: a NodeClaim's change wakes only the policies that act on drains in
// the namespaces with pods on its node, not every such policy of the cluster.
func TestClaimPoliciesOnlyOfItsNode(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := holdfastv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	pol := func(ns string, s holdfastv1alpha1.SingleReplicaStrategy) client.Object {
		return &holdfastv1alpha1.DisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}, Spec: holdfastv1alpha1.DisruptionPolicySpec{SingleReplica: s}}
	}
	pod := func(ns, name, node string) client.Object {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{NodeName: node}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&holdfastv1alpha1.DisruptionPolicy{}, drainIndex, drainStrategies).
		WithInterceptorFuncs(interceptor.Funcs{List: podMetadataByNode}).
		WithObjects(
			pol("surge", holdfastv1alpha1.SingleReplicaSurge), pod("surge", "a", "n1"),
			pol("protect", holdfastv1alpha1.SingleReplicaProtect), pod("protect", "b", "n1"),
			pol("elsewhere", holdfastv1alpha1.SingleReplicaSurge), pod("elsewhere", "c", "n2"),
			pol("skip", holdfastv1alpha1.SingleReplicaSkip), pod("skip", "d", "n1"),
		).Build()
	r := &reconciler{client: c, live: c}
	claim := nodeClaim()
	claim.SetName("claim-1")
	claim.Object["status"] = map[string]any{"nodeName": "n1"}

	got := r.claimPolicies(context.Background(), claim)
	want := []reconcile.Request{
		{NamespacedName: types.NamespacedName{Namespace: "surge", Name: "p"}},
		{NamespacedName: types.NamespacedName{Namespace: "protect", Name: "p"}},
	}
	less := func(a, b reconcile.Request) bool { return a.String() < b.String() }
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(less)); diff != "" {
		t.Errorf("policies woken (-want +got):\n%s", diff)
	}
	unlaunched := nodeClaim()
	if got := r.claimPolicies(context.Background(), unlaunched); len(got) != 0 {
		t.Errorf("a NodeClaim without a node woke %v", got)
	}
}

// podMetadataByNode serves a list of pods' metadata by spec.nodeName as the apiserver
// does; the fake client indexes only what it lists, and metadata has no spec.
func podMetadataByNode(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
	meta, ok := list.(*metav1.PartialObjectMetadataList)
	if !ok {
		return c.List(ctx, list, opts...)
	}
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	node, _ := lo.FieldSelector.RequiresExactMatch(podNodeField)
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods); err != nil {
		return err
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == node {
			meta.Items = append(meta.Items, metav1.PartialObjectMetadata{ObjectMeta: p.ObjectMeta})
		}
	}
	return nil
}
