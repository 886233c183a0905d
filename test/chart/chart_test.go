// Package chart_test checks the Helm chart without a cluster: it lints, renders exactly
// config/default's objects with its default values, honours every documented value,
// refuses what its schema refuses, and says the same release as VERSION and
// config/default. helm is the one pinned in hack/tools/go.mod.
package chart_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
// Its template and lint run at the oldest Kubernetes the chart accepts: helm built with
// go tool assumes 1.20 otherwise, which the chart's kubeVersion refuses.
func helm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	if len(args) > 0 && (args[0] == "template" || args[0] == "lint") {
		args = append([]string{args[0], "--kube-version", minKubeVersion(t)}, args[1:]...)
	}
	cmd := exec.Command("go", append([]string{"tool", "-modfile=" + filepath.Join(repo, "hack", "tools", "go.mod"), "helm"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, errors.New(err.Error() + ": " + stderr.String())
	}
	return out, nil
}

// chartYAML is what the tests read of Chart.yaml.
type chartYAML struct {
	Version     string `json:"version"`
	AppVersion  string `json:"appVersion"`
	KubeVersion string `json:"kubeVersion"`
}

func readChart(t *testing.T) chartYAML {
	t.Helper()
	var chart chartYAML
	data, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	return chart
}

func chartAppVersion(t *testing.T) string { return readChart(t).AppVersion }

// minKubeVersion is the lowest version the chart's kubeVersion (">=X.Y.Z-0") accepts.
func minKubeVersion(t *testing.T) string {
	t.Helper()
	kv := readChart(t).KubeVersion
	v, ok := strings.CutPrefix(kv, ">=")
	v, pre := strings.CutSuffix(v, "-0")
	if !ok || !pre {
		t.Fatalf("Chart.yaml: kubeVersion %q, want >=X.Y.Z-0 (the -0 lets pre-releases and providers' builds in)", kv)
	}
	return v
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
		"defaults":    nil,
		"monitoring":  {"--set", "monitoring.serviceMonitor.enabled=true", "--set", "monitoring.rules.enabled=true", "--set", "monitoring.dashboard.enabled=true"},
		"metrics tls": {"--set", "metrics.tls.certManager.enabled=true", "--set", "metrics.tls.certManager.issuerRef.name=ca", "--set", "monitoring.serviceMonitor.enabled=true"},
		"gitops":      {"--set-string", "crds.annotations.argocd\\.argoproj\\.io/sync-wave=-1", "--set", "drainerRole.createSlotNamespace=false", "--set", "priorityClassQuota.enabled=true"},
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
		"an unknown value":            {args: []string{"--set", "replica=3"}, refused: "additional properties 'replica' not allowed"},
		"an unknown monitoring value": {args: []string{"--set", "monitoring.enable=true"}, refused: "at '/monitoring': additional properties 'enable'"},
		// The one switch of before is refused, not ignored: each part has its own.
		"the old monitoring switch":            {args: []string{"--set", "monitoring.enabled=true"}, refused: "additional properties 'enabled'"},
		"a scrape interval that is not one":    {args: []string{"--set", "monitoring.serviceMonitor.interval=often"}, refused: "/monitoring/serviceMonitor/interval"},
		"a quota of no pods":                   {args: []string{"--set", "priorityClassQuota.enabled=true", "--set", "priorityClassQuota.pods=0"}, refused: "/priorityClassQuota/pods"},
		"a quota for no priority class":        {args: []string{"--set", "priorityClassQuota.enabled=true", "--set", "priorityClassName="}, refused: "priorityClassQuota.enabled needs priorityClassName"},
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
		// env comes after the memory limit; a GOMEMLIMIT there wins in the operator.
		"env": []any{
			map[string]any{"name": "HOLDFAST_MEMORY_LIMIT", "valueFrom": map[string]any{"resourceFieldRef": map[string]any{"resource": "limits.memory"}}},
			map[string]any{"name": "GOMEMLIMIT", "value": "200MiB"}, map[string]any{"name": "HTTPS_PROXY", "value": "http://proxy:3128"},
		},
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

// monitoringParts are the switches of the monitoring bundle, with the object each makes.
var monitoringParts = map[string]string{
	"monitoring.serviceMonitor.enabled": "ServiceMonitor/holdfast-operator",
	"monitoring.rules.enabled":          "PrometheusRule/holdfast",
	"monitoring.dashboard.enabled":      "ConfigMap/holdfast-dashboard",
}

func TestMonitoring(t *testing.T) {
	if objs := render(t); hasKind(objs, "ServiceMonitor") || hasKind(objs, "PrometheusRule") || objs["ConfigMap/holdfast-dashboard"] != nil {
		t.Error("monitoring objects rendered by default")
	}
	// Each switch makes its own part and no other.
	for value, key := range monitoringParts {
		objs := render(t, "--set", value+"=true")
		for _, other := range monitoringParts {
			if _, got := objs[other]; got != (other == key) {
				t.Errorf("%s=true: %s rendered %v", value, other, got)
			}
		}
	}
	all := []string{"--set", "monitoring.labels.release=kube-prometheus-stack"}
	for value := range monitoringParts {
		all = append(all, "--set", value+"=true")
	}
	objs := render(t, all...)
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
	// Each runbook link points into the docs of the chart's release rather than main.
	data = bytes.ReplaceAll(data, []byte("/blob/main/docs/"), []byte("/blob/"+chartAppVersion(t)+"/docs/"))
	if err := yaml.Unmarshal(data, &cr.Object); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cr.Object["spec"], objs["PrometheusRule/holdfast"].Object["spec"]); diff != "" {
		t.Errorf("the chart's rules differ from config/monitoring's with links to the release (-config +chart):\n%s", diff)
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
	plain := render(t, "--set", "monitoring.serviceMonitor.enabled=true", "--set", "metrics.secure=false")
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
	chart := readChart(t)
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

// The chart never looks the cluster up: what helm template renders (and so every GitOps
// tool that renders with it) is what helm install applies. test/e2e/install compares
// the two on a cluster.
func TestNoLookup(t *testing.T) {
	lookupCall := regexp.MustCompile(`\blookup\s+("|\$|\.)`)
	templates, err := filepath.Glob(filepath.Join(chartDir, "templates", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range templates {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if lookupCall.Match(data) {
			t.Errorf("%s calls lookup: helm template would render it differently from helm install", path)
		}
	}
}

// The defaults for a cluster of several zones and the measured operator, and the values
// for GitOps and for clusters that restrict priority classes.
func TestPlatformValues(t *testing.T) {
	defaults := render(t)
	pod, _, _ := unstructured.NestedMap(defaults["Deployment/holdfast-operator"].Object, "spec", "template", "spec")
	container := pod["containers"].([]any)[0].(map[string]any)
	selector := map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "holdfast", "app.kubernetes.io/instance": "holdfast", "app.kubernetes.io/component": "operator"}}
	want := map[string]any{
		"resources": map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "128Mi"}, "limits": map[string]any{"memory": "256Mi"}},
		"env":       []any{map[string]any{"name": "HOLDFAST_MEMORY_LIMIT", "valueFrom": map[string]any{"resourceFieldRef": map[string]any{"resource": "limits.memory"}}}},
		"topologySpreadConstraints": []any{
			map[string]any{"maxSkew": float64(1), "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": selector},
			map[string]any{"maxSkew": float64(1), "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": selector},
		},
	}
	got := map[string]any{"resources": container["resources"], "env": container["env"], "topologySpreadConstraints": pod["topologySpreadConstraints"]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the operator's defaults (-want +got):\n%s", diff)
	}
	ns, ok := defaults["Namespace/holdfast-drain"]
	if !ok {
		t.Fatalf("no Namespace/holdfast-drain by default: %v", keys(defaults))
	}
	for _, mode := range []string{"enforce", "audit", "warn"} {
		if got := ns.GetLabels()["pod-security.kubernetes.io/"+mode]; got != "restricted" {
			t.Errorf("Namespace/holdfast-drain: pod-security.kubernetes.io/%s %q, want restricted", mode, got)
		}
	}
	if _, ok := defaults["ResourceQuota/holdfast-operator-priority"]; ok {
		t.Error("a ResourceQuota by default")
	}

	objs := render(t,
		"--set", "crds.annotations.argocd\\.argoproj\\.io/sync-options=ServerSideApply=true",
		"--set", "crds.annotations.helm\\.sh/resource-policy=delete",
		"--set", "drainerRole.createSlotNamespace=false",
		"--set", "priorityClassQuota.enabled=true", "--set", "replicas=3",
		"--set", "monitoring.rules.enabled=true", "--set", "monitoring.rules.alertLabels.team=platform", "--set", "monitoring.rules.alertLabels.severity=page")
	crds := 0
	for key, u := range objs {
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crds++
		a := u.GetAnnotations()
		// The keep policy stays: deleting a CRD deletes every object of its kind.
		if a["argocd.argoproj.io/sync-options"] != "ServerSideApply=true" || a["helm.sh/resource-policy"] != "keep" || a["controller-gen.kubebuilder.io/version"] == "" {
			t.Errorf("%s annotations %v", key, a)
		}
	}
	if crds != 3 {
		t.Errorf("%d CRDs, want 3", crds)
	}
	if _, ok := objs["Namespace/holdfast-drain"]; ok {
		t.Error("drainerRole.createSlotNamespace=false still made the namespace")
	}
	if _, ok := objs["Role/holdfast-drainer"]; !ok {
		t.Error("drainerRole.createSlotNamespace=false dropped the drainer Role")
	}
	quota, ok := objs["ResourceQuota/holdfast-operator-priority"]
	if !ok {
		t.Fatalf("priorityClassQuota.enabled made no ResourceQuota: %v", keys(objs))
	}
	wantQuota := map[string]any{
		"hard": map[string]any{"pods": "6"},
		"scopeSelector": map[string]any{"matchExpressions": []any{
			map[string]any{"scopeName": "PriorityClass", "operator": "In", "values": []any{"system-cluster-critical"}},
		}},
	}
	if diff := cmp.Diff(wantQuota, quota.Object["spec"]); diff != "" {
		t.Errorf("the quota (-want +got):\n%s", diff)
	}
	if quota.GetNamespace() != "holdfast-system" {
		t.Errorf("the quota is in %q, want the release's namespace", quota.GetNamespace())
	}
	groups, _, _ := unstructured.NestedSlice(objs["PrometheusRule/holdfast"].Object, "spec", "groups")
	alerts := 0
	for _, g := range groups {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			rule := r.(map[string]any)
			if rule["alert"] == nil {
				continue
			}
			alerts++
			labels := rule["labels"].(map[string]any)
			// An alert's own severity wins over the extra labels.
			if labels["team"] != "platform" || labels["severity"] == "page" || labels["severity"] == nil {
				t.Errorf("alert %v labels %v", rule["alert"], labels)
			}
			url, _ := rule["annotations"].(map[string]any)["runbook_url"].(string)
			if !strings.Contains(url, "/blob/"+chartAppVersion(t)+"/docs/") {
				t.Errorf("alert %v runbook %q, want one in the docs of %s", rule["alert"], url, chartAppVersion(t))
			}
		}
	}
	if alerts == 0 {
		t.Error("no alerts in the rules")
	}
	custom := render(t, "--set", "priorityClassQuota.enabled=true", "--set", "priorityClassQuota.pods=5", "--set", "priorityClassName=platform-critical")
	spec := custom["ResourceQuota/holdfast-operator-priority"].Object["spec"].(map[string]any)
	if got := fmt.Sprint(spec["hard"], spec["scopeSelector"]); got != "map[pods:5] map[matchExpressions:[map[operator:In scopeName:PriorityClass values:[platform-critical]]]]" {
		t.Errorf("the quota for a class of the user's: %s", got)
	}
}

