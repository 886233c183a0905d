package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	"github.com/holdfast-dev/holdfast/internal/audit"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
)

const singleReplica = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 1
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: web
          image: web:1
          readinessProbe:
            httpGet: {path: /, port: 80}
          livenessProbe:
            httpGet: {path: /, port: 80}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
  namespace: shop
spec:
  minAvailable: 1
  selector:
    matchLabels:
      app: web
`

// runAudit runs holdfast with args and stdin as the binary would, returning its output
// and exit code.
func runAudit(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}
	cmd := NewRootCommand(streams)
	cmd.SetArgs(args)
	err := cmd.Execute()
	var coded *ExitCodeError
	switch {
	case err == nil:
		code = ExitOK
	case errors.As(err, &coded):
		code = coded.Code
	default:
		code = ExitError
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), code
}

func TestAuditTable(t *testing.T) {
	stdout, stderr, code := runAudit(t, singleReplica, "audit", "-f", "-")
	want := `Deployment/shop/web  (-:1)
  WARNING HF013  Deployment web runs a single replica and declares no strategy
                 for disruptions: every drain, upgrade or autoscaler
                 consolidation of its node takes it down until the replacement
                 is ready.
    # Deployment web: run two replicas (and add a PodDisruptionBudget with
    # maxUnavailable: 1)
    spec:
      replicas: 2
    ---
    # or, if it must stay single, tell autoscalers not to disrupt it and move it
    # yourself
    spec:
      template:
        metadata:
          annotations:
            karpenter.sh/do-not-disrupt: "true"
    ---
    # or let holdfast start a second replica before each drain of its node
    apiVersion: holdfast.dev/v1alpha1
    kind: DisruptionPolicy
    metadata:
      name: defaults
      namespace: shop
    spec:
      maxUnavailable: 1
      selector: {}
      singleReplica: Surge
  ERROR   HF001  PodDisruptionBudget web (minAvailable 1) requires 1 of its 1
                 pod to stay healthy, so it allows no eviction even when every
                 pod is ready: every drain, upgrade or autoscaler consolidation
                 of a node running Deployment web blocks forever.
                 (PodDisruptionBudget/shop/web at -:24)
    # PodDisruptionBudget web: replace minAvailable 1 with maxUnavailable: 1
    spec:
      maxUnavailable: 1
      minAvailable: null
    ---
    # and run a second replica so that a drain leaves one serving
    spec:
      replicas: 2

1 error, 1 warning, 0 info in 1 object; 1 budget computed from manifests.
Run holdfast audit --explain RULE for why a rule matters.

