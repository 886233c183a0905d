//go:build e2e

package drain_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/internal/drain"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// A drain killed outright (SIGKILL: no cleanup runs) leaves its marks: the node it was
// draining says DrainInProgress True, the node waiting its turn keeps the queued taint,
// both the run's annotation. The operator, which runs all the time, clears them once the
// run's Lease has expired, and leaves the cordon; after a drain that finished, it clears
// Drained once the node is uncordoned with kubectl.
func TestOperatorClearsDrainLeftovers(t *testing.T) {
	f := framework.New(t)
	hc := f.HoldfastClient()
	f.InstallCRDs(hc, &holdfastv1alpha1.DisruptionPolicyList{}, &holdfastv1alpha1.NodeCompanionList{})
	draining, queued := killedDrain(t, f, "left-op")
	f.StartOperator()
	f.Eventually(2*time.Minute, "the operator to clear the killed drain's marks", func(ctx context.Context) (bool, error) {
		for _, n := range []string{draining, queued} {
			node, err := f.Clientset.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil || len(marks(node)) > 0 {
				return false, err
			}
		}
		return true, nil
	})
	if node, err := f.Clientset.CoreV1().Nodes().Get(f.Ctx, draining, metav1.GetOptions{}); err != nil || !node.Spec.Unschedulable {
		t.Errorf("node %s uncordoned by the operator (err %v); the cordon is the user's to lift", draining, err)
	}

	// A drain that finishes leaves Drained True, the truth while the node is cordoned;
	// kubectl uncordon gives the node back, and the operator clears the conditions.
	deletePods(f)
	r := holdfast(f.Ctx, f, "drain", queued, "--slot-namespace", f.Namespace, "--timeout", "1m")
	r.wait(t, 2*time.Minute)
	if r.code != 0 {
		t.Fatalf("holdfast drain %s exited %d:\n%s", queued, r.code, r.output())
	}
	if got := condition(t, f, queued, corev1.NodeDrained); got != corev1.ConditionTrue {
		t.Fatalf("Drained %q after the drain, want True", got)
	}
	f.Uncordon(queued)
	f.Eventually(time.Minute, "the operator to clear Drained after kubectl uncordon", func(ctx context.Context) (bool, error) {
		node, err := f.Clientset.CoreV1().Nodes().Get(ctx, queued, metav1.GetOptions{})
		return err == nil && len(marks(node)) == 0, err
	})
}

// Without the operator, holdfast uncordon gives the killed drain's nodes back as kubectl
// uncordon does, in kubectl's words, and clears the marks the drain left.
func TestUncordonClearsDrainLeftovers(t *testing.T) {
	f := framework.New(t)
	draining, queued := killedDrain(t, f, "left-cli")
	r := holdfast(f.Ctx, f, "uncordon", draining, queued)
	r.wait(t, time.Minute)
	t.Logf("exit %d:\n%s", r.code, r.output())
	if r.code != 0 {
		t.Errorf("exit code %d, want 0", r.code)
	}
	for _, want := range []string{"node/" + draining + " uncordoned", "node/" + queued + " already uncordoned", "removed condition DrainInProgress"} {
		if !strings.Contains(r.out.String(), want) {
			t.Errorf("the output does not say %q", want)
		}
	}
	for _, n := range []string{draining, queued} {
		node, err := f.Clientset.CoreV1().Nodes().Get(f.Ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if node.Spec.Unschedulable || len(marks(node)) > 0 {
			t.Errorf("node %s: cordoned %v, drain marks %v; want neither", n, node.Spec.Unschedulable, marks(node))
		}
	}
}

// killedDrain starts holdfast drain, as a process, on two new nodes, each with a pod
// pinned to it, so that one node's drain is blocked (the pod fits nowhere else) holding
// the only slot while the other waits its turn, and kills it with SIGKILL. It returns
// the node being drained and the node queued, after checking the marks they were left
// with.
func killedDrain(t *testing.T, f *framework.Framework, prefix string) (draining, queued string) {
	t.Helper()
	t.Cleanup(func() { deletePods(f) })
	var nodes []string
	for i, zone := range []string{"zone-a", "zone-b"} {
		n := f.AddNode(fmt.Sprintf("%s-%d", prefix, i+1), zone, nil).Name
		nodes = append(nodes, n)
		pinned := f.Deployment(fmt.Sprintf("pinned-%d", i+1), 1)
		pinned.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: n}
		f.Create(pinned)
		f.WaitReady(pinned)
	}
	uncordonAtEnd(f, nodes...)
	var out syncBuffer
	cmd := exec.CommandContext(f.Ctx, holdfastBinary(t), append([]string{"--kubeconfig", f.Kubeconfig, "drain", "--slot-namespace", f.Namespace,
		"--max-concurrent", "1", "--timeout", "5m"}, nodes...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Eventually(2*time.Minute, "one node's drain blocked and the other queued", func(ctx context.Context) (bool, error) {
		draining, queued = "", ""
		for _, n := range nodes {
			node, err := f.Clientset.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			m := marks(node)
			switch {
			case slices.Contains(m, "DrainInProgress=True") && slices.Contains(m, drain.RunAnnotation):
				draining = n
			case slices.Contains(m, drain.QueuedTaintKey) && slices.Contains(m, drain.RunAnnotation):
				queued = n
			}
		}
		return draining != "" && queued != "", nil
	})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	t.Logf("holdfast drain, killed:\n%s", out.String())
	return draining, queued
}

// marks lists what a drain writes on a node that the node carries: holdfast's conditions
// (as Type=Status), the queued taint and the run's annotation.
func marks(n *corev1.Node) []string {
	var out []string
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeDrainInProgress || c.Type == corev1.NodeDrained {
			out = append(out, fmt.Sprintf("%s=%s", c.Type, c.Status))
		}
	}
	if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == drain.QueuedTaintKey }) {
		out = append(out, drain.QueuedTaintKey)
	}
	if _, ok := n.Annotations[drain.RunAnnotation]; ok {
		out = append(out, drain.RunAnnotation)
	}
	return out
}

// condition is the status of the node's condition of that type, or "".
func condition(t *testing.T, f *framework.Framework, node string, typ corev1.NodeConditionType) corev1.ConditionStatus {
	t.Helper()
	n, err := f.Clientset.CoreV1().Nodes().Get(f.Ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}
