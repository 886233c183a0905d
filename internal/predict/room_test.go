package predict

import (
	"github.com/holdfast-dev/holdfast/internal/policy"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
)

// A prediction answers a hand-off's room from the snapshot with the planner, as the
// operator does from the cluster: the single replica pinned to its node fits nowhere
// else; once free to move, it fits on the other node.
func TestRoomFromTheSnapshot(t *testing.T) {
	at := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, pinned := range []bool{true, false} {
		c := snapshottest.New()
		for _, n := range []string{"node-1", "node-2"} {
			c.Node(n, "zone-a")
		}
		for i := range c.Snapshot.Nodes {
			c.Snapshot.Nodes[i].Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"),
				corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
		}
		c.Deployment("shop", "single", map[string]string{"app": "single"}, []string{"node-1"}, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			if pinned {
				d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: "node-1"}
			}
		})
		got := index(c.Snapshot, at, policy.Settings{}).roomOf("node-1", at)
		const want = "pod shop/single-rs-0: its replacement fits on no other node"
		if pinned != strings.HasPrefix(got, want) {
			t.Errorf("pinned %t: Room = %q", pinned, got)
		}
	}
}
