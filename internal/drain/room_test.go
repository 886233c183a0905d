package drain

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

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
		build  func(c *snapshottest.Cluster)
		filter Filter
		want   []string
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
		// A budget that keeps another pod for now does not hide it either.
		"pinned beside a pod its budget keeps": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "db", map[string]string{"app": "db"}, []string{"node-1"})
				c.PDB("shop", "db", map[string]string{"app": "db"}, snapshottest.MinAvailable(intstr.FromInt32(1)))
				c.Deployment("shop", "cache", map[string]string{"app": "cache"}, []string{"node-1"}, pinned)
			},
			want: []string{"shop/cache-rs-0"},
		},
		// The pods --pod-selector leaves out stay on the node: a bare one, which the drain
		// would refuse, no longer hides that the selected pods fit nowhere.
		"--pod-selector's pods that fit nowhere": {
			build: func(c *snapshottest.Cluster) {
				c.Deployment("shop", "web", map[string]string{"app": "web"}, []string{"node-1"}, pinned)
				c.Pod("ops", "debug", map[string]string{"app": "debug"}, "node-1")
			},
			filter: Filter{PodSelector: labels.SelectorFromSet(labels.Set{"app": "web"})},
			want:   []string{"shop/web-rs-0"},
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
			got, err := Unplaceable(c.Snapshot, t0, "node-1", tc.filter)
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

// The room checks of a run take the cluster's pods from the run's cache and never list
// them all, share one read of the workloads for RoomRecheck, and read the nodes and the
// checked node's pods each time: a node cordoned since is no place for a pod, and a
// replacement that landed on the checked node since needs room too.
func TestRoomViewSharesPodsAndReadsNodes(t *testing.T) {
	ctx := t.Context()
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Spec: corev1.PodSpec{NodeName: node}}
	}
	client := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}},
		pod("web-1", "node-1"), pod("web-2", "node-2"),
	)
	// The fake ignores field selectors; the API server lists the node's pods only.
	client.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sel := a.(k8stesting.ListAction).GetListRestrictions().Fields
		if sel.Empty() {
			return false, nil, nil
		}
		all, err := client.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), "")
		if err != nil {
			return true, nil, err
		}
		list := all.(*corev1.PodList)
		list.Items = slices.DeleteFunc(list.Items, func(p corev1.Pod) bool {
			return !sel.Matches(fields.Set{"spec.nodeName": p.Spec.NodeName})
		})
		return true, list, nil
	})
	lists := func(resource string) int {
		n := 0
		for _, a := range client.Actions() {
			if l, ok := a.(k8stesting.ListAction); ok && a.GetResource().Resource == resource && l.GetListRestrictions().Fields.Empty() {
				n++
			}
		}
		return n
	}
	cached := func() []*corev1.Pod { return []*corev1.Pod{pod("web-1", "node-1"), pod("web-2", "node-2")} }
	var v roomView
	if _, err := v.get(ctx, client, cached, t0, "node-2"); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}, Spec: corev1.NodeSpec{Unschedulable: true}}
	if _, err := client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("shop").Create(ctx, pod("web-3", "node-1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	snap, err := v.get(ctx, client, cached, t0.Add(RoomRecheck-time.Millisecond), "node-1")
	if err != nil {
		t.Fatal(err)
	}
	if got := lists("deployments"); got != 1 {
		t.Errorf("the workloads listed %d times within RoomRecheck, want once", got)
	}
	if !slices.ContainsFunc(snap.Nodes, func(n corev1.Node) bool { return n.Name == "node-2" && n.Spec.Unschedulable }) {
		t.Errorf("the second check does not see node-2 cordoned: %+v", snap.Nodes)
	}
	var names []string
	for _, p := range snap.Pods {
		names = append(names, p.Spec.NodeName+"/"+p.Name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"node-1/web-1", "node-1/web-3", "node-2/web-2"}, names); diff != "" {
		t.Errorf("pods of the second check (-want +got):\n%s", diff)
	}
	if _, err := v.get(ctx, client, cached, t0.Add(RoomRecheck), "node-1"); err != nil {
		t.Fatal(err)
	}
	if got := lists("deployments"); got != 2 {
		t.Errorf("the workloads listed %d times after RoomRecheck, want twice", got)
	}
	if got := lists("pods"); got != 0 {
		t.Errorf("every pod listed %d times, want never: they come from the cache", got)
	}
}
