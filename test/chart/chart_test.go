// Package chart_test checks the Helm chart without a cluster: it lints, renders exactly
// config/default's objects with its default values, honours every documented value,
// refuses what its schema refuses, and says the same release as VERSION and
// config/default. helm is the one pinned in hack/tools/go.mod.
package chart_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/holdfast-dev/holdfast/config"
)

const repo = "../.."

var chartDir = filepath.Join(repo, "charts", "holdfast")

// helm runs the pinned helm and returns its standard output, or its error with stderr.
func helm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"tool", "-modfile=" + filepath.Join(repo, "hack", "tools", "go.mod"), "helm"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, errors.New(err.Error() + ": " + stderr.String())
	}
	return out, nil
}

// render templates the chart as release holdfast in holdfast-system with extra args.
func render(t *testing.T, args ...string) map[string]*unstructured.Unstructured {
	t.Helper()
	out, err := helm(t, append([]string{"template", "holdfast", chartDir, "--namespace", "holdfast-system"}, args...)...)
	if err != nil {
		t.Fatalf("helm template %v: %v", args, err)
	}
	return byKey(t, out)
}

func byKey(t *testing.T, data []byte) map[string]*unstructured.Unstructured {
	t.Helper()
	list, err := config.Decode("helm template", data)
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]*unstructured.Unstructured{}
	for _, u := range list {
		objs[u.GetKind()+"/"+u.GetName()] = u
	}
	return objs
}

func TestLint(t *testing.T) {
	for name, args := range map[string][]string{
		"defaults":   nil,
		"monitoring": {"--set", "monitoring.enabled=true"},
	} {
		t.Run(name, func(t *testing.T) {
			if out, err := helm(t, append([]string{"lint", "--strict", chartDir}, args...)...); err != nil {
				t.Errorf("helm lint: %v\n%s", err, out)
			}
		})
	}
}

// With its default values the chart holds config/default's objects with the same specs;
// only metadata (Helm's labels) differs. The e2e install test applies both.
func TestDefaultsAreConfigDefault(t *testing.T) {
	objs, err := config.Objects()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{}
	for _, u := range objs {
		if u.GetKind() != "Namespace" { // helm installs into --namespace instead
			want[u.GetKind()+"/"+u.GetName()] = specOf(u)
		}
	}
	got := map[string]any{}
	for key, u := range render(t, "--include-crds") {
		got[key] = specOf(u)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the chart differs from config/default (-kustomization +chart):\n%s", diff)
	}
}

func specOf(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy().Object
	delete(c, "metadata")
	return c
}

func TestSchema(t *testing.T) {
	for name, tc := range map[string]struct {
		args    []string
		refused string
	}{
		"two replicas without leader election": {args: []string{"--set", "leaderElection=false"}, refused: "/replicas"},
		"one replica without leader election":  {args: []string{"--set", "leaderElection=false", "--set", "replicas=1"}},
		"three replicas with leader election":  {args: []string{"--set", "replicas=3"}},
		"an unknown log level":                 {args: []string{"--set", "logLevel=verbose"}, refused: "/logLevel"},
		"no requests a second":                 {args: []string{"--set", "kubeAPI.qps=0"}, refused: "/kubeAPI/qps"},
		"a digest that is not one":             {args: []string{"--set", "image.digest=latest"}, refused: "/image/digest"},
		// Strict values: a misspelt key is refused rather than silently ignored.
		"an unknown value":            {args: []string{"--set", "replica=3"}, refused: "additional properties 'replica' not allowed"},
		"an unknown monitoring value": {args: []string{"--set", "monitoring.enable=true"}, refused: "at '/monitoring': additional properties 'enable'"},
		// A parent chart's global values reach every subchart.
		"global values": {args: []string{"--set", "global.team=platform"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := helm(t, append([]string{"template", "holdfast", chartDir}, tc.args...)...)
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Errorf("got %v, want a refusal at %s", err, tc.refused)
			}
		})
	}
}

