package framework

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/holdfast-dev/holdfast/internal/policy"
)

// cluster-autoscaler's timings in the tests, short so that a scale-down takes a minute
// or two. The operators the tests start are told the same (Cluster.Settings).
const (
	// CAUnneededTime is --scale-down-unneeded-time: how long a node stays underutilised
	// before cluster-autoscaler removes it.
	CAUnneededTime = 30 * time.Second
	// CARecheck is --unremovable-node-recheck-timeout: how long cluster-autoscaler leaves
	// a node it found unremovable (a budget allowed no eviction) before it looks again.
	CARecheck = time.Minute
	// CANodeGroupLabel is the label that names a node's node group
	// (hack/cluster-autoscaler/kwok-provider.yaml).
	CANodeGroupLabel = "kwok-nodegroup"
	// caNamespace holds cluster-autoscaler's ConfigMaps.
	caNamespace = "cluster-autoscaler"
)

// clusterAutoscalerDir finds cluster-autoscaler's build: the folder
// HOLDFAST_CLUSTER_AUTOSCALER names, or the one hack/cluster-autoscaler/build.sh builds
// (or finds cached) and prints.
func clusterAutoscalerDir() (string, error) {
	if dir := os.Getenv("HOLDFAST_CLUSTER_AUTOSCALER"); dir != "" {
		return dir, nil
	}
	cmd := exec.Command(filepath.Join(RepoRoot(), "hack", "cluster-autoscaler", "build.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building cluster-autoscaler (hack/cluster-autoscaler/build.sh): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// startClusterAutoscaler applies the kwok provider's ConfigMaps and runs
// cluster-autoscaler out of cluster against the testbed until stop, which ends it with
// SIGTERM and waits for it. Its log is the testbed's logs/cluster-autoscaler.log.
func startClusterAutoscaler(c *Cluster) (stop func(), err error) {
	dir, err := clusterAutoscalerDir()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := applyKwokProvider(ctx, c.Client); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(dir, "cluster-autoscaler"),
		"--kubeconfig="+c.Kubeconfig, "--cloud-provider=kwok", "--namespace="+caNamespace, "--leader-elect=false",
		fmt.Sprintf("--address=127.0.0.1:%d", port),
		"--scan-interval=5s", "--scale-down-unneeded-time="+CAUnneededTime.String(),
		"--unremovable-node-recheck-timeout="+CARecheck.String(),
		"--scale-down-delay-after-add=30s", "--scale-down-delay-after-delete=0s", "--scale-down-delay-after-failure=30s",
		"--max-graceful-termination-sec=30", "--enforce-node-group-min-size=true", "--v=2")
	// The kwok provider reads the kubeconfig and its namespace from the environment.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig, "POD_NAMESPACE="+caNamespace, "KWOK_PROVIDER_MODE=local")
	stop, err = startPeer(ctx, c, "cluster-autoscaler", cmd, fmt.Sprintf("http://127.0.0.1:%d/health-check", port))
	if err != nil {
		return nil, err
	}
	c.Settings.Autoscalers = policy.Autoscalers{NodeGroupLabel: CANodeGroupLabel, UnneededTime: CAUnneededTime, Recheck: CARecheck}
	return stop, nil
}

// applyKwokProvider creates caNamespace and the ConfigMaps of
// hack/cluster-autoscaler/kwok-provider.yaml in it.
func applyKwokProvider(ctx context.Context, c client.Client) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: caNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", caNamespace, err)
	}
	file := filepath.Join(RepoRoot(), "hack", "cluster-autoscaler", "kwok-provider.yaml")
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		cm := &corev1.ConfigMap{}
		if err := dec.Decode(cm); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("decoding %s: %w", file, err)
		}
		cm.Namespace = caNamespace
		if err := c.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ConfigMap %s/%s: %w", caNamespace, cm.Name, err)
		}
	}
}
