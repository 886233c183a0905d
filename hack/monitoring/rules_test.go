package monitoring

import (
	"context"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
	"sigs.k8s.io/yaml"
)

// rulesFile is the PrometheusRule that config/monitoring installs and the chart copies.
const rulesFile = "../../config/monitoring/prometheusrule.yaml"

// runbooksFile holds the runbooks the alerts link, one section each.
const runbooksFile = "../../docs/monitoring.md"

// runbooksURL is where the alerts' runbook_url finds runbooksFile.
const runbooksURL = "https://github.com/holdfast-dev/holdfast/blob/main/docs/monitoring.md#"

// evalInterval is how often the test evaluates each rule, as a Prometheus would.
const evalInterval = time.Minute

// alertCase loads series (promqltest's load syntax, from time 0), written as the operator
// exposes them and stored as Prometheus scrapes them (asScraped), and evaluates one alert
// every minute up to at; want lists the firing alerts' labels (without alertname and
// severity), nil when it must not fire.
type alertCase struct {
	alert  string
	series string
	at     time.Duration
	want   []map[string]string
}

var cases = map[string]alertCase{
	"every replica down for 15 minutes": {
		alert:  "HoldfastOperatorDown",
		series: `up 0x20`,
		at:     15 * time.Minute,
		want:   []map[string]string{{}},
	},
	"no operator scraped at all": {
		alert: "HoldfastOperatorDown",
		at:    15 * time.Minute,
		want:  []map[string]string{{}},
	},
	"one replica of two down": {
		alert: "HoldfastOperatorDown",
		series: `
up 1x20
up{pod="holdfast-operator-5d4f8c7b9-q8w2n",instance="10.0.0.2:8443"} 0x20`,
		at: 15 * time.Minute,
	},
	"the operator down for 5 minutes, as in a rollout": {
		alert:  "HoldfastOperatorDown",
		series: `up 1x5 0x5 1x10`,
		at:     20 * time.Minute,
	},
	"a controller failing every 10 minutes for an hour": {
		alert: "HoldfastReconcileErrors",
		series: `
controller_runtime_reconcile_errors_total{controller="disruptionpolicy"} 0x9 1x9 2x9 3x9 4x9 5x9 6
controller_runtime_reconcile_errors_total{controller="nodecompanion"} 0x60`,
		at:   60 * time.Minute,
		want: []map[string]string{{"namespace": "holdfast-system", "controller": "disruptionpolicy"}},
	},
	"one reconcile error": {
		alert:  "HoldfastReconcileErrors",
		series: `controller_runtime_reconcile_errors_total{controller="disruptionpolicy"} 0x9 1x50`,
		at:     60 * time.Minute,
	},
	"a DisruptionPolicy whose spec cannot be read": {
		alert:  "HoldfastInvalidSpec",
		series: `holdfast_invalid_spec{kind="DisruptionPolicy",namespace="shop",name="web"} 1x10`,
		at:     10 * time.Minute,
		want:   []map[string]string{{"kind": "DisruptionPolicy", "namespace": "shop", "name": "web"}},
	},
	"a ClusterDisruptionPolicy whose spec cannot be read, in the operator's namespace": {
		alert:  "HoldfastInvalidSpec",
		series: `holdfast_invalid_spec{kind="ClusterDisruptionPolicy",namespace="",name="defaults"} 1x10`,
		at:     10 * time.Minute,
		want:   []map[string]string{{"kind": "ClusterDisruptionPolicy", "namespace": "holdfast-system", "name": "defaults"}},
	},
	"a spec fixed within minutes": {
		alert:  "HoldfastInvalidSpec",
		series: `holdfast_invalid_spec{kind="DisruptionPolicy",namespace="shop",name="web"} 1x2 stale`,
		at:     10 * time.Minute,
	},
	"a budget holding a node's drain back for 20 minutes": {
		alert: "HoldfastBudgetBlocksCordonedNode",
		series: `
holdfast_disruptionpolicy_drain_blocked_pods{namespace="shop",policy="web",budget="holdfast-deploy-web",kind="Deployment",workload="web",node="node-1"} 1x30
holdfast_disruptionpolicy_budget_disruptions_allowed{namespace="shop",policy="web",budget="holdfast-deploy-web",kind="Deployment",workload="web"} 0x30`,
		at:   20 * time.Minute,
		want: []map[string]string{{"namespace": "shop", "policy": "web", "budget": "holdfast-deploy-web", "kind": "Deployment", "workload": "web", "node": "node-1"}},
	},
	"a single replica's budget at zero by design while another node is cordoned": {
		alert:  "HoldfastBudgetBlocksCordonedNode",
		series: `holdfast_disruptionpolicy_budget_disruptions_allowed{namespace="shop",policy="web",budget="holdfast-deploy-web",kind="Deployment",workload="web"} 0x30`,
		at:     20 * time.Minute,
	},
	"a drain held back for 10 minutes, until the surged replica is Ready": {
		alert:  "HoldfastBudgetBlocksCordonedNode",
		series: `holdfast_disruptionpolicy_drain_blocked_pods{namespace="shop",policy="web",budget="holdfast-deploy-web",kind="Deployment",workload="web",node="node-1"} 1x10 stale`,
		at:     30 * time.Minute,
	},
	"a zone lost at once": {
		alert: "HoldfastCorrelatedNodeFailure",
		series: `
holdfast_disruptionpolicy_condition{namespace="shop",policy="web",type="nodes_lost",status="true",reason="correlated_failure"} 1x10
holdfast_disruptionpolicy_condition{namespace="blog",policy="defaults",type="nodes_lost",status="true",reason="correlated_failure"} 1x10`,
		at:   5 * time.Minute,
		want: []map[string]string{{}},
	},
	"one node lost, to which holdfast responds": {
		alert:  "HoldfastCorrelatedNodeFailure",
		series: `holdfast_disruptionpolicy_condition{namespace="shop",policy="web",type="nodes_lost",status="true",reason="node_lost"} 1x10`,
		at:     5 * time.Minute,
	},
	"a surge for 40 minutes": {
		alert: "HoldfastSurgeTooLong",
		series: `
holdfast_disruptionpolicy_workloads{namespace="shop",policy="web",state="surging"} 1x40
holdfast_disruptionpolicy_workloads{namespace="shop",policy="batch",state="surging"} 0x40`,
		at:   35 * time.Minute,
		want: []map[string]string{{"namespace": "shop", "policy": "web"}},
	},
	"a surge that ends within its bound": {
		alert:  "HoldfastSurgeTooLong",
		series: `holdfast_disruptionpolicy_workloads{namespace="shop",policy="web",state="surging"} 1x20 0x20`,
		at:     35 * time.Minute,
	},
	"a NodeCompanion missing nodes for 15 minutes": {
		alert: "HoldfastNodeCompanionMissing",
		series: `
holdfast_nodecompanion_nodes{namespace="storage",companion="csi",state="missing"} 2x20
holdfast_nodecompanion_nodes{namespace="storage",companion="csi",state="covered"} 4x20`,
		at:   15 * time.Minute,
		want: []map[string]string{{"namespace": "storage", "companion": "csi"}},
	},
	"a NodeCompanion missing a node for 5 minutes, as a node starts": {
		alert:  "HoldfastNodeCompanionMissing",
		series: `holdfast_nodecompanion_nodes{namespace="storage",companion="csi",state="missing"} 0x5 1x5 0x10`,
		at:     20 * time.Minute,
	},
	"a Degraded workload for 15 minutes": {
		alert:  "HoldfastWorkloadDegraded",
		series: `holdfast_disruptionpolicy_workloads{namespace="shop",policy="web",state="degraded"} 1x20`,
		at:     15 * time.Minute,
		want:   []map[string]string{{"namespace": "shop", "policy": "web"}},
	},
	"no Degraded workload": {
		alert: "HoldfastWorkloadDegraded",
		series: `
holdfast_disruptionpolicy_workloads{namespace="shop",policy="web",state="degraded"} 0x20
holdfast_disruptionpolicy_workloads{namespace="shop",policy="web",state="selected"} 3x20`,
		at: 15 * time.Minute,
	},
	"an invalid maintenance window": {
		alert:  "HoldfastInvalidMaintenanceWindow",
		series: `holdfast_disruptionpolicy_condition{namespace="shop",policy="web",type="window_open",status="false",reason="invalid_window"} 1x10`,
		at:     10 * time.Minute,
		want:   []map[string]string{{"namespace": "shop", "policy": "web"}},
	},
	"a window closed on schedule": {
		alert:  "HoldfastInvalidMaintenanceWindow",
		series: `holdfast_disruptionpolicy_condition{namespace="shop",policy="web",type="window_open",status="false",reason="outside_windows"} 1x10`,
		at:     10 * time.Minute,
	},
}