func TestValues(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(`
fullnameOverride: hf
image: {digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
replicas: 1
leaderElection: false
logLevel: debug
kubeAPI: {qps: 20, burst: 40}
serviceAccount: {create: false, name: platform-operator}
podAnnotations: {example.com/team: platform}
podLabels: {team: platform}
priorityClassName: ""
affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [system]}]}]}}}
nodeSelector: {kubernetes.io/os: linux}
tolerations: [{key: dedicated, operator: Exists}]
metrics: {secure: false}
monitoring: {prometheusServiceAccount: {name: prometheus, namespace: monitoring}}
drainerRole: {create: false}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := render(t, "-f", values)
	if _, ok := objs["ServiceAccount/platform-operator"]; ok {
		t.Error("serviceAccount.create=false still made a ServiceAccount")
	}
	for _, key := range []string{"ClusterRole/hf-drainer", "Role/hf-drainer"} {
		if _, ok := objs[key]; ok {
			t.Errorf("drainerRole.create=false still made %s", key)
		}
	}
	d, ok := objs["Deployment/hf-operator"]
	if !ok {
		t.Fatalf("no Deployment/hf-operator in %v", keys(objs))
	}
	pod, _, _ := unstructured.NestedMap(d.Object, "spec", "template")
	want := map[string]any{
		"metadata": map[string]any{
			"labels":      map[string]any{"app.kubernetes.io/name": "holdfast", "app.kubernetes.io/instance": "holdfast", "app.kubernetes.io/component": "operator", "team": "platform"},
			"annotations": map[string]any{"example.com/team": "platform"},
		},
		"serviceAccountName": "platform-operator",
		"image":              "ghcr.io/holdfast-dev/holdfast@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"args":               []any{"operator", "--leader-elect=false", "--metrics-bind-address=:8443", "--metrics-secure=false", "--health-probe-bind-address=:8081", "--log-level=debug", "--kube-api-qps=20", "--kube-api-burst=40"},
		"priorityClassName":  nil,
		"nodeSelector":       map[string]any{"kubernetes.io/os": "linux"},
		"tolerations":        []any{map[string]any{"key": "dedicated", "operator": "Exists"}},
		"affinity":           true,
		// GOMEMLIMIT follows the memory limit, whatever it is set to.
		"env": []any{map[string]any{"name": "GOMEMLIMIT", "valueFrom": map[string]any{"resourceFieldRef": map[string]any{"resource": "limits.memory"}}}},
	}
	spec := pod["spec"].(map[string]any)
	container := spec["containers"].([]any)[0].(map[string]any)
	got := map[string]any{
		"metadata":           pod["metadata"],
		"serviceAccountName": spec["serviceAccountName"],
		"image":              container["image"],
		"args":               container["args"],
		"priorityClassName":  spec["priorityClassName"],
		"nodeSelector":       spec["nodeSelector"],
		"tolerations":        spec["tolerations"],
		"affinity":           spec["affinity"] != nil,
		"env":                container["env"],
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the Deployment's pod (-want +got):\n%s", diff)
	}
	binding, ok := objs["ClusterRoleBinding/hf-metrics-reader"]
	if !ok {
		t.Fatalf("monitoring.prometheusServiceAccount bound nothing: %v", keys(objs))
	}
	if subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects"); !cmp.Equal(subjects, []any{map[string]any{"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}}) {
		t.Errorf("metrics-reader subjects: %v", subjects)
	}
	for key, u := range objs {
		for _, l := range []string{"helm.sh/chart", "app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by"} {
			if u.GetLabels()[l] == "" {
				t.Errorf("%s has no label %s", key, l)
			}
		}
	}
}

// A second release in another namespace names its cluster-wide objects apart.
func TestReleaseNames(t *testing.T) {
	out, err := helm(t, "template", "staging", chartDir, "--namespace", "staging")
	if err != nil {
		t.Fatal(err)
	}
	objs := byKey(t, out)
	for _, key := range []string{"ClusterRole/staging-holdfast-operator", "ClusterRoleBinding/staging-holdfast-operator", "ClusterRole/staging-holdfast-metrics-reader", "Deployment/staging-holdfast-operator", "ServiceAccount/staging-holdfast-operator"} {
		if _, ok := objs[key]; !ok {
			t.Errorf("no %s in %v", key, keys(objs))
		}
	}
}

func TestMonitoring(t *testing.T) {
	if objs := render(t); hasKind(objs, "ServiceMonitor") || hasKind(objs, "PrometheusRule") {
		t.Error("monitoring objects rendered with monitoring.enabled=false")
	}
	objs := render(t, "--set", "monitoring.enabled=true", "--set", "monitoring.labels.release=kube-prometheus-stack")
	for _, key := range []string{"ServiceMonitor/holdfast-operator", "PrometheusRule/holdfast", "ConfigMap/holdfast-dashboard"} {
		u, ok := objs[key]
		if !ok {
			t.Fatalf("no %s in %v", key, keys(objs))
		}
		if key != "ConfigMap/holdfast-dashboard" && u.GetLabels()["release"] != "kube-prometheus-stack" {
			t.Errorf("%s lacks monitoring.labels: %v", key, u.GetLabels())
		}
	}
	// The chart's rules and dashboard are config/monitoring's.
	var cr unstructured.Unstructured
	data, err := os.ReadFile(filepath.Join(repo, "config", "monitoring", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &cr.Object); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cr.Object["spec"], objs["PrometheusRule/holdfast"].Object["spec"]); diff != "" {
		t.Errorf("the chart's rules differ from config/monitoring's (-config +chart):\n%s", diff)
	}
	// So are the ServiceMonitor and the identity it scrapes with, which hack/monitoring
	// scrapes with.
	for _, file := range []string{"servicemonitor.yaml", "scraper.yaml"} {
		data, err := os.ReadFile(filepath.Join(repo, "config", "monitoring", file))
		if err != nil {
			t.Fatal(err)
		}
		want, err := config.Decode(file, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			key := w.GetKind() + "/" + w.GetName()
			got, ok := objs[key]
			if !ok {
				t.Errorf("the chart has no %s of config/monitoring/%s", key, file)
				continue
			}
			if diff := cmp.Diff(specOf(w), specOf(got)); diff != "" {
				t.Errorf("the chart's %s differs from config/monitoring's (-config +chart):\n%s", key, diff)
			}
			if diff := cmp.Diff(w.GetAnnotations(), got.GetAnnotations()); diff != "" {
				t.Errorf("the chart's %s has other annotations than config/monitoring's (-config +chart):\n%s", key, diff)
			}
		}
	}
	// Plain HTTP needs no identity.
	plain := render(t, "--set", "monitoring.enabled=true", "--set", "metrics.secure=false")
	if _, ok := plain["Secret/holdfast-prometheus-token"]; ok {
		t.Error("metrics.secure=false still made a token for the ServiceMonitor")
	}
	endpoints, _, _ := unstructured.NestedSlice(plain["ServiceMonitor/holdfast-operator"].Object, "spec", "endpoints")
	if want := []any{map[string]any{"port": "metrics", "path": "/metrics", "interval": "30s", "honorLabels": true}}; !cmp.Equal(want, endpoints) {
		t.Errorf("the plain HTTP ServiceMonitor's endpoints %v, want %v", endpoints, want)
	}
	dashboard, err := os.ReadFile(filepath.Join(repo, "config", "monitoring", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := unstructured.NestedString(objs["ConfigMap/holdfast-dashboard"].Object, "data", "holdfast.json")
	if strings.TrimSpace(got) != strings.TrimSpace(string(dashboard)) {
		t.Error("the chart's dashboard differs from config/monitoring/dashboard.json")
	}
}

// VERSION is the release: the chart's version and appVersion and config/default's image
// say it too (make bump changes all three).
func TestVersionsAgree(t *testing.T) {
	version, err := os.ReadFile(filepath.Join(repo, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	release := strings.TrimSpace(string(version))
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	data, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	objs, err := config.Objects()
	if err != nil {
		t.Fatal(err)
	}
	var image string
	for _, u := range objs {
		if u.GetKind() == "Deployment" {
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			image, _, _ = unstructured.NestedString(containers[0].(map[string]any), "image")
		}
	}
	got := map[string]string{"chart version": "v" + chart.Version, "chart appVersion": chart.AppVersion, "config/default image": image}
	want := map[string]string{"chart version": release, "chart appVersion": release, "config/default image": "ghcr.io/holdfast-dev/holdfast:" + release}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("VERSION says %s (-want +got):\n%s", release, diff)
	}
}

func hasKind(objs map[string]*unstructured.Unstructured, kind string) bool {
	for key := range objs {
		if strings.HasPrefix(key, kind+"/") {
			return true
		}
	}
	return false
}

func keys(objs map[string]*unstructured.Unstructured) []string {
	var ks []string
	for k := range objs {
		ks = append(ks, k)
	}
	return ks
}
