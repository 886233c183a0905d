//go:build e2e

// Package upgrade_test checks that helm upgrade upgrades holdfast's CRDs, on a testbed
// of its own: the chart owns the CRDs here, which the install package's tests create
// with holdfast install and kubectl instead.
package upgrade_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	holdfastv1alpha1 "github.com/holdfast-dev/holdfast/api/v1alpha1"
	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Nodes: 2, Zones: 1})
}

const (
	crdName = "disruptionpolicies.holdfast.dev"
	// newField is the field the older release's CRD lacks.
	newField = "minReadySeconds"
)

// An older release's CRD lacks a field; helm upgrade to the chart as a release packages
// it serves the new field, and helm uninstall keeps the CRDs (and so every policy).
func TestCRDUpgrade(t *testing.T) {
	f := framework.New(t)
	release := "holdfast"
	older := olderChart(f)
	if out, err := f.Helm(f.Ctx, "install", release, older, "--namespace", f.Namespace, "--set", "replicas=1", "--wait", "--timeout", "2m"); err != nil {
		t.Fatalf("helm install of the older chart: %v\n%s", err, out)
	}
	if hasField(f) {
		t.Fatalf("the older chart's CRD %s already has spec.%s", crdName, newField)
	}
	// The older schema prunes the new field from what is stored.
	c := f.HoldfastClient()
	policy := func(name string) *holdfastv1alpha1.DisruptionPolicy {
		return &holdfastv1alpha1.DisruptionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace},
			Spec: holdfastv1alpha1.DisruptionPolicySpec{
				Selector:        metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				MaxUnavailable:  ptr.To(intstr.FromInt32(1)),
				MinReadySeconds: ptr.To[int32](30),
			},
		}
	}
	if got := createAndRead(f, c, policy("before")); got.Spec.MinReadySeconds != nil {
		t.Fatalf("the older CRD stored spec.%s = %d, want it pruned", newField, *got.Spec.MinReadySeconds)
	}

	if out, err := f.Helm(f.Ctx, "upgrade", release, f.Chart(), "--namespace", f.Namespace, "--set", "replicas=1", "--wait", "--timeout", "2m"); err != nil {
		t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	f.Eventually(time.Minute, "the upgraded CRD to have spec."+newField, func(context.Context) (bool, error) {
		return hasField(f), nil
	})
	// The API server serves a CRD's new schema a moment after storing it.
	tries := 0
	f.Eventually(time.Minute, "a policy to keep spec."+newField, func(ctx context.Context) (bool, error) {
		tries++
		got := createAndRead(f, c, policy(fmt.Sprintf("after-%d", tries)))
		return got.Spec.MinReadySeconds != nil && *got.Spec.MinReadySeconds == 30, nil
	})

	if out, err := f.Helm(f.Ctx, "uninstall", release, "--namespace", f.Namespace, "--wait"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	if crd := getCRD(f); crd.GetDeletionTimestamp() != nil {
		t.Errorf("the CRD is being deleted after helm uninstall, want it kept")
	}
}

// olderChart unpacks the chart under test and takes newField out of its
// DisruptionPolicy CRD: the chart of a release before the field was added.
func olderChart(f *framework.Framework) string {
	f.T.Helper()
	dir := f.T.TempDir()
	if out, err := exec.CommandContext(f.Ctx, "tar", "-xzf", f.Chart(), "-C", dir).CombinedOutput(); err != nil {
		f.T.Fatalf("unpacking the chart: %v\n%s", err, out)
	}
	var files []string
	err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if filepath.Base(path) == "holdfast.dev_disruptionpolicies.yaml" {
			files = append(files, path)
		}
		return err
	})
	if err != nil || len(files) != 1 {
		f.T.Fatalf("the chart's DisruptionPolicy CRD: %v %v", files, err)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		f.T.Fatal(err)
	}
	var crd unstructured.Unstructured
	if err := yaml.Unmarshal(data, &crd.Object); err != nil {
		f.T.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		unstructured.RemoveNestedField(v.(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "properties", newField)
	}
	if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
		f.T.Fatal(err)
	}
	data, err = yaml.Marshal(crd.Object)
	if err != nil {
		f.T.Fatal(err)
	}
	// The chart's template edits the file's metadata as text: keep its leading "---".
	if err := os.WriteFile(files[0], append([]byte("---\n"), data...), 0o644); err != nil {
		f.T.Fatal(err)
	}
	return filepath.Join(dir, "holdfast")
}

// hasField reports whether the served DisruptionPolicy schema has spec.newField.
func hasField(f *framework.Framework) bool {
	f.T.Helper()
	versions, _, _ := unstructured.NestedSlice(getCRD(f).Object, "spec", "versions")
	if len(versions) != 1 {
		f.T.Fatalf("CRD %s has %d versions, want v1alpha1", crdName, len(versions))
	}
	_, ok, _ := unstructured.NestedMap(versions[0].(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "properties", newField)
	return ok
}

func getCRD(f *framework.Framework) *unstructured.Unstructured {
	f.T.Helper()
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := f.Client.Get(f.Ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
		f.T.Fatalf("CRD %s: %v", crdName, err)
	}
	return crd
}

func createAndRead(f *framework.Framework, c client.Client, p *holdfastv1alpha1.DisruptionPolicy) *holdfastv1alpha1.DisruptionPolicy {
	f.T.Helper()
	if err := c.Create(f.Ctx, p); err != nil {
		f.T.Fatalf("creating DisruptionPolicy %s: %v", p.Name, err)
	}
	var got holdfastv1alpha1.DisruptionPolicy
	if err := c.Get(f.Ctx, client.ObjectKeyFromObject(p), &got); err != nil {
		f.T.Fatal(err)
	}
	return &got
}

// CRDs that holdfast install or kustomize made are refused by helm install until they
// are labelled and annotated for the release, as docs/install.md says ("Moving the CRDs
// to Helm"); then the release owns them.
func TestAdoptCRDs(t *testing.T) {
	f := framework.New(t)
	kubectl, err := framework.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.CommandContext(f.Ctx, kubectl, append([]string{"--kubeconfig", f.Kubeconfig}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
	run("apply", "--server-side", "--force-conflicts", "-k", filepath.Join(framework.RepoRoot(), "config", "crd"))
	release := "holdfast"
	t.Cleanup(func() { _, _ = f.Helm(context.Background(), "uninstall", release, "--namespace", f.Namespace) })
	install := func() error {
		_, err := f.Helm(f.Ctx, "upgrade", "--install", release, f.Chart(), "--namespace", f.Namespace, "--set", "replicas=1", "--wait", "--timeout", "2m")
		return err
	}
	if err := install(); err == nil || !strings.Contains(err.Error(), "cannot be imported into the current release") {
		t.Fatalf("helm install over CRDs it did not make: %v, want a refusal to import them", err)
	}
	for _, crd := range []string{"disruptionpolicies", "clusterdisruptionpolicies", "nodecompanions"} {
		run("label", "crd", crd+".holdfast.dev", "app.kubernetes.io/managed-by=Helm", "--overwrite")
		run("annotate", "crd", crd+".holdfast.dev", "--overwrite", "meta.helm.sh/release-name="+release, "meta.helm.sh/release-namespace="+f.Namespace)
	}
	if err := install(); err != nil {
		t.Fatalf("helm install after handing the CRDs to the release: %v", err)
	}
	if got := getCRD(f).GetAnnotations()["helm.sh/resource-policy"]; got != "keep" {
		t.Errorf("the adopted CRD's helm.sh/resource-policy is %q, want keep", got)
	}
}
