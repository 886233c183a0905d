package drain

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
)

// Unplaceable asks the planner where each pod of the node would go: nowhere, when every
// other node is cordoned or the pod is pinned to its node.
func TestUnplaceable(t *testing.T) {
	cordon := func(c *snapshottest.Cluster, names ...string) {
		for i := range c.Snapshot.Nodes {
			for _, n := range names {
				if c.Snapshot.Nodes[i].Name == n {
					c.Snapshot.Nodes[i].Spec.Unschedulable = true
				}
			}
		}
	}
	pinned := func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: "node-1"}
	}
	tests := map[string]struct {
		build func(c *snapshottest.Cluster)
		want  []string
	}{
		"another node has room": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "web", map[string]string{"app": "web"}, []string{"node-1", "node-2"})
			},
		},
		"every other node is cordoned": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "web", map[string]string{"app": "web"}, []string{"node-1", "node-1"})
				cordon(c, "node-2", "node-3")
			},
			want: []string{"shop/web-rs-0", "shop/web-rs-1"},
		},
		"pinned to its node": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "web", map[string]string{"app": "web"}, []string{"node-2"})
				c.Deployment("shop", "cache", map[string]string{"app": "cache"}, []string{"node-1"}, pinned)
			},
			want: []string{"shop/cache-rs-0"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := snapshottest.New()
			for _, n := range []string{"node-1", "node-2", "node-3"} {
				c.Node(n, "zone-a")
			}
			tc.build(c)
			cordon(c, "node-1") // the node being drained
			before := c.Snapshot.Nodes[1].DeepCopy()
			got, err := Unplaceable(c.Snapshot, t0, "node-1", Filter{})
			if err != nil {
				t.Fatal(err)
			}
			var pods []string
			for pod, why := range got {
				pods = append(pods, pod)
				if !strings.Contains(why, "fits on no other node") {
					t.Errorf("%s: %q does not say it fits nowhere", pod, why)
				}
			}
			slices.Sort(pods)
			if diff := cmp.Diff(tc.want, pods); diff != "" {
				t.Errorf("unplaceable pods (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, &c.Snapshot.Nodes[1]); diff != "" {
				t.Errorf("the snapshot changed (-before +after):\n%s", diff)
			}
		})
	}
}