BUDGET     EXPECTED   DESIRED   HEALTHY   ALLOWED
shop/web   1          1         1         0
`
	if diff := cmp.Diff(want, stdout); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	for _, line := range strings.Split(stdout, "\n") {
		if len(line) > tableWidth {
			t.Errorf("line wider than %d columns: %q", tableWidth, line)
		}
	}
	if stderr != "" || code != ExitFindings {
		t.Errorf("stderr %q, exit %d; want no stderr, exit %d", stderr, code, ExitFindings)
	}
}

func TestAuditColourOnlyWhenAsked(t *testing.T) {
	s, _ := snapshot.LoadManifestBytes("app.yaml", []byte(singleReplica), snapshot.ManifestOptions{})
	m := availability.Build(s, time.Time{})
	findings := audit.Run(m, s.Origins)
	for _, colour := range []bool{false, true} {
		var out bytes.Buffer
		o := &AuditOptions{Colour: colour, Width: tableWidth, IOStreams: genericiooptions.IOStreams{Out: &out}}
		if err := o.printTable(&auditResult{parts: []audited{{model: m, origins: s.Origins, findings: findings}}, findings: findings}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out.String(), "\x1b[31mERROR  \x1b[0m"); got != colour {
			t.Errorf("colour %v: coloured severity present = %v", colour, got)
		}
	}
}

func TestTerminalOutput(t *testing.T) {
	for name, tc := range map[string]struct {
		columns    int
		env        map[string]string
		wantColour bool
		wantWidth  int
	}{
		"a terminal of 100 columns":         {columns: 100, env: map[string]string{"TERM": "xterm-256color"}, wantColour: true, wantWidth: 100},
		"NO_COLOR set":                      {columns: 100, env: map[string]string{"NO_COLOR": "1", "TERM": "xterm"}, wantWidth: 100},
		"TERM=dumb":                         {columns: 100, env: map[string]string{"TERM": "dumb"}, wantWidth: 100},
		"NO_COLOR empty is not set":         {columns: 100, env: map[string]string{"NO_COLOR": ""}, wantColour: true, wantWidth: 100},
		"a narrow terminal":                 {columns: 30, wantColour: true, wantWidth: minTableWidth},
		"a terminal whose size is unknown":  {columns: 0, wantColour: true, wantWidth: tableWidth},
		"a wide terminal without colours":   {columns: 200, env: map[string]string{"NO_COLOR": "true"}, wantWidth: 200},
		"TERM unset, as under some runners": {columns: 80, wantColour: true, wantWidth: 80},
	} {
		t.Run(name, func(t *testing.T) {
			colour, width := terminalOutput(tc.columns, func(k string) string { return tc.env[k] })
			if colour != tc.wantColour || width != tc.wantWidth {
				t.Errorf("terminalOutput(%d) = colour %v, width %d; want %v, %d", tc.columns, colour, width, tc.wantColour, tc.wantWidth)
			}
		})
	}
}

// The table's messages and fixes follow the width a terminal gives: narrower lines on a
// narrow one, fewer wrapped lines on a wide one.
func TestAuditTableWidth(t *testing.T) {
	s, _ := snapshot.LoadManifestBytes("app.yaml", []byte(singleReplica), snapshot.ManifestOptions{})
	m := availability.Build(s, time.Time{})
	findings := audit.Run(m, s.Origins)
	lines := map[int][]string{}
	for _, width := range []int{minTableWidth, tableWidth, 160} {
		var out bytes.Buffer
		o := &AuditOptions{Width: width, IOStreams: genericiooptions.IOStreams{Out: &out}}
		if err := o.printTable(&auditResult{parts: []audited{{model: m, origins: s.Origins, findings: findings}}, findings: findings}); err != nil {
			t.Fatal(err)
		}
		// The budgets' table, last, is kubectl's: as wide as its columns.
		report, _, _ := strings.Cut(out.String(), "\nBUDGET")
		lines[width] = strings.Split(report, "\n")
		longest := 0
		for _, line := range lines[width] {
			if len(line) > width {
				t.Errorf("width %d: line of %d columns: %q", width, len(line), line)
			}
			longest = max(longest, len(line))
		}
		if longest <= tableWidth && width > tableWidth {
			t.Errorf("width %d: no line is wider than %d: the width is not used", width, tableWidth)
		}
	}
	if !(len(lines[minTableWidth]) > len(lines[tableWidth]) && len(lines[tableWidth]) > len(lines[160])) {
		t.Errorf("lines at widths %d, %d, 160: %d, %d, %d; want fewer as the width grows", minTableWidth, tableWidth,
			len(lines[minTableWidth]), len(lines[tableWidth]), len(lines[160]))
	}
}

// JSON and YAML reports say what they are, as Kubernetes objects do, so that a reader can
// tell this report from a later format.
func TestAuditReportKind(t *testing.T) {
	for _, format := range []string{"json", "yaml"} {
		stdout, _, _ := runAudit(t, singleReplica, "audit", "-f", "-", "-o", format)
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(stdout), &head); err != nil {
			t.Fatalf("-o %s: %v\n%s", format, err, stdout)
		}
		if head.APIVersion != "holdfast.dev/v1alpha1" || head.Kind != "AuditReport" {
			t.Errorf("-o %s: apiVersion %q, kind %q; want holdfast.dev/v1alpha1, AuditReport", format, head.APIVersion, head.Kind)
		}
	}
}

func TestAuditJSON(t *testing.T) {
	stdout, _, code := runAudit(t, singleReplica, "audit", "-f", "-", "-o", "json", "--fail-on", "error")
	var got audit.Report
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout)
	}
	var rules []string
	for _, f := range got.Findings {
		rules = append(rules, f.Rule+" "+f.Kind+"/"+f.Namespace+"/"+f.Name)
	}
	if diff := cmp.Diff([]string{"HF013 Deployment/shop/web", "HF001 PodDisruptionBudget/shop/web"}, rules); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	wantBudgets := []audit.BudgetReport{{
		Namespace: "shop", Name: "web", Projected: true, File: "-", Line: 24,
		Status: availability.Status{ExpectedPods: 1, DesiredHealthy: 1, CurrentHealthy: 1},
	}}
	if diff := cmp.Diff(wantBudgets, got.Budgets); diff != "" {
		t.Errorf("budgets (-want +got):\n%s", diff)
	}
	// The JSON keys are part of the interface.
	for _, key := range []string{`"rule"`, `"severity": "error"`, `"kind"`, `"namespace"`, `"name"`, `"message"`, `"fix"`,
		`"expectedPods"`, `"desiredHealthy"`, `"currentHealthy"`, `"disruptionsAllowed"`} {
		if !strings.Contains(stdout, key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
	if code != ExitFindings {
		t.Errorf("exit %d, want %d", code, ExitFindings)
	}
}

func TestAuditSARIF(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.yaml")
	if err := os.WriteFile(path, []byte(singleReplica), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, _, _ := runAudit(t, "", "audit", "-f", path, "-o", "sarif")
	var log struct {
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Rules []struct{ ID string } `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				Level     string `json:"level"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }    `json:"artifactLocation"`
						Region           struct{ StartLine int } `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(stdout), &log); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Tool.Driver.Rules) != len(audit.Rules()) {
		t.Fatalf("SARIF header: version %q, %d runs", log.Version, len(log.Runs))
	}
	var got []string
	for _, r := range log.Runs[0].Results {
		loc := r.Locations[0].PhysicalLocation
		got = append(got, r.RuleID+" "+r.Level+" "+strings.TrimPrefix(loc.ArtifactLocation.URI, filepath.ToSlash(dir))+":"+strconv.Itoa(loc.Region.StartLine))
	}
	if diff := cmp.Diff([]string{"HF013 warning /app.yaml:1", "HF001 error /app.yaml:24"}, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}