// metrics.tls gives the metrics endpoint a certificate the ServiceMonitor verifies: from
// cert-manager, or from a Secret of the user's.
func TestMetricsTLS(t *testing.T) {
	for name, tc := range map[string]struct {
		args        []string
		secret      string
		certificate bool
	}{
		"cert-manager": {
			args:   []string{"--set", "metrics.tls.certManager.enabled=true", "--set", "metrics.tls.certManager.issuerRef.name=metrics-ca", "--set", "metrics.tls.certManager.issuerRef.kind=ClusterIssuer"},
			secret: "holdfast-metrics-tls", certificate: true,
		},
		"a Secret of the user's": {
			args:   []string{"--set", "metrics.tls.secretName=metrics-cert"},
			secret: "metrics-cert",
		},
	} {
		t.Run(name, func(t *testing.T) {
			objs := render(t, append(tc.args, "--set", "monitoring.serviceMonitor.enabled=true")...)
			pod, _, _ := unstructured.NestedMap(objs["Deployment/holdfast-operator"].Object, "spec", "template", "spec")
			container := pod["containers"].([]any)[0].(map[string]any)
			got := map[string]any{
				"arg":     container["args"].([]any)[len(container["args"].([]any))-1],
				"mounts":  container["volumeMounts"],
				"volumes": pod["volumes"],
			}
			want := map[string]any{
				"arg":     "--metrics-cert-dir=/var/run/holdfast/metrics-tls",
				"mounts":  []any{map[string]any{"name": "metrics-tls", "mountPath": "/var/run/holdfast/metrics-tls", "readOnly": true}},
				"volumes": []any{map[string]any{"name": "metrics-tls", "secret": map[string]any{"secretName": tc.secret}}},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the operator's certificate (-want +got):\n%s", diff)
			}
			endpoints, _, _ := unstructured.NestedSlice(objs["ServiceMonitor/holdfast-operator"].Object, "spec", "endpoints")
			wantTLS := map[string]any{"ca": map[string]any{"secret": map[string]any{"name": tc.secret, "key": "ca.crt"}}, "serverName": "holdfast-operator-metrics.holdfast-system.svc"}
			if diff := cmp.Diff(wantTLS, endpoints[0].(map[string]any)["tlsConfig"]); diff != "" {
				t.Errorf("the ServiceMonitor's tlsConfig, verifying rather than skipping (-want +got):\n%s", diff)
			}
			cert, ok := objs["Certificate/holdfast-metrics"]
			if ok != tc.certificate {
				t.Fatalf("Certificate rendered: %v, want %v", ok, tc.certificate)
			}
			if !ok {
				return
			}
			wantCert := map[string]any{
				"secretName": tc.secret,
				"dnsNames":   []any{"holdfast-operator-metrics", "holdfast-operator-metrics.holdfast-system", "holdfast-operator-metrics.holdfast-system.svc"},
				"usages":     []any{"server auth", "digital signature", "key encipherment"},
				"issuerRef":  map[string]any{"name": "metrics-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"},
			}
			if diff := cmp.Diff(wantCert, cert.Object["spec"]); diff != "" {
				t.Errorf("the Certificate (-want +got):\n%s", diff)
			}
		})
	}
	for name, args := range map[string][]string{
		"cert-manager without an issuer":  {"--set", "metrics.tls.certManager.enabled=true"},
		"a certificate over plain HTTP":   {"--set", "metrics.tls.secretName=metrics-cert", "--set", "metrics.secure=false"},
		"an issuer of an unknown setting": {"--set", "metrics.tls.certManager.issuerRef.namespace=x"},
	} {
		if _, err := helm(t, append([]string{"template", "holdfast", chartDir}, args...)...); err == nil {
			t.Errorf("%s: rendered, want a refusal", name)
		}
	}
}
