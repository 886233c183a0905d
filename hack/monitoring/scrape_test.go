package monitoring

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/scrape"
	"github.com/prometheus/prometheus/util/teststorage"
	"sigs.k8s.io/yaml"
)

// The alert tests feed their series through a real scrape: Prometheus's scrape manager
// reads a stand-in of the operator with the scrape configuration the Prometheus Operator
// generates from config/monitoring's ServiceMonitor, so that the rules see the labels a
// Prometheus stores (job, namespace, pod, ... and, without honorLabels,
// exported_namespace), not those holdfast exposes.

const (
	monitoringDir = "../../config/monitoring"
	// managerFile holds the Service and the Deployment the ServiceMonitor finds.
	managerFile = "../../config/manager/manager.yaml"
	// metricsReader is the ClusterRole the operator's /metrics asks its callers for.
	metricsReader = "holdfast-metrics-reader"
)

// serviceMonitor is the part of the Prometheus Operator's ServiceMonitor
// (monitoring.coreos.com/v1) that holdfast's uses. It is read strictly: a field that the
// scrape below does not apply fails the test instead of being ignored.
type serviceMonitor struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   objectMeta `json:"metadata"`
	Spec       struct {
		JobLabel string `json:"jobLabel"`
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Scheme        string `json:"scheme"`
			Interval      string `json:"interval"`
			HonorLabels   bool   `json:"honorLabels"`
			Authorization *struct {
				Type        string `json:"type"`
				Credentials struct {
					Name string `json:"name"`
					Key  string `json:"key"`
				} `json:"credentials"`
			} `json:"authorization"`
			TLSConfig *struct {
				InsecureSkipVerify bool `json:"insecureSkipVerify"`
			} `json:"tlsConfig"`
		} `json:"endpoints"`
	} `json:"spec"`
}

type objectMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// object is what the scrape reads of the other manifests: Services, Deployments,
// Secrets and ClusterRoleBindings.
type object struct {
	Kind     string     `json:"kind"`
	Metadata objectMeta `json:"metadata"`
	Type     string     `json:"type"`
	Spec     struct {
		Template struct {
			Metadata objectMeta `json:"metadata"`
			Spec     struct {
				Containers []struct {
					Name string `json:"name"`
				} `json:"containers"`
			} `json:"spec"`
		} `json:"template"`
		Selector map[string]any `json:"selector"`
	} `json:"spec"`
	RoleRef struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	} `json:"roleRef"`
	Subjects []struct {
		Kind      string `json:"kind"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"subjects"`
}

// readObjects reads every document of the YAML files.
func readObjects(t *testing.T, paths ...string) []object {
	t.Helper()
	var objs []object
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range regexp.MustCompile(`(?m)^---$`).Split(string(data), -1) {
			var o object
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if o.Kind != "" {
				objs = append(objs, o)
			}
		}
	}
	return objs
}

func loadServiceMonitor(t *testing.T) serviceMonitor {
	t.Helper()
	path := filepath.Join(monitoringDir, "servicemonitor.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sm serviceMonitor
	if err := yaml.UnmarshalStrict(data, &sm); err != nil {
		t.Fatalf("%s holds what the test's scrape does not apply: %v", path, err)
	}
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("%s: %d endpoints, the test scrapes exactly one", path, len(sm.Spec.Endpoints))
	}
	return sm
}

// target is the operator's metrics endpoint as Kubernetes service discovery finds it.
type target struct {
	service   object
	pod       string
	container string
}

// findTarget returns the Service in config/manager that sm selects, and one pod of the
// Deployment behind it.
func findTarget(t *testing.T, sm serviceMonitor) target {
	t.Helper()
	objs := readObjects(t, managerFile)
	for _, svc := range objs {
		if svc.Kind != "Service" || svc.Metadata.Namespace != sm.Metadata.Namespace || !selects(sm.Spec.Selector.MatchLabels, svc.Metadata.Labels) {
			continue
		}
		for _, d := range objs {
			if d.Kind == "Deployment" && selects(stringMap(svc.Spec.Selector), d.Spec.Template.Metadata.Labels) {
				return target{service: svc, pod: d.Metadata.Name + "-5d4f8c7b9-x7k2p", container: d.Spec.Template.Spec.Containers[0].Name}
			}
		}
	}
	t.Fatalf("ServiceMonitor %s selects no Service of %s in front of a Deployment", sm.Metadata.Name, managerFile)
	return target{}
}

