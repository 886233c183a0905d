package nodecompanion

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A companion on a node missing from the cache is force-deleted only when the apiserver
// says the node is gone, not when the cache merely has not seen it yet.
func TestNodesGone(t *testing.T) {
	node := func(name string) corev1.Node { return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	pod := func(name, nodeName string, _ bool) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: nodeName}}
	}
	fresh := node("node-new") // created a moment ago: in the apiserver, not yet in the cache
	live := fake.NewClientBuilder().WithObjects(&fresh).Build()
	onNew := pod("c-new", "node-new", true)
	onGone := pod("c-gone", "node-gone", false)
	alsoGone := pod("c-gone-2", "node-gone", false)
	got, err := nodesGone(t.Context(), live, []*corev1.Pod{&onNew, &onGone, &alsoGone})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{"c-gone", "c-gone-2"}, names); diff != "" {
		t.Errorf("pods to force-delete (-want +got):\n%s", diff)
	}
}
