package framework

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AddNode registers one more kwok node shaped like the testbed's first node, in the
// given zone and with extra labels, waits until it is Ready and deletes it when the
// test ends.
func (f *Framework) AddNode(name, zone string, extraLabels map[string]string) *corev1.Node {
	f.T.Helper()
	model, err := f.Clientset.CoreV1().Nodes().Get(f.Ctx, f.Nodes[0], metav1.GetOptions{})
	if err != nil {
		f.T.Fatalf("reading node %s as a model: %v", f.Nodes[0], err)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}, Labels: map[string]string{}},
		Status:     corev1.NodeStatus{Capacity: model.Status.Capacity, Allocatable: model.Status.Allocatable},
	}
	for k, v := range model.Annotations {
		if k == "kwok.x-k8s.io/node" {
			node.Annotations[k] = v
		}
	}
	for k, v := range model.Labels {
		node.Labels[k] = v
	}
	node.Labels[corev1.LabelHostname] = name
	node.Labels[corev1.LabelTopologyZone] = zone
	for k, v := range extraLabels {
		node.Labels[k] = v
	}
	created, err := f.Clientset.CoreV1().Nodes().Create(f.Ctx, node, metav1.CreateOptions{})
	if err != nil {
		f.T.Fatalf("creating node %s: %v", name, err)
	}
	f.T.Cleanup(func() { f.DeleteNode(name) })
	f.Eventually(defaultTimeout, fmt.Sprintf("node %s to be Ready", name), func(ctx context.Context) (bool, error) {
		n, err := f.Clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return NodeReady(n), nil
	})
	return created
}

// DeleteNode deletes a node, as a cloud provider does when a machine disappears. A
// node that is already gone is fine.
func (f *Framework) DeleteNode(name string) {
	f.T.Helper()
	err := f.Clientset.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		f.T.Errorf("deleting node %s: %v", name, err)
	}
}

// CrashNode stops everything the node's kubelet does (testbed crash): its Lease and
// status are no longer renewed, its pods keep their last status, and its deleted pods
// stay Terminating. The node lifecycle controller takes it from there, as for a dead
// machine. A node still crashed when the test ends is restored then.
func (f *Framework) CrashNode(name string) {
	f.T.Helper()
	if err := f.crash(name, true); err != nil {
		f.T.Fatal(err)
	}
	f.T.Cleanup(func() {
		if !f.down[name] {
			return
		}
		if _, err := f.Clientset.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		if err := f.crash(name, false); err != nil {
			f.T.Error(err)
		}
	})
}

// RestoreNode brings a crashed node back as after a reboot (testbed restore): kwok
// renews its Lease and makes it and its pods Ready again, and its deleted pods go.
func (f *Framework) RestoreNode(name string) {
	f.T.Helper()
	if err := f.crash(name, false); err != nil {
		f.T.Fatal(err)
	}
}

// crash runs testbed crash (down) or restore on the test binary's testbed, and records
// which nodes are down.
func (f *Framework) crash(name string, down bool) error {
	command := map[bool]string{true: "crash", false: "restore"}[down]
	if out, err := testbed(command, "--dir", f.Dir, name).CombinedOutput(); err != nil {
		return fmt.Errorf("testbed %s %s: %w\n%s", command, name, err, out)
	}
	if f.down == nil {
		f.down = map[string]bool{}
	}
	f.down[name] = down
	return nil
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
