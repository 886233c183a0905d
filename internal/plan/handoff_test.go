package plan_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/holdfast-dev/holdfast/internal/plan"
	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
)

// HandOffRoom places the node's pods, the single replica's included, on the other
// nodes, as an autoscaler would before it takes the node; the node itself is no place
// for them, DaemonSets' pods stay, and the answer names the pod that fits nowhere.
func TestHandOffRoom(t *testing.T) {
	pinned := func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: "node-1"}
	}
	tests := map[string]struct {
		build func(c *snapshottest.Cluster)
		want  string // a part of the answer; "" when everything fits
	}{
		"the other node has room for the single replica and its neighbour": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "single", map[string]string{"app": "single"}, []string{"node-1"}, requestCPU("1"))
				c.Deployment("shop", "web", map[string]string{"app": "web"}, []string{"node-1"}, requestCPU("1"))
			},
		},
		"the single replica is pinned to its node": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "single", map[string]string{"app": "single"}, []string{"node-1"}, requestCPU("1"), pinned)
			},
			want: "pod shop/single-rs-0: its replacement fits on no other node: 0/2 nodes are available: 1 cordoned or being drained, 1 not matching the pod's node selector or affinity",
		},
		"together they do not fit, though each would alone": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "single", map[string]string{"app": "single"}, []string{"node-1"}, requestCPU("1"))
				c.Deployment("shop", "web", map[string]string{"app": "web"}, []string{"node-1"}, requestCPU("2"))
				c.Deployment("shop", "keeper", map[string]string{"app": "keeper"}, []string{"node-2"}, requestCPU("1500m"))
			},
			want: "with too little cpu",
		},
		"a DaemonSet's pod goes with the node": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "single", map[string]string{"app": "single"}, []string{"node-1"}, requestCPU("1"))
				c.DaemonSet("kube-system", "agent", map[string]string{"app": "agent"}, []string{"node-1", "node-2"}, func(d *appsv1.DaemonSet) {
					d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}
				})
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := cluster("node-1", "node-2")
			allocatable(c, "4", "110", "node-1", "node-2")
			tc.build(c)
			got, err := plan.HandOffRoom(c.Snapshot, now, "node-1")
			if err != nil {
				t.Fatal(err)
			}
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("HandOffRoom = %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := plan.HandOffRoom(cluster("node-1").Snapshot, now, "node-9"); err == nil {
		t.Error("a node that is not in the snapshot gave no error")
	}
}
