//go:build e2e

// Package testbed_test proves the testbed behaves like a real cluster where holdfast
// depends on it: budgets enforced by the Eviction API, and nodes and pods that stay
// Ready for as long as a test runs.
package testbed_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Nodes: 3, Zones: 3})
}

// What protects a node-by-node upgrade: three replicas, one per node, under a budget of
// one unavailable. Draining a first node evicts its pod, whose replacement stays Pending
// because no other node may take it; evicting a second pod is then refused with 429
// naming the budget.
func TestEvictionRefusedWhileReplacementPending(t *testing.T) {
	f := framework.New(t)
	d := f.Deployment("platform", 3)
	framework.HostnameAntiAffinity(d)
	f.Create(d)
	f.Create(f.PDB("platform-pdb", "platform", 1))
	f.WaitReady(d)
	f.WaitBudget("platform-pdb", 1)

	pods, err := f.Pods(f.Ctx, framework.SelectorOf(d))
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 3 {
		t.Fatalf("got %d pods, want 3", len(pods))
	}
	first, second := pods[0], pods[1]
	f.Cordon(first.Spec.NodeName)
	if err := f.Evict(f.Ctx, &first); err != nil {
		t.Fatalf("evicting the first pod %s: %v", first.Name, err)
	}
	f.Eventually(time.Minute, "a replacement pod that stays Pending", func(ctx context.Context) (bool, error) {
		pods, err := f.Pods(ctx, framework.SelectorOf(d))
		if err != nil {
			return false, err
		}
		for _, p := range pods {
			if p.DeletionTimestamp == nil && p.Spec.NodeName == "" && p.Status.Phase == corev1.PodPending {
				return true, nil
			}
		}
		return false, nil
	})
	f.WaitBudget("platform-pdb", 0)

	err = f.Evict(f.Ctx, &second)
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("evicting a second pod while the first replacement is Pending: got %v, want 429 Too Many Requests", err)
	}
	// The budget is named in the causes of the Status the API answers with.
	var causes []string
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			causes = append(causes, c.Message)
		}
	}
	if !strings.Contains(strings.Join(causes, "\n"), "platform-pdb") {
		t.Errorf("the refusal %q (causes %q) does not name the budget platform-pdb", err, causes)
	}
	if _, err := f.Clientset.CoreV1().Pods(f.Namespace).Get(f.Ctx, second.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the second pod is gone after a refused eviction: %v", err)
	}
}

// kwok keeps nodes Ready only through node Leases; without them the node lifecycle
// controller marks every node and pod not Ready within about a minute. This test
// watches for HOLDFAST_SOAK (default 2m, over two of the node monitor's 50 s grace
// periods: a node whose Lease is not renewed is NotReady after one) that nothing turns
// NotReady.
func TestNodesAndPodsStayReady(t *testing.T) {
	soak := 2 * time.Minute
	if v := os.Getenv("HOLDFAST_SOAK"); v != "" {
		var err error
		if soak, err = time.ParseDuration(v); err != nil {
			t.Fatalf("HOLDFAST_SOAK=%q: %v", v, err)
		}
	}
	if testing.Short() {
		soak = 90 * time.Second // still longer than the node monitor's grace period
	}
	f := framework.New(t)
	d := f.Deployment("steady", 6)
	f.Create(d)
	f.WaitReady(d)

	deadline := time.Now().Add(soak)
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	checks := 0
	for time.Now().Before(deadline) {
		select {
		case <-f.Ctx.Done():
			t.Fatal(f.Ctx.Err())
		case <-tick.C:
		}
		nodes, err := f.Clientset.CoreV1().Nodes().List(f.Ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range nodes.Items {
			if !framework.NodeReady(&nodes.Items[i]) {
				t.Fatalf("after %s node %s is not Ready: %+v", soak-time.Until(deadline), nodes.Items[i].Name, nodes.Items[i].Status.Conditions)
			}
		}
		pods, err := f.Pods(f.Ctx, framework.SelectorOf(d))
		if err != nil {
			t.Fatal(err)
		}
		for i := range pods {
			if !framework.PodReady(&pods[i]) {
				t.Fatalf("after %s pod %s is not Ready: %+v", soak-time.Until(deadline), pods[i].Name, pods[i].Status.Conditions)
			}
		}
		checks++
	}
	t.Logf("%d nodes and %d pods stayed Ready for %s (%d checks)", len(f.Nodes), 6, soak, checks)
}
