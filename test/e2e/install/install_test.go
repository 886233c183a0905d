//go:build e2e

// Package install_test checks the install story on the testbed: `holdfast install`,
// the kustomization and the Helm chart are all accepted by a real API server, and the
// chart says what the kustomization says.
package install_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/holdfast-dev/holdfast/config"
	"github.com/holdfast-dev/holdfast/internal/cli"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

const repo = "../../.."

func TestMain(m *testing.M) {
	// The tests' own controller-runtime clients log through it.
	framework.Main(m, framework.Options{Nodes: 3, Zones: 3})
}

// holdfast install applies every object and waits until the operator Deployment's pods
// (simulated by kwok) are Available: the API server accepted the whole pod spec, probes,
// security context and all. An install of manifests without one of the objects prunes
// it, and the next install puts it back.
func TestInstall(t *testing.T) {
	f := framework.New(t)
	out, err := install(f)
	if err != nil {
		t.Fatalf("holdfast install: %v\n%s", err, out)
	}
	t.Logf("holdfast install:\n%s", out)
	objs, err := config.Objects()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out, " applied\n"); got != len(objs) {
		t.Errorf("%d objects applied, want %d", got, len(objs))
	}
	if !strings.HasSuffix(out, "deployment holdfast-system/holdfast-operator Available: 2 of 2 replicas\n") {
		t.Errorf("install did not end saying the operator is Available:\n%s", out)
	}
	d, err := f.Clientset.AppsV1().Deployments("holdfast-system").Get(f.Ctx, "holdfast-operator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.AvailableReplicas != 2 {
		t.Errorf("install returned with %d replicas of the operator available, want 2", d.Status.AvailableReplicas)
	}

	// The manifests of --dry-run, without the metrics Service, as an edited or a newer
	// release's manifests would be.
	manifests, err := install(f, "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for doc := range strings.SplitSeq(manifests, "---\n") {
		if !strings.Contains(doc, "name: holdfast-operator-metrics\n") {
			kept = append(kept, doc)
		}
	}
	trimmed := filepath.Join(t.TempDir(), "holdfast.yaml")
	if err := os.WriteFile(trimmed, []byte(strings.Join(kept, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err = install(f, "-f", trimmed); err != nil {
		t.Fatalf("holdfast install -f: %v\n%s", err, out)
	}
	if !strings.Contains(out, "services/holdfast-operator-metrics pruned\n") {
		t.Errorf("install -f without the metrics Service did not say it pruned it:\n%s", out)
	}
	_, err = f.Clientset.CoreV1().Services("holdfast-system").Get(f.Ctx, "holdfast-operator-metrics", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the metrics Service after an install without it: %v, want not found", err)
	}
	if strings.Count(out, " pruned\n") != 1 {
		t.Errorf("install -f pruned more than the metrics Service:\n%s", out)
	}

	// A second install of the whole is an upgrade: it puts the Service back, prunes nothing.
	if out, err = install(f); err != nil {
		t.Fatalf("holdfast install again: %v\n%s", err, out)
	}
	if strings.Contains(out, " pruned\n") {
		t.Errorf("an install of the same manifests pruned:\n%s", out)
	}
	if _, err := f.Clientset.CoreV1().Services("holdfast-system").Get(f.Ctx, "holdfast-operator-metrics", metav1.GetOptions{}); err != nil {
		t.Errorf("the metrics Service after installing it again: %v", err)
	}
}

// install runs holdfast install against the testbed and returns its output.
func install(f *framework.Framework, args ...string) (string, error) {
	return runCommand(f, cli.NewInstallCommand, args...)
}

// runCommand runs one of holdfast's commands against the testbed.
func runCommand(f *framework.Framework, command func(genericiooptions.IOStreams, *genericclioptions.ConfigFlags) *cobra.Command, args ...string) (string, error) {
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &f.Kubeconfig
	var out bytes.Buffer
	cmd := command(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, flags)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(f.Ctx)
	return out.String(), err
}

// The kustomization applies as docs/install.md documents it.
func TestKustomization(t *testing.T) {
	f := framework.New(t)
	kubectl, err := framework.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(f.Ctx, kubectl, "--kubeconfig", f.Kubeconfig, "apply", "--server-side", "--force-conflicts", "-k", filepath.Join(repo, "config", "default"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply -k config/default: %v\n%s", err, out)
	}
}

// The chart renders with helm, applies to the testbed in a namespace of its own, and
// holds the same objects with the same specs as config/default.
func TestChart(t *testing.T) {
	f := framework.New(t)
	rendered := helmTemplate(f, "--include-crds")
	chart := decode(t, rendered)
	apply(f, rendered, "--force-conflicts")
	f.Eventually(time.Minute, "the chart's operator Deployment Ready", func(ctx context.Context) (bool, error) {
		d, err := f.Clientset.AppsV1().Deployments(f.Namespace).Get(ctx, "holdfast-operator", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return d.Status.ReadyReplicas == *d.Spec.Replicas, nil
	})

	objs, err := config.Objects()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{}
	for _, u := range objs {
		if u.GetKind() != "Namespace" { // helm installs into --namespace instead
			want[u.GetKind()+"/"+u.GetName()] = content(u, "holdfast-system")
		}
	}
	got := map[string]any{}
	for _, u := range chart {
		// Issue 30 item 12: the drain slots' Role is never where the leader Lease is.
		if u.GetKind() == "Role" && strings.HasSuffix(u.GetName(), "-drainer") && u.GetNamespace() == f.Namespace {
			t.Errorf("the chart's Role %s is in the release's namespace, with the operator's leader Lease", u.GetName())
		}
		if u.GetKind() != "Namespace" { // the drain slots' own, as in config/rbac
			got[u.GetKind()+"/"+u.GetName()] = content(u, f.Namespace)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the chart differs from config/default (-kustomization +chart):\n%s", diff)
	}
}

// The chart's scaleTargets value grants the operator exactly what a DisruptionPolicy's
// scaleTargets need of the kinds it names (list them, read their scale) and nothing
// else, in rules the API server accepts.
func TestChartScaleTargets(t *testing.T) {
	f := framework.New(t)
	rendered := helmTemplate(f, "--show-only", "templates/clusterrole.yaml",
		"--set", "scaleTargets[0].apiGroup=databases.example.com", "--set", "scaleTargets[0].resources={postgresclusters,mysqlclusters}")
	objs := decode(t, rendered)
	if len(objs) != 1 {
		t.Fatalf("%d objects rendered, want the ClusterRole", len(objs))
	}
	rules, _, _ := unstructured.NestedSlice(objs[0].Object, "rules")
	want := []any{
		map[string]any{"apiGroups": []any{"databases.example.com"}, "resources": []any{"postgresclusters", "mysqlclusters"}, "verbs": []any{"get", "list", "watch"}},
		map[string]any{"apiGroups": []any{"databases.example.com"}, "resources": []any{"postgresclusters/scale", "mysqlclusters/scale"}, "verbs": []any{"get"}},
	}
	if len(rules) < len(want) {
		t.Fatalf("%d rules rendered", len(rules))
	}
	if diff := cmp.Diff(want, rules[len(rules)-len(want):]); diff != "" {
		t.Errorf("the scaleTargets rules (-want +got):\n%s", diff)
	}
	defaults, _, _ := unstructured.NestedSlice(decode(t, helmTemplate(f, "--show-only", "templates/clusterrole.yaml"))[0].Object, "rules")
	if diff := cmp.Diff(defaults, rules[:len(rules)-len(want)]); diff != "" {
		t.Errorf("scaleTargets changed the other rules (-without +with):\n%s", diff)
	}
	// TestInstall may own the ClusterRole already; a dry run takes it over and writes nothing.
	apply(f, rendered, "--force-conflicts", "--dry-run=server")
}

// apply applies rendered objects to the testbed with kubectl's server-side apply.
func apply(f *framework.Framework, rendered []byte, args ...string) {
	f.T.Helper()
	kubectl, err := framework.Kubectl()
	if err != nil {
		f.T.Fatal(err)
	}
	cmd := exec.CommandContext(f.Ctx, kubectl, append([]string{"--kubeconfig", f.Kubeconfig, "apply", "--server-side", "-f", "-"}, args...)...)
	cmd.Stdin = bytes.NewReader(rendered)
	if out, err := cmd.CombinedOutput(); err != nil {
		f.T.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

// helmTemplate renders the packaged chart into the test's namespace with helm.
func helmTemplate(f *framework.Framework, args ...string) []byte {
	f.T.Helper()
	return helmTemplateRelease(f, "holdfast", args...)
}

// helmTemplateRelease renders the packaged chart as release, for the testbed's
// Kubernetes version as helm install reads it from the cluster (helm built with go tool
// assumes 1.20 otherwise, which the chart's kubeVersion refuses).
func helmTemplateRelease(f *framework.Framework, release string, args ...string) []byte {
	f.T.Helper()
	v, err := f.Clientset.Discovery().ServerVersion()
	if err != nil {
		f.T.Fatal(err)
	}
	rendered, err := f.Helm(f.Ctx, append([]string{"template", release, f.Chart(), "--namespace", f.Namespace, "--kube-version", v.GitVersion}, args...)...)
	if err != nil {
		f.T.Fatal(err)
	}
	return rendered
}

// content is what an object asks for, without the namespace and labels that differ by
// construction between the chart and the kustomization.
func content(u *unstructured.Unstructured, namespace string) map[string]any {
	c := u.DeepCopy().Object
	delete(c, "metadata")
	if subjects, ok := c["subjects"].([]any); ok {
		for _, s := range subjects {
			if s.(map[string]any)["namespace"] == namespace {
				s.(map[string]any)["namespace"] = "NAMESPACE"
			}
		}
	}
	return c
}

func decode(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	objs, err := config.Decode("helm template", data)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}
