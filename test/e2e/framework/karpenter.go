package framework

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Karpenter's kinds, read as unstructured so that the tests do not depend on its module.
var (
	NodePoolKind      = schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodePool"}
	NodeClaimKind     = schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodeClaim"}
	kwokNodeClassKind = schema.GroupVersionKind{Group: "karpenter.kwok.sh", Version: "v1alpha1", Kind: "KWOKNodeClass"}
)

// KWOKNodeClassName is the node class every NodePool of the tests uses.
const KWOKNodeClassName = "default"

// InstanceType is the one kwok instance type the tests' NodePools offer (4 CPUs, 16Gi),
// on demand in one zone: with a single type and price, consolidation can only delete a
// node whose pods fit elsewhere, never replace it with a cheaper one, so what it does
// is predictable.
const InstanceType = "c-4x-amd64-linux"

// karpenterDir finds Karpenter's build: the folder HOLDFAST_KARPENTER names, or the one
// hack/karpenter/build.sh builds (or finds cached) and prints.
func karpenterDir() (string, error) {
	if dir := os.Getenv("HOLDFAST_KARPENTER"); dir != "" {
		return dir, nil
	}
	cmd := exec.Command(filepath.Join(RepoRoot(), "hack", "karpenter", "build.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building Karpenter (hack/karpenter/build.sh): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// startKarpenter applies Karpenter's CRDs and a KWOKNodeClass, then runs its kwok
// provider against the testbed until stop, which ends it with SIGTERM (as a kubelet
// would) and waits for it. Its log is the testbed's logs/karpenter.log.
func startKarpenter(c *Cluster) (stop func(), err error) {
	dir, err := karpenterDir()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := applyCRDs(ctx, c.Client, filepath.Join(dir, "crds")); err != nil {
		return nil, err
	}
	class := &unstructured.Unstructured{}
	class.SetGroupVersionKind(kwokNodeClassKind)
	class.SetName(KWOKNodeClassName)
	if err := c.Client.Create(ctx, class); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating KWOKNodeClass %s: %w", KWOKNodeClassName, err)
	}
	metricsPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	healthPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(dir, "karpenter"))
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+c.Kubeconfig,
		"DISABLE_LEADER_ELECTION=true",
		fmt.Sprint("METRICS_PORT=", metricsPort),
		fmt.Sprint("HEALTH_PROBE_PORT=", healthPort),
		// Pending pods are provisioned for together when they come within 3 s of each
		// other (10 s at most): time enough, on a busy machine, for the pods of
		// Deployments created together to share one node.
		"BATCH_IDLE_DURATION=3s", "BATCH_MAX_DURATION=10s",
	)
	return startPeer(ctx, c, "karpenter", cmd, fmt.Sprintf("http://127.0.0.1:%d/healthz", healthPort))
}

// applyCRDs applies every CRD file of dir and waits until each is established.
func applyCRDs(ctx context.Context, c client.Client, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s: %v", dir, err)
	}
	var names []string
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			return fmt.Errorf("decoding %s: %w", file, err)
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("holdfast-e2e"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying CRD %s: %w", u.GetName(), err)
		}
		names = append(names, u.GetName())
	}
	return wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			crd := &unstructured.Unstructured{}
			crd.SetAPIVersion("apiextensions.k8s.io/v1")
			crd.SetKind("CustomResourceDefinition")
			if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return false, nil
			}
			if !established(crd) {
				return false, nil
			}
		}
		return true, nil
	})
}

// established reports whether a CRD's Established condition is True.
func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// NodePool creates a NodePool named after the test's namespace, of InstanceType on
// KWOKNodeClassName, consolidating underutilised nodes after consolidateAfter; mod
// adjusts its spec before it is created. Pods reach its nodes through NodePoolSelector.
// When the test ends the NodePool is deleted and the test waits until Karpenter has
// removed its nodes, so that the next test starts from an empty cluster.
func (f *Framework) NodePool(consolidateAfter string, mod func(spec map[string]any)) *unstructured.Unstructured {
	f.T.Helper()
	np := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"disruption": map[string]any{
			"consolidationPolicy": "WhenEmptyOrUnderutilized",
			"consolidateAfter":    consolidateAfter,
			// The default allows 10% of the nodes at once, which rounds to one here.
			"budgets": []any{map[string]any{"nodes": "100%"}},
		},
		"template": map[string]any{"spec": map[string]any{
			"nodeClassRef": map[string]any{"group": kwokNodeClassKind.Group, "kind": kwokNodeClassKind.Kind, "name": KWOKNodeClassName},
			"requirements": []any{
				map[string]any{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": []any{InstanceType}},
				map[string]any{"key": "karpenter.sh/capacity-type", "operator": "In", "values": []any{"on-demand"}},
			},
			"expireAfter": "Never",
		}},
	}}}
	np.SetGroupVersionKind(NodePoolKind)
	np.SetName(f.Namespace)
	if mod != nil {
		mod(np.Object["spec"].(map[string]any))
	}
	if err := f.Client.Create(f.Ctx, np); err != nil {
		f.T.Fatalf("creating NodePool %s: %v", np.GetName(), err)
	}
	f.T.Cleanup(func() { f.deleteNodePool(np.GetName()) })
	return np
}

// NodePoolSelector is the node selector of pods that must run on the test's NodePool.
func (f *Framework) NodePoolSelector() map[string]string {
	return map[string]string{"karpenter.sh/nodepool": f.Namespace}
}

// deleteNodePool deletes the test's Deployments and pods, then the NodePool, and waits
// until Karpenter has removed its NodeClaims (and with them their nodes). The pods go
// first: Karpenter does not drain a pod with do-not-disrupt, which would hold its node.
func (f *Framework) deleteNodePool(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	all, ns := metav1.ListOptions{}, f.Namespace
	if err := f.Clientset.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil {
		f.T.Errorf("deleting the Deployments of %s: %v", ns, err)
	}
	if err := f.Clientset.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, all); err != nil {
		f.T.Errorf("deleting the pods of %s: %v", ns, err)
	}
	np := &unstructured.Unstructured{}
	np.SetGroupVersionKind(NodePoolKind)
	np.SetName(name)
	if err := f.Client.Delete(ctx, np); client.IgnoreNotFound(err) != nil {
		f.T.Errorf("deleting NodePool %s: %v", name, err)
		return
	}
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		claims, err := f.NodeClaims(ctx)
		return err == nil && len(claims) == 0, nil
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		f.T.Errorf("waiting for the nodes of NodePool %s to go: %v", name, err)
	}
}

// NodeClaims lists the NodeClaims of the test's NodePool.
func (f *Framework) NodeClaims(ctx context.Context) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(NodeClaimKind.GroupVersion().WithKind("NodeClaimList"))
	if err := f.Client.List(ctx, list, client.MatchingLabels{"karpenter.sh/nodepool": f.Namespace}); err != nil {
		return nil, err
	}
	return list.Items, nil
}
