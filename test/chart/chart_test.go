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
		// Helm installs into --namespace instead of making holdfast-system; the drain
		// slots' namespace the chart makes as config/rbac does.
		if u.GetKind() != "Namespace" || u.GetName() != "holdfast-system" {
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
		"an unknown log format":                {args: []string{"--set", "logFormat=yaml"}, refused: "/logFormat"},
		"no requests a second":                 {args: []string{"--set", "kubeAPI.qps=0"}, refused: "/kubeAPI/qps"},
		"a digest that is not one":             {args: []string{"--set", "image.digest=latest"}, refused: "/image/digest"},
		// Strict values: a misspelt key is refused rather than silently ignored.
		"an unknown value":                     {args: []string{"--set", "replica=3"}, refused: "additional properties 'replica' not allowed"},
		"an unknown monitoring value":          {args: []string{"--set", "monitoring.enable=true"}, refused: "at '/monitoring': additional properties 'enable'"},
		"an extra argument that is not a flag": {args: []string{"--set", "extraArgs[0]=debug"}, refused: "/extraArgs/0"},
		"a volume mount without a path":        {args: []string{"--set", "volumeMounts[0].name=ca"}, refused: "/volumeMounts/0"},
		"an unknown crds value":                {args: []string{"--set", "crds.keep=false"}, refused: "additional properties 'keep'"},
		// The drain slots' Role next to the leader Lease would let
		// whoever drains take the operator's leadership.
		"drain slots in the release's namespace":  {args: []string{"--namespace", "holdfast-system", "--set", "drainerRole.slotNamespace=holdfast-system"}, refused: "must not be the release's namespace"},
		"drain slots in a namespace of their own": {args: []string{"--namespace", "holdfast-system", "--set", "drainerRole.slotNamespace=drains"}},
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
logFormat: json
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
crds: {install: false}
extraArgs: [--zap-stacktrace-level=panic]
env: [{name: GOMEMLIMIT, value: 200MiB}, {name: HTTPS_PROXY, value: "http://proxy:3128"}]
envFrom: [{secretRef: {name: proxy}}]
volumes: [{name: ca, configMap: {name: ca-bundle}}]
volumeMounts: [{name: ca, mountPath: /etc/ssl/certs, readOnly: true}]
podSecurityContext: {runAsNonRoot: true, runAsUser: 65532}
securityContext: {allowPrivilegeEscalation: null}
topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := render(t, "-f", values)
	if _, ok := objs["ServiceAccount/platform-operator"]; ok {
		t.Error("serviceAccount.create=false still made a ServiceAccount")
	}
	if hasKind(objs, "CustomResourceDefinition") {
		t.Error("crds.install=false still rendered the CRDs")
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
		"args":               []any{"operator", "--leader-elect=false", "--metrics-bind-address=:8443", "--metrics-secure=false", "--health-probe-bind-address=:8081", "--log-level=debug", "--logging-format=json", "--kube-api-qps=20", "--kube-api-burst=40", "--zap-stacktrace-level=panic"},
		"priorityClassName":  nil,
		"nodeSelector":       map[string]any{"kubernetes.io/os": "linux"},
		"tolerations":        []any{map[string]any{"key": "dedicated", "operator": "Exists"}},
		"affinity":           true,
		// A GOMEMLIMIT of env's replaces the one that follows the memory limit.
		"env":          []any{map[string]any{"name": "GOMEMLIMIT", "value": "200MiB"}, map[string]any{"name": "HTTPS_PROXY", "value": "http://proxy:3128"}},
		"envFrom":      []any{map[string]any{"secretRef": map[string]any{"name": "proxy"}}},
		"volumes":      []any{map[string]any{"name": "ca", "configMap": map[string]any{"name": "ca-bundle"}}},
		"volumeMounts": []any{map[string]any{"name": "ca", "mountPath": "/etc/ssl/certs", "readOnly": true}},
		// Helm merges a map value into the default: null removes a key.
		"podSecurityContext": map[string]any{"runAsNonRoot": true, "runAsUser": float64(65532), "seccompProfile": map[string]any{"type": "RuntimeDefault"}},
		"securityContext":    map[string]any{"readOnlyRootFilesystem": true, "capabilities": map[string]any{"drop": []any{"ALL"}}},
		// A constraint without a labelSelector selects the operator's pods.
		"topologySpreadConstraints": []any{map[string]any{"maxSkew": float64(1), "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
			"labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "holdfast", "app.kubernetes.io/instance": "holdfast", "app.kubernetes.io/component": "operator"}}}},
	}
	spec := pod["spec"].(map[string]any)
	container := spec["containers"].([]any)[0].(map[string]any)
	got := map[string]any{
		"metadata":                  pod["metadata"],
		"serviceAccountName":        spec["serviceAccountName"],
		"image":                     container["image"],
		"args":                      container["args"],
		"priorityClassName":         spec["priorityClassName"],
		"nodeSelector":              spec["nodeSelector"],
		"tolerations":               spec["tolerations"],
		"affinity":                  spec["affinity"] != nil,
		"env":                       container["env"],
		"envFrom":                   container["envFrom"],
		"volumes":                   spec["volumes"],
		"volumeMounts":              container["volumeMounts"],
		"podSecurityContext":        spec["securityContext"],
		"securityContext":           container["securityContext"],
		"topologySpreadConstraints": spec["topologySpreadConstraints"],
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

// The CRDs are the release's templates, so that helm upgrade upgrades them, and Helm
// keeps them on uninstall: deleting a CRD would delete every policy in the cluster.
func TestCRDs(t *testing.T) {
	objs := render(t)
	crds := 0
	for key, u := range objs {
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crds++
		if got := u.GetAnnotations()["helm.sh/resource-policy"]; got != "keep" {
			t.Errorf("%s: helm.sh/resource-policy %q, want keep", key, got)
		}
	}
	if crds != 3 {
		t.Errorf("%d CRDs rendered without --include-crds, want 3", crds)
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

// The README's values table names every value the schema accepts.
func TestReadmeListsValues(t *testing.T) {
	var schema struct {
		Properties map[string]struct {
			Properties map[string]any `json:"properties"`
		} `json:"properties"`
	}
	data, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for key, p := range schema.Properties {
		names := []string{key}
		for sub := range p.Properties {
			names = append(names, key+"."+sub)
		}
		for _, name := range names {
			if !bytes.Contains(readme, []byte("| `"+name)) && !bytes.Contains(readme, []byte("/ `"+name)) && !bytes.Contains(readme, []byte("`"+name+"`")) {
				t.Errorf("charts/holdfast/README.md does not describe %s", name)
			}
		}
	}
}