// loadRules parses the PrometheusRule's groups with Prometheus's own parser, which
// checks every expression and annotation template.
func loadRules(t *testing.T) map[string]rulefmt.Rule {
	t.Helper()
	data, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var cr struct {
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &cr); err != nil {
		t.Fatal(err)
	}
	spec, err := yaml.Marshal(cr.Spec)
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation, parser.NewParser(promqltest.TestParserOpts), slog.Default())
	if len(errs) > 0 {
		t.Fatalf("%s: %v", rulesFile, errs)
	}
	alerts := map[string]rulefmt.Rule{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts[r.Alert] = r
			}
		}
	}
	return alerts
}

func TestAlerts(t *testing.T) {
	alerts := loadRules(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, ok := alerts[tc.alert]
			if !ok {
				t.Fatalf("no alert %s in %s", tc.alert, rulesFile)
			}
			if diff := cmp.Diff(tc.want, firing(t, r, tc.series, tc.at)); diff != "" {
				t.Errorf("%s firing at %s (-want +got):\n%s", tc.alert, tc.at, diff)
			}
		})
	}
}

// Every alert has a case that fires it and one that does not, a severity and a runbook
// (a section of docs/monitoring.md).
func TestEveryAlertTestedAndDocumented(t *testing.T) {
	runbooks, err := os.ReadFile(runbooksFile)
	if err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range cases {
		if len(tc.want) > 0 {
			fires[tc.alert] = true
		} else {
			quiet[tc.alert] = true
		}
	}
	for name, r := range loadRules(t) {
		if !fires[name] || !quiet[name] {
			t.Errorf("%s: want a case that fires it (%v) and one that does not (%v)", name, fires[name], quiet[name])
		}
		if r.Labels["severity"] == "" {
			t.Errorf("%s has no severity label", name)
		}
		if r.Annotations["runbook_url"] != runbooksURL+strings.ToLower(name) {
			t.Errorf("%s: runbook_url %q does not link its section of %s", name, r.Annotations["runbook_url"], runbooksFile)
		}
		if !strings.Contains(string(runbooks), "\n## "+name+"\n") {
			t.Errorf("%s has no runbook in %s (a heading ## %s)", name, runbooksFile, name)
		}
		if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("%s needs a summary and a description", name)
		}
	}
}