func TestAuditExitCodes(t *testing.T) {
	clean := strings.Replace(singleReplica, "minAvailable: 1", "maxUnavailable: 1", 1)
	clean = strings.Replace(clean, "replicas: 1", "replicas: 2", 1)
	clean = strings.Replace(clean, "      containers:", `      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: DoNotSchedule
          labelSelector: {matchLabels: {app: web}}
      containers:`, 1)
	tests := map[string]struct {
		stdin string
		args  []string
		want  int
	}{
		"error finding at fail-on error":           {stdin: singleReplica, args: []string{"--fail-on", "error"}, want: ExitFindings},
		"warnings only, fail-on error":             {stdin: strings.Replace(singleReplica, "minAvailable: 1", "maxUnavailable: 1", 1), want: ExitOK},
		"warnings only, fail-on warning":           {stdin: strings.Replace(singleReplica, "minAvailable: 1", "maxUnavailable: 1", 1), args: []string{"--fail-on", "warning"}, want: ExitFindings},
		"unreadable document is an error":          {stdin: clean + "---\nkind: [\n", want: ExitError},
		"unknown output format":                    {stdin: clean, args: []string{"-o", "xml"}, want: ExitError},
		"unknown severity":                         {stdin: clean, args: []string{"--fail-on", "fatal"}, want: ExitError},
		"all namespaces do not apply to manifests": {stdin: clean, args: []string{"-A"}, want: ExitError},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, stderr, code := runAudit(t, tc.stdin, append([]string{"audit", "-f", "-"}, tc.args...)...)
			if code != tc.want {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.want, stderr)
			}
		})
	}
	_, _, code := runAudit(t, clean, "audit", "-f", "-", "--fail-on", "info")
	if code != ExitOK {
		t.Errorf("clean manifests: exit %d, want %d", code, ExitOK)
	}
}

func TestAuditExplain(t *testing.T) {
	stdout, _, code := runAudit(t, "", "audit", "--explain", "hf004")
	r, _ := audit.Lookup("HF004")
	want := "HF004 overlapping-budgets (error)\n" + r.Summary + "\n\n" + r.Rationale + "\n"
	if diff := cmp.Diff(want, stdout); diff != "" || code != ExitOK {
		t.Errorf("explain (-want +got):\n%s\nexit %d", diff, code)
	}
	if _, _, code := runAudit(t, "", "audit", "--explain", "HF999"); code != ExitError {
		t.Errorf("unknown rule: exit %d, want %d", code, ExitError)
	}
}

func TestAuditYAML(t *testing.T) {
	stdout, _, _ := runAudit(t, singleReplica, "audit", "-f", "-", "-o", "yaml")
	var got audit.Report
	if err := yaml.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("output is not YAML: %v\n%s", err, stdout)
	}
	if len(got.Findings) != 2 || got.Findings[1].Severity != audit.Error || len(got.Budgets) != 1 {
		t.Errorf("YAML report = %+v, want 2 findings (the second an error) and 1 budget", got)
	}
}

