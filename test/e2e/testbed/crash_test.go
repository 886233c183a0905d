//go:build e2e

package testbed_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// A crashed node is a dead machine to the real node lifecycle controller: its Lease goes
// stale, the controller marks it Ready=Unknown, taints it unreachable and marks its pods
// not Ready, and a pod deleted on it stays Terminating, as no kubelet confirms it. When
// the node is restored, it and its pods are Ready again and the Terminating pod goes.
func TestCrashAndRestoreNode(t *testing.T) {
	f := framework.New(t)
	// A node of the test's own, in a zone of healthy nodes, so that its crash is a
	// single unhealthy node to the controller and no other test sees it.
	node := f.AddNode(f.Namespace, "zone-a", nil).Name
	web, db := f.Deployment("web", 1), f.StatefulSet("db", 1)
	for _, spec := range []*corev1.PodSpec{&web.Spec.Template.Spec, &db.Spec.Template.Spec} {
		spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	}
	f.Create(web)
	f.Create(db)
	f.WaitReady(web)
	f.WaitReady(db)
	webPod, dbPod := onlyPod(t, f, "app=web"), onlyPod(t, f, "app=db")

	f.CrashNode(node)
	crashed := time.Now()
	// Deleted at once, the pod would be gone within a second with a live kubelet.
	if err := f.Clientset.CoreV1().Pods(f.Namespace).Delete(f.Ctx, dbPod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting pod %s: %v", dbPod.Name, err)
	}

	const lifecycle = 3 * time.Minute
	var unknownAfter, taintedAfter time.Duration
	f.Eventually(lifecycle, "the node Ready=Unknown and tainted unreachable:NoExecute", func(ctx context.Context) (bool, error) {
		n, err := f.Clientset.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if unknownAfter == 0 && readyStatus(n) == corev1.ConditionUnknown {
			unknownAfter = time.Since(crashed)
		}
		if taintedAfter == 0 && unreachable(n) {
			taintedAfter = time.Since(crashed)
		}
		return unknownAfter > 0 && taintedAfter > 0, nil
	})
	f.Eventually(lifecycle, "its pods Ready=False", func(ctx context.Context) (bool, error) {
		for _, want := range []corev1.Pod{webPod, dbPod} {
			p, err := livePod(ctx, f, want)
			if err != nil {
				return false, err
			}
			if podReadyStatus(p) != corev1.ConditionFalse {
				return false, fmt.Errorf("pod %s Ready=%s", p.Name, podReadyStatus(p))
			}
		}
		return true, nil
	})

	// Nothing wrote for the node in the meantime: kwok renews a Lease every quarter of its
	// duration and would have made the node Ready again at once.
	lease, err := f.Clientset.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(f.Ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	duration := time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	if stale := time.Since(lease.Spec.RenewTime.Time); stale < duration {
		t.Errorf("the Lease of the crashed node was renewed %s ago, within its duration %s (crash %s ago)", stale.Round(time.Second), duration, time.Since(crashed).Round(time.Second))
	}
	if n, err := f.Clientset.CoreV1().Nodes().Get(f.Ctx, node, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if readyStatus(n) != corev1.ConditionUnknown {
		t.Errorf("the crashed node is Ready=%s, want Unknown", readyStatus(n))
	}
	if p, err := livePod(f.Ctx, f, dbPod); err != nil {
		t.Fatalf("%v %s after its deletion on the crashed node: something confirmed it", err, time.Since(crashed).Round(time.Second))
	} else if p.DeletionTimestamp == nil {
		t.Fatalf("the pod %s has no deletionTimestamp", p.Name)
	}

	f.RestoreNode(node)
	restored := time.Now()
	var readyAfter time.Duration
	f.Eventually(lifecycle, "the node Ready and its unreachable taint gone", func(ctx context.Context) (bool, error) {
		n, err := f.Clientset.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if readyAfter == 0 && framework.NodeReady(n) {
			readyAfter = time.Since(restored)
		}
		return framework.NodeReady(n) && !unreachable(n), nil
	})
	untaintedAfter := time.Since(restored)
	f.Eventually(time.Minute, "the Lease renewed", func(ctx context.Context) (bool, error) {
		lease, err := f.Clientset.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
		return err == nil && lease.Spec.RenewTime.After(restored), err
	})
	f.Eventually(time.Minute, "the Terminating pod removed", func(ctx context.Context) (bool, error) {
		p, err := samePod(ctx, f, dbPod)
		return err == nil && p == nil, err
	})
	f.Eventually(time.Minute, "the Deployment's pod Ready again", func(ctx context.Context) (bool, error) {
		p, err := livePod(ctx, f, webPod)
		return err == nil && framework.PodReady(p), err
	})
	f.WaitReady(web)
	f.WaitReady(db)
	t.Logf("crash: Ready=Unknown after %s, tainted after %s; restore: Ready after %s, untainted after %s",
		unknownAfter.Round(time.Second), taintedAfter.Round(time.Second), readyAfter.Round(10*time.Millisecond), untaintedAfter.Round(10*time.Millisecond))
}

// onlyPod returns the one pod of the selector.
func onlyPod(t *testing.T, f *framework.Framework, selector string) corev1.Pod {
	t.Helper()
	pods, err := f.Pods(f.Ctx, selector)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 {
		t.Fatalf("got %d pods of %s, want 1", len(pods), selector)
	}
	return pods[0]
}

// samePod returns the pod now, or nil once it is gone: removed, or replaced by a namesake.
func samePod(ctx context.Context, f *framework.Framework, want corev1.Pod) (*corev1.Pod, error) {
	p, err := f.Clientset.CoreV1().Pods(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	case p.UID != want.UID:
		return nil, nil
	}
	return p, nil
}

// livePod is samePod for a pod that must still be there.
func livePod(ctx context.Context, f *framework.Framework, want corev1.Pod) (*corev1.Pod, error) {
	p, err := samePod(ctx, f, want)
	if err == nil && p == nil {
		err = fmt.Errorf("pod %s (%s) is gone", want.Name, want.UID)
	}
	return p, err
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

func podReadyStatus(p *corev1.Pod) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status
		}
	}
	return ""
}

// unreachable reports whether the node carries the node lifecycle controller's
// unreachable NoExecute taint, which evicts its pods after their toleration.
func unreachable(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == corev1.TaintNodeUnreachable && t.Effect == corev1.TaintEffectNoExecute
	})
}