func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

func stringMap(m map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k], _ = v.(string)
	}
	return out
}

// discovered are the labels of Prometheus's Kubernetes service discovery (role
// endpoints) for the target at addr.
func (tg target) discovered(addr, port string) model.LabelSet {
	ls := model.LabelSet{
		model.AddressLabel:                               model.LabelValue(addr),
		"__meta_kubernetes_namespace":                    model.LabelValue(tg.service.Metadata.Namespace),
		"__meta_kubernetes_service_name":                 model.LabelValue(tg.service.Metadata.Name),
		"__meta_kubernetes_endpoint_port_name":           model.LabelValue(port),
		"__meta_kubernetes_endpoint_address_target_kind": "Pod",
		"__meta_kubernetes_endpoint_address_target_name": model.LabelValue(tg.pod),
		"__meta_kubernetes_pod_name":                     model.LabelValue(tg.pod),
		"__meta_kubernetes_pod_container_name":           model.LabelValue(tg.container),
		"__meta_kubernetes_pod_phase":                    "Running",
	}
	for k, v := range tg.service.Metadata.Labels {
		ls[model.LabelName("__meta_kubernetes_service_label_"+sanitize(k))] = model.LabelValue(v)
		ls[model.LabelName("__meta_kubernetes_service_labelpresent_"+sanitize(k))] = "true"
	}
	return ls
}

func sanitize(name string) string {
	return regexp.MustCompile(`[^a-zA-Z0-9_]`).ReplaceAllString(name, "_")
}