// firing evaluates r every evalInterval from time 0 to at on series, as a rule group
// would, and returns the labels of the alerts firing at the end.
func firing(t *testing.T, r rulefmt.Rule, series string, at time.Duration) []map[string]string {
	t.Helper()
	storage := promqltest.LoadedStorage(t, "load 1m\n"+indent(asScraped(t, series)))
	engine := promqltest.NewTestEngine(t, false, 5*time.Minute, 100000)
	expr, err := parser.NewParser(promqltest.TestParserOpts).ParseExpr(r.Expr)
	if err != nil {
		t.Fatal(err)
	}
	rule := rules.NewAlertingRule(r.Alert, expr, time.Duration(r.For), time.Duration(r.KeepFiringFor),
		labels.FromMap(r.Labels), labels.FromMap(r.Annotations), labels.EmptyLabels(), "", false, slog.Default())
	query := rules.EngineQueryFunc(engine, storage)
	start := time.Unix(0, 0).UTC()
	for ts := time.Duration(0); ts <= at; ts += evalInterval {
		if _, err := rule.Eval(context.Background(), 0, start.Add(ts), query, nil, 0); err != nil {
			t.Fatalf("evaluating %s at %s: %v", r.Alert, ts, err)
		}
	}
	var got []map[string]string
	for _, a := range rule.ActiveAlerts() {
		if a.State != rules.StateFiring {
			continue
		}
		m := a.Labels.Map()
		delete(m, labels.AlertName)
		delete(m, "severity")
		got = append(got, m)
	}
	slices.SortFunc(got, func(a, b map[string]string) int {
		return strings.Compare(strings.Join(slices.Sorted(maps.Values(a)), ","), strings.Join(slices.Sorted(maps.Values(b)), ","))
	})
	return got
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}