func TestGroupByWorkload(t *testing.T) {
	orphan := singleReplica + `---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: orphan
  namespace: shop
spec:
  maxUnavailable: 1
  selector:
    matchLabels:
      app: gone
`
	s, _ := snapshot.LoadManifestBytes("app.yaml", []byte(orphan), snapshot.ManifestOptions{})
	m := availability.Build(s, time.Time{})
	type group struct {
		Heading  string
		Findings []string
	}
	var got []group
	for _, g := range groupByWorkload(m, audit.Run(m, s.Origins), s.Origins) {
		gr := group{Heading: g.ref.String()}
		for _, f := range g.findings {
			gr.Findings = append(gr.Findings, f.Rule+" "+f.Kind+"/"+f.Name)
		}
		got = append(got, gr)
	}
	want := []group{
		{Heading: "Deployment/shop/web", Findings: []string{"HF013 Deployment/web", "HF001 PodDisruptionBudget/web"}},
		{Heading: "PodDisruptionBudget/shop/orphan", Findings: []string{"HF003 PodDisruptionBudget/orphan"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
}

// TestAuditExamplesFolder is the finding of issue 19: holdfast audit -f examples/ failed,
// and judged one file's budget against the other file's Deployment, because bad.yaml and
// fixed.yaml define the same objects. Each is now audited apart: every finding comes from
// a bad.yaml, and stderr says which files were taken for alternatives.
func TestAuditExamplesFolder(t *testing.T) {
	stdout, stderr, code := runAudit(t, "", "audit", "-f", "../../examples", "-o", "json")
	if code != ExitFindings {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitFindings, stderr)
	}
	var got audit.Report
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Problems) > 0 {
		t.Errorf("problems %v, want none", got.Problems)
	}
	examples := map[string]bool{}
	for _, f := range got.Findings {
		if filepath.Base(f.File) != "bad.yaml" {
			t.Errorf("finding %s on %s/%s from %s, want findings from bad.yaml only", f.Rule, f.Kind, f.Name, f.File)
		}
		examples[filepath.Base(filepath.Dir(f.File))] = true
	}
	if len(examples) != 5 {
		t.Errorf("findings from %v, want all five examples' bad.yaml", examples)
	}
	for _, want := range []string{
		"holdfast: ../../examples/003-single-replica-budget/bad.yaml:3 and ../../examples/003-single-replica-budget/fixed.yaml:3 both define Deployment/prod/mysvc: audited apart, as alternatives",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestAuditSuppressionFlags runs the annotated manifests of the audit package's test
// through the command: --ignore, the count in the summary, --show-suppressed, and the
// exit code, which suppressed findings do not set.
func TestAuditSuppressionFlags(t *testing.T) {
	const annotated = `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
  namespace: shop
  annotations:
    holdfast.dev/audit-ignore: HF001
    holdfast.dev/audit-ignore-reason: drained by hand after a failover
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
`
	input := strings.Replace(singleReplica, "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  minAvailable: 1\n  selector:\n    matchLabels:\n      app: web\n", annotated, 1)
	if input == singleReplica {
		t.Fatal("the budget was not replaced")
	}
	stdout, stderr, code := runAudit(t, input, "audit", "-f", "-", "--fail-on", "error")
	if code != ExitOK || !strings.Contains(stdout, "1 finding suppressed (--show-suppressed lists them).") {
		t.Errorf("exit %d (want %d, HF001 accepted); stdout:\n%s\nstderr: %s", code, ExitOK, stdout, stderr)
	}
	stdout, _, code = runAudit(t, input, "audit", "-f", "-", "--fail-on", "warning", "--ignore", "HF013", "--show-suppressed")
	want := `Suppressed (2):
  WARNING HF013  Deployment/shop/web (-:1)
                 by --ignore
  ERROR   HF001  PodDisruptionBudget/shop/web (-:24)
                 by holdfast.dev/audit-ignore: drained by hand after a failover
`
	if code != ExitOK || !strings.Contains(stdout, want) {
		t.Errorf("exit %d (want %d); stdout lacks\n%s\ngot:\n%s", code, ExitOK, want, stdout)
	}
	if _, stderr, code := runAudit(t, input, "audit", "-f", "-", "--ignore", "HF999"); code != ExitError || !strings.Contains(stderr, `unknown rule "HF999"`) {
		t.Errorf("--ignore HF999: exit %d, stderr %q", code, stderr)
	}
}

// TestAuditUnknownFieldWarning is the finding of issue 19 through the command: a typo in
// a field is a warning on stderr naming file, line, object, field and the field meant,
// and the budget without its floor is the error HF022.
func TestAuditUnknownFieldWarning(t *testing.T) {
	input := strings.Replace(singleReplica, "minAvailable: 1", "minAvaliable: 1", 1)
	stdout, stderr, code := runAudit(t, input, "audit", "-f", "-")
	want := "holdfast: warning: -:30: PodDisruptionBudget/shop/web: field spec.minAvaliable: unknown field, ignored; did you mean minAvailable?\n"
	if stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
	}
	if code != ExitFindings || !strings.Contains(stdout, "ERROR   HF022") {
		t.Errorf("exit %d, want %d with HF022:\n%s", code, ExitFindings, stdout)
	}
}

// A nodes file shared by two alternatives is audited with each, and its warning is
// printed once.
func TestAuditSharedFileWarnedOnce(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"bad.yaml":   singleReplica,
		"fixed.yaml": strings.Replace(singleReplica, "minAvailable: 1", "maxUnavailable: 1", 1),
		"nodes.yaml": "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec: {unschedulabel: true}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, stderr, _ := runAudit(t, "", "audit", "-f", dir)
	if n := strings.Count(stderr, "field spec.unschedulabel: unknown field, ignored; did you mean unschedulable?"); n != 1 {
		t.Errorf("the warning is printed %d times, want once:\n%s", n, stderr)
	}
}

// TestAuditAliasBomb is item 1 of issue 30 through the command: 750 bytes of Lists of
// aliases of Lists, ten million Pods once expanded, ran holdfast out of memory when read
// from a pull request. The input is refused, naming where, and the exit code is 1.
func TestAuditAliasBomb(t *testing.T) {
	stdout, stderr, code := runAudit(t, string(snapshottest.AliasBomb(7)), "audit", "-f", "-")
	want := "holdfast: error: -:5: Pod/default/p: the file expands past 8 times its size here (YAML aliases?); none of it is read\n"
	if code != ExitError || stderr != want {
		t.Errorf("exit %d (want %d), stderr:\n%s\nwant:\n%s\nstdout:\n%s", code, ExitError, stderr, want, stdout)
	}
}

// TestAuditJSONAsKubectlPrintsIt checks that -o json, written a finding at a time, is
// byte for byte what kubectl's JSON printer makes of the whole report, with every field
// of the report set, and with the lists empty or absent.
func TestAuditJSONAsKubectlPrintsIt(t *testing.T) {
	finding := audit.Finding{Rule: "HF001", Severity: audit.Error, Kind: "Deployment", Namespace: "shop", Name: "web",
		Message: `needs <care> & "quotes"`, Fix: "spec:\n  replicas: 2", File: "web.yaml", Line: 3}
	full := audit.Report{
		APIVersion: audit.ReportAPIVersion, Kind: audit.ReportKind,
		Source: "manifests", Findings: []audit.Finding{finding, finding},
		Budgets:    []audit.BudgetReport{{Namespace: "shop", Name: "web", Projected: true, File: "web.yaml", Line: 9}},
		Suppressed: []audit.Finding{finding}, Problems: []string{"a"}, Warnings: []string{"b", "c"}, Skipped: []string{"d"},
	}
	v := reflect.ValueOf(full)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the test leaves Report.%s unset: set it, and write it in writeReportJSON", v.Type().Field(i).Name)
		}
	}
	printer := &printers.JSONPrinter{}
	for name, r := range map[string]audit.Report{
		"full": full, "empty": {Source: "live", Findings: []audit.Finding{}, Budgets: []audit.BudgetReport{}}, "nil": {Source: "live"},
	} {
		var want, got bytes.Buffer
		if err := printValue(printer, r, &want); err != nil {
			t.Fatal(err)
		}
		if err := writeReportJSON(&got, &r); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.String(), got.String()); diff != "" {
			t.Errorf("%s report (-kubectl's printer +written):\n%s", name, diff)
		}
	}
}

// TestIndentJSON holds indentJSON to json.Indent on what json.Marshal writes: empty and
// nested objects and arrays, and strings with quotes, escapes and brackets in them.
func TestIndentJSON(t *testing.T) {
	for _, v := range []any{
		map[string]any{}, []any{}, nil, "x", 1.5, true,
		map[string]any{"a": []any{}, "b": map[string]any{}, "c": []any{map[string]any{"d": nil}, []any{[]any{}}}},
		[]string{`"`, `\`, `\"`, `a\`, `{}`, `[1,2]`, `a: b, c`, "tab\there", "<&>", "é", "\u2028", ""},
		map[string]string{`{"k"}`: `],[`, `\\`: `\\\"`},
		audit.Finding{Rule: "HF001", Message: `needs <care> & "quotes"`, Fix: "spec:\n  replicas: 2"},
	} {
		compact, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Indent(&want, compact, "  ", "    "); err != nil {
			t.Fatal(err)
		}
		if got := indentJSON(nil, compact, "  ", "    "); string(got) != want.String() {
			t.Errorf("indentJSON(%s):\n%s\nwant:\n%s", compact, got, want.String())
		}
	}
}