// scrapeConfig is the scrape configuration the Prometheus Operator generates for sm's
// endpoint (generateServiceMonitorConfig in its pkg/prometheus/promcfg.go), without the
// service discovery and sharding rules, which select the target the test hands over.
func scrapeConfig(t *testing.T, sm serviceMonitor, token string) (*config.Config, string) {
	t.Helper()
	ep := sm.Spec.Endpoints[0]
	job := fmt.Sprintf("serviceMonitor/%s/%s/0", sm.Metadata.Namespace, sm.Metadata.Name)
	relabel := []map[string]any{{"source_labels": []string{"job"}, "target_label": "__tmp_prometheus_job_name"}}
	for _, k := range slices.Sorted(maps.Keys(sm.Spec.Selector.MatchLabels)) {
		relabel = append(relabel, map[string]any{"action": "keep",
			"source_labels": []string{"__meta_kubernetes_service_label_" + sanitize(k), "__meta_kubernetes_service_labelpresent_" + sanitize(k)},
			"regex":         "(" + sm.Spec.Selector.MatchLabels[k] + ");true"})
	}
	target := []string{"__meta_kubernetes_endpoint_address_target_kind", "__meta_kubernetes_endpoint_address_target_name"}
	relabel = append(relabel,
		map[string]any{"action": "keep", "source_labels": []string{"__meta_kubernetes_endpoint_port_name"}, "regex": ep.Port},
		map[string]any{"source_labels": target, "separator": ";", "regex": "Node;(.*)", "replacement": "${1}", "target_label": "node"},
		map[string]any{"source_labels": target, "separator": ";", "regex": "Pod;(.*)", "replacement": "${1}", "target_label": "pod"},
		map[string]any{"source_labels": []string{"__meta_kubernetes_namespace"}, "target_label": "namespace"},
		map[string]any{"source_labels": []string{"__meta_kubernetes_service_name"}, "target_label": "service"},
		map[string]any{"source_labels": []string{"__meta_kubernetes_pod_name"}, "target_label": "pod"},
		map[string]any{"source_labels": []string{"__meta_kubernetes_pod_container_name"}, "target_label": "container"},
		map[string]any{"action": "drop", "source_labels": []string{"__meta_kubernetes_pod_phase"}, "regex": "(Failed|Succeeded)"},
		map[string]any{"source_labels": []string{"__meta_kubernetes_service_name"}, "target_label": "job", "replacement": "${1}"},
	)
	if sm.Spec.JobLabel != "" {
		relabel = append(relabel, map[string]any{"source_labels": []string{"__meta_kubernetes_service_label_" + sanitize(sm.Spec.JobLabel)},
			"target_label": "job", "regex": "(.+)", "replacement": "${1}"})
	}
	relabel = append(relabel, map[string]any{"target_label": "endpoint", "replacement": ep.Port})
	sc := map[string]any{
		"job_name":        job,
		"honor_labels":    ep.HonorLabels,
		"scrape_interval": ep.Interval,
		"metrics_path":    ep.Path,
		"scheme":          ep.Scheme,
		"relabel_configs": relabel,
	}
	if ep.TLSConfig != nil {
		sc["tls_config"] = map[string]any{"insecure_skip_verify": ep.TLSConfig.InsecureSkipVerify}
	}
	if ep.Authorization != nil {
		sc["authorization"] = map[string]any{"type": ep.Authorization.Type, "credentials": token}
	}
	data, err := yaml.Marshal(map[string]any{"scrape_configs": []any{sc}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(string(data), nil)
	if err != nil {
		t.Fatalf("the scrape configuration of ServiceMonitor %s: %v\n%s", sm.Metadata.Name, err, data)
	}
	return cfg, job
}

// saToken stands for the token the apiserver issues a ServiceAccount.
func saToken(namespace, name string) string { return "token-of-" + namespace + "-" + name }

// credentials is the token the Prometheus Operator reads for sm: the Secret it names,
// which Kubernetes fills with its ServiceAccount's token.
func credentials(t *testing.T, sm serviceMonitor, objs []object) string {
	t.Helper()
	auth := sm.Spec.Endpoints[0].Authorization
	if auth == nil {
		return ""
	}
	for _, o := range objs {
		if o.Kind == "Secret" && o.Metadata.Name == auth.Credentials.Name && o.Metadata.Namespace == sm.Metadata.Namespace &&
			o.Type == "kubernetes.io/service-account-token" && auth.Credentials.Key == "token" {
			return saToken(o.Metadata.Namespace, o.Metadata.Annotations["kubernetes.io/service-account.name"])
		}
	}
	t.Fatalf("ServiceMonitor %s: no ServiceAccount token Secret %s with key %s in %s", sm.Metadata.Name, auth.Credentials.Name, auth.Credentials.Key, monitoringDir)
	return ""
}

// readers are the tokens the operator's /metrics accepts: those of the ServiceAccounts
// bound to the metrics reader ClusterRole, as its TokenReview and SubjectAccessReview
// would find.
func readers(objs []object) map[string]bool {
	tokens := map[string]bool{}
	for _, o := range objs {
		if o.Kind == "ClusterRoleBinding" && o.RoleRef.Kind == "ClusterRole" && o.RoleRef.Name == metricsReader {
			for _, s := range o.Subjects {
				if s.Kind == "ServiceAccount" {
					tokens[saToken(s.Namespace, s.Name)] = true
				}
			}
		}
	}
	return tokens
}

// scrapeOnce serves exposition as the operator would (HTTPS, a bearer token required)
// and scrapes it once with config/monitoring's ServiceMonitor, returning what Prometheus
// appends to its storage.
func scrapeOnce(t *testing.T, exposition string) []teststorage.Sample {
	t.Helper()
	sm := loadServiceMonitor(t)
	if sm.Spec.Endpoints[0].Scheme != "https" {
		t.Fatalf("ServiceMonitor %s scrapes %q; the operator serves HTTPS", sm.Metadata.Name, sm.Spec.Endpoints[0].Scheme)
	}
	files, err := filepath.Glob(filepath.Join(monitoringDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs := readObjects(t, files...)
	allowed := readers(objs)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowed[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")] {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		fmt.Fprint(w, exposition)
	}))
	defer srv.Close()
	cfg, job := scrapeConfig(t, sm, credentials(t, sm, objs))
	app := teststorage.NewAppendable()
	// One scrape when the manager stops, whatever the interval and its jitter.
	m, err := scrape.NewManager(&scrape.Options{DiscoveryReloadOnStartup: true, ScrapeOnShutdown: true}, nil, nil, nil, app, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.ApplyConfig(cfg); err != nil {
		t.Fatal(err)
	}
	tsets := make(chan map[string][]*targetgroup.Group)
	go func() { _ = m.Run(tsets) }()
	tg := findTarget(t, sm)
	tsets <- map[string][]*targetgroup.Group{job: {{Source: "holdfast", Targets: []model.LabelSet{tg.discovered(srv.Listener.Addr().String(), sm.Spec.Endpoints[0].Port)}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(m.TargetsActive()[job]) == 0 {
		if ctx.Err() != nil {
			m.Stop()
			t.Fatalf("ServiceMonitor %s found no target; dropped: %v", sm.Metadata.Name, m.TargetsDropped()[job])
		}
		time.Sleep(10 * time.Millisecond)
	}
	m.Stop()
	samples := app.ResultSamples()
	for _, s := range samples {
		if s.L.Get(model.MetricNameLabel) == "up" && s.V != 1 {
			t.Fatalf("the scrape failed (up %v, labels %s): is the ServiceMonitor's identity bound to %s?", s.V, s.L, metricsReader)
		}
	}
	return samples
}

// asScraped rewrites promqltest load lines written as holdfast exposes its series into
// the series Prometheus stores after scraping them with config/monitoring's
// ServiceMonitor. A line of the metric up stands for the scrape's own up series; labels
// written on it replace the scrape's, for another replica (pod, instance).
func asScraped(t *testing.T, series string) string {
	t.Helper()
	if strings.TrimSpace(series) == "" {
		return ""
	}
	p := parser.NewParser(promqltest.TestParserOpts)
	type line struct {
		metric labels.Labels
		values string
	}
	var lines []line
	var exposition bytes.Buffer
	index := map[string]int{}
	exposed := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(series), "\n") {
		cut := strings.Index(l, "}") + 1
		if cut == 0 {
			cut = strings.Index(l, " ")
		}
		metric, err := p.ParseMetric(l[:cut])
		if err != nil {
			t.Fatalf("series %q: %v", l, err)
		}
		lines = append(lines, line{metric, l[cut:]})
		if key := metric.String(); metric.Get(model.MetricNameLabel) != "up" && index[key] == 0 {
			index[key] = len(index) + 1 // the sample's value, to find it after the scrape
			exposed[metric.Get(model.MetricNameLabel)] = true
			exposition.WriteString(expose(metric, index[key]))
		}
	}
	scraped := map[int]labels.Labels{}
	var up labels.Labels
	for _, s := range scrapeOnce(t, exposition.String()) {
		switch name := s.L.Get(model.MetricNameLabel); {
		case name == "up":
			up = s.L
		case exposed[name]: // not the scrape's other series, such as scrape_samples_scraped
			scraped[int(s.V)] = s.L
		}
	}
	var out strings.Builder
	for _, l := range lines {
		ls := scraped[index[l.metric.String()]]
		if l.metric.Get(model.MetricNameLabel) == "up" {
			b := labels.NewBuilder(up)
			l.metric.Range(func(l labels.Label) { b.Set(l.Name, l.Value) })
			ls = b.Labels()
		}
		if !ls.IsEmpty() { // empty when a relabelling dropped the series
			out.WriteString(ls.String() + l.values + "\n")
		}
	}
	return out.String()
}

// expose is the text exposition of one series with value v.
func expose(metric labels.Labels, v int) string {
	var pairs []string
	metric.Range(func(l labels.Label) {
		if l.Name != model.MetricNameLabel {
			pairs = append(pairs, fmt.Sprintf("%s=%q", l.Name, l.Value))
		}
	})
	return fmt.Sprintf("%s{%s} %d\n", metric.Get(model.MetricNameLabel), strings.Join(pairs, ","), v)
}
