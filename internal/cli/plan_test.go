package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/holdfast-dev/holdfast/internal/plan"
)

const (
	example003 = "../../examples/003-single-replica-budget/"
	example004 = "../../examples/004-upgrade-mass-drain/"
)

// checkWidth fails for lines wider than the table.
func checkWidth(t *testing.T, out string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if len(line) > tableWidth {
			t.Errorf("line wider than %d columns: %q", tableWidth, line)
		}
	}
}

// TestPlanNodeByNodeUpgrade plans a node-by-node upgrade: node-2, with two of the three
// replicas, takes the service down to a third while it drains.
func TestPlanNodeByNodeUpgrade(t *testing.T) {
	stdout, stderr, code := runAudit(t, "", "plan", "drain", "--all", "--uncordon", "--max-concurrent", "1",
		"-f", example004+"bad.yaml", "-f", example004+"placement.yaml", "-f", example004+"nodes.yaml")
	want := `Wave 1 (1 node): node-1
  Deployment/default/platform                         2/3 ready, 1 evicted
Wave 2 (1 node): node-2
  Deployment/default/platform                         1/3 ready, 2 evicted
Wave 3 (1 node): node-3
  Deployment/default/platform                         2/3 ready, 1 evicted

3 nodes in 3 waves. Lower bound: 3 waves (at most 1 node at a time).
`
	if diff := cmp.Diff(want, stdout); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	// The example's manifests are from before apps/v1.
	removed := "holdfast: warning: ../../examples/004-upgrade-mass-drain/bad.yaml:4: Deployment/default/platform: extensions/v1beta1 Deployment was removed in Kubernetes 1.16 and the API server refuses it: use apps/v1 (read here as if it were)\n"
	if stderr != removed || code != ExitOK {
		t.Errorf("stderr %q, exit %d; want %q, %d", stderr, code, removed, ExitOK)
	}
}

// TestPlanNodeByNodeUpgradeFixed plans the fixed manifests: one replica per node and a
// budget of minAvailable 2, so the nodes go one at a time, each losing one replica; kept
// cordoned, the replica of the first node drained would have nowhere to go.
func TestPlanNodeByNodeUpgradeFixed(t *testing.T) {
	args := []string{"plan", "drain", "--all", "-f", example004 + "fixed.yaml", "-f", example004 + "nodes.yaml"}
	stdout, _, code := runAudit(t, "", append(args, "--uncordon")...)
	want := `Wave 1 (1 node): node-1
  Deployment/default/platform                         2/3 ready, 1 evicted
Wave 2 (1 node): node-2
  Deployment/default/platform                         2/3 ready, 1 evicted
Wave 3 (1 node): node-3
  Deployment/default/platform                         2/3 ready, 1 evicted

3 nodes in 3 waves. Lower bound: 3 waves (PodDisruptionBudget
default/platform-pdb has pods on 3 nodes and lets 1 go at once).
`
	if diff := cmp.Diff(want, stdout); diff != "" || code != ExitOK {
		t.Errorf("--uncordon: exit %d, table (-want +got):\n%s", code, diff)
	}
	stdout, _, code = runAudit(t, "", append(args, "node-1")...)
	if !strings.Contains(stdout, "Blocked: node-1\n  CompanionPending Deployment/default/platform, for now\n") || code != ExitFindings {
		t.Errorf("cordoned: exit %d, output:\n%s", code, stdout)
	}
	checkWidth(t, stdout)
}

// TestPlanSingleReplicaBudgets finds the single-replica budgets, each blocking its node.
func TestPlanSingleReplicaBudgets(t *testing.T) {
	stdout, stderr, code := runAudit(t, "", "plan", "drain", "--all", "-f", example003+"bad.yaml", "-f", example003+"nodes.yaml")
	want := `Wave 1 (1 node): node-3
Blocked: node-1
  SingleReplicaBudget PodDisruptionBudget/prod/mysvc-prod, until it changes
    PodDisruptionBudget prod/mysvc-prod (minAvailable 1) wants 1 healthy of 1
    expected pods, so it never allows an eviction: on a single replica every
    drain of its node waits forever; run 2 replicas or use maxUnavailable 1
Blocked: node-2
  SingleReplicaBudget PodDisruptionBudget/prod/worker, until it changes
    PodDisruptionBudget prod/worker (minAvailable 50%) wants 1 healthy of 1
    expected pods, so it never allows an eviction: on a single replica every
    drain of its node waits forever; run 2 replicas or use maxUnavailable 1

1 node in 1 wave; 2 nodes blocked. Lower bound: 1 wave.
`
	if diff := cmp.Diff(want, stdout); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	checkWidth(t, stdout)
	removed := "holdfast: warning: ../../examples/003-single-replica-budget/bad.yaml:24: PodDisruptionBudget/prod/mysvc-prod: policy/v1beta1 PodDisruptionBudget was removed in Kubernetes 1.25 and the API server refuses it: use policy/v1 (read here as if it were)\n"
	if stderr != removed || code != ExitFindings {
		t.Errorf("stderr %q, exit %d; want %q, %d", stderr, code, removed, ExitFindings)
	}
}

func TestPlanDrainJSON(t *testing.T) {
	stdout, _, code := runAudit(t, "", "plan", "drain", "node-1", "node-3", "-o", "json",
		"-f", example003+"bad.yaml", "-f", example003+"nodes.yaml")
	var got struct {
		Waves   [][]string `json:"waves"`
		Blocked []struct {
			Node    string `json:"node"`
			Reasons []struct {
				Kind, Namespace, Name, Message string
			} `json:"reasons"`
		} `json:"blocked"`
		LowerBound struct {
			Waves int `json:"waves"`
		} `json:"lowerBound"`
		Capacity [][]any `json:"capacity"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout)
	}
	if diff := cmp.Diff([][]string{{"node-3"}}, got.Waves); diff != "" {
		t.Errorf("waves (-want +got):\n%s", diff)
	}
	if len(got.Blocked) != 1 || got.Blocked[0].Node != "node-1" || len(got.Blocked[0].Reasons) != 1 {
		t.Fatalf("blocked %+v, want node-1 with one reason", got.Blocked)
	}
	if r := got.Blocked[0].Reasons[0]; r.Kind != "PodDisruptionBudget" || r.Namespace != "prod" || r.Name != "mysvc-prod" || r.Message == "" {
		t.Errorf("reason %+v", r)
	}
	if got.LowerBound.Waves != 1 || len(got.Capacity) != 1 || code != ExitFindings {
		t.Errorf("lower bound %d, capacity %v, exit %d", got.LowerBound.Waves, got.Capacity, code)
	}
}

func TestPlanFailure(t *testing.T) {
	files := []string{"-f", example004 + "bad.yaml", "-f", example004 + "placement.yaml", "-f", example004 + "nodes.yaml"}
	stdout, _, code := runAudit(t, "", append([]string{"plan", "failure"}, files...)...)
	want := `Losing node node-2:
  Deployment/default/platform                         1/3 left; whole again after 360 s (no DisruptionPolicy)
`
	if diff := cmp.Diff(want, stdout); diff != "" || code != ExitOK {
		t.Errorf("exit %d, table (-want +got):\n%s", code, diff)
	}
	stdout, _, code = runAudit(t, "", append([]string{"plan", "failure", "--zone", "-o", "json"}, files...)...)
	var got []struct {
		Topology, Domain string
		Losses           []struct {
			Name      string
			Lost      int32
			All       bool
			Desired   int32
			Running   int32
			Kind      string
			Namespace string
		}
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout)
	}
	if len(got) != 1 || got[0].Topology != "zone" || got[0].Domain != "europe-west1-c" || len(got[0].Losses) != 1 || got[0].Losses[0].Lost != 2 || code != ExitOK {
		t.Errorf("zone failures %+v, exit %d", got, code)
	}
	stdout, _, code = runAudit(t, "", "plan", "failure", "-f", example003+"bad.yaml", "-f", example003+"nodes.yaml")
	if !strings.Contains(stdout, "  Deployment/prod/mysvc                               0/1 left, down; whole again after 360 s (no DisruptionPolicy)\n") || code != ExitFindings {
		t.Errorf("single replicas: exit %d, output:\n%s", code, stdout)
	}
	stdout, _, code = runAudit(t, "", "plan", "failure", "--zone", "-f", example004+"fixed.yaml", "-f", example004+"nodes.yaml")
	if stdout != "No single zone's loss takes any workload below half of its replicas.\n" || code != ExitOK {
		t.Errorf("fixed: exit %d, output %q", code, stdout)
	}
}

func TestPlanExitCodes(t *testing.T) {
	nodes := example003 + "nodes.yaml"
	tests := map[string]struct {
		stdin string
		args  []string
		want  int
	}{
		"no node named":           {args: []string{"drain", "-f", nodes}, want: ExitError},
		"unknown node":            {args: []string{"drain", "node-9", "-f", nodes}, want: ExitError},
		"bad selector":            {args: []string{"drain", "--selector", "a in (", "-f", nodes}, want: ExitError},
		"selector matching none":  {args: []string{"drain", "--selector", "pool=red", "-f", nodes}, want: ExitError},
		"negative max-concurrent": {args: []string{"drain", "--all", "--max-concurrent", "-1", "-f", nodes}, want: ExitError},
		"huge max-concurrent":     {args: []string{"drain", "--all", "--max-concurrent", "9223372036854775807", "-f", nodes}, want: ExitError},
		"max-concurrent 1000":     {args: []string{"drain", "--all", "--max-concurrent", "1000", "-f", nodes}, want: ExitOK},
		"unknown output":          {args: []string{"drain", "--all", "-o", "sarif", "-f", nodes}, want: ExitError},
		"yaml output":             {args: []string{"drain", "--all", "-o", "yaml", "-f", nodes}, want: ExitOK},
		"failure -A":              {args: []string{"failure", "-A", "-f", nodes}, want: ExitOK},
		"failure -A over -n":      {args: []string{"failure", "-A", "-n", "shop", "-f", nodes}, want: ExitOK},
		"no nodes in the input":   {stdin: singleReplica, args: []string{"drain", "--all", "-f", "-"}, want: ExitError},
		"unreadable document":     {stdin: "kind: [\n", args: []string{"drain", "--all", "-f", nodes, "-f", "-"}, want: ExitError},
		"nodes only":              {args: []string{"drain", "--selector", "topology.kubernetes.io/zone=europe-west1-b", "-f", nodes}, want: ExitOK},
		"failure, unknown output": {args: []string{"failure", "-o", "sarif", "-f", nodes}, want: ExitError},
		"failure, nodes only":     {args: []string{"failure", "-f", nodes}, want: ExitOK},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, stderr, code := runAudit(t, tc.stdin, append([]string{"plan"}, tc.args...)...)
			if code != tc.want {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.want, stderr)
			}
		})
	}
}

// TestPlanDrainTableLayout checks what large plans look like: long node lists wrap
// within 80 columns, a wave shows its five most hurt workloads, long names take two
// lines.
func TestPlanDrainTableLayout(t *testing.T) {
	var nodes []string
	for i := range 12 {
		nodes = append(nodes, fmt.Sprintf("ip-10-0-%d-17.eu-west-1.compute.internal", i))
	}
	wave := plan.Wave{Nodes: nodes}
	for i := range 7 {
		wave.Capacity = append(wave.Capacity, plan.Capacity{Kind: "Deployment", Namespace: "shop", Name: fmt.Sprintf("web-%d", i), Desired: 3, Ready: 2, Evicted: 1})
	}
	wave.Capacity[0].Name = "a-workload-whose-name-is-far-too-long-for-one-column"
	p := &plan.Plan{
		Waves:      []plan.Wave{wave},
		LowerBound: plan.LowerBound{Waves: 1},
	}
	var out bytes.Buffer
	o := &PlanDrainOptions{planInput: planInput{IOStreams: genericiooptions.IOStreams{Out: &out}}}
	if err := o.printTable(p); err != nil {
		t.Fatal(err)
	}
	want := `Wave 1 (12 nodes): ip-10-0-0-17.eu-west-1.compute.internal
  ip-10-0-1-17.eu-west-1.compute.internal
  ip-10-0-2-17.eu-west-1.compute.internal
  ip-10-0-3-17.eu-west-1.compute.internal
  ip-10-0-4-17.eu-west-1.compute.internal
  ip-10-0-5-17.eu-west-1.compute.internal
  ip-10-0-6-17.eu-west-1.compute.internal
  ip-10-0-7-17.eu-west-1.compute.internal
  ip-10-0-8-17.eu-west-1.compute.internal
  ip-10-0-9-17.eu-west-1.compute.internal
  ip-10-0-10-17.eu-west-1.compute.internal
  ip-10-0-11-17.eu-west-1.compute.internal
  Deployment/shop/a-workload-whose-name-is-far-too-long-for-one-column
                                                      2/3 ready, 1 evicted
  Deployment/shop/web-1                               2/3 ready, 1 evicted
  Deployment/shop/web-2                               2/3 ready, 1 evicted
  Deployment/shop/web-3                               2/3 ready, 1 evicted
  Deployment/shop/web-4                               2/3 ready, 1 evicted
  ... and 2 more

12 nodes in 1 wave. Lower bound: 1 wave.
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	checkWidth(t, out.String())
}

// TestPlanNamespace narrows the upgrade example's plan failure to one namespace with -n,
// the way -n narrows audit, and -A keeps every namespace (plan failure -A was "unknown
// shorthand flag" in issue 19). The manifests' objects that name no namespace get -n's.
func TestPlanNamespace(t *testing.T) {
	const shop = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: web}]}
`
	args := []string{"-f", "-", "-f", example004 + "bad.yaml", "-f", example004 + "placement.yaml", "-f", example004 + "nodes.yaml"}
	platform := "  Deployment/default/platform                         1/3 left; whole again after 360 s (no DisruptionPolicy)\n"
	web := "  Deployment/shop/web                                 0/1 left, down; whole again after 360 s (no DisruptionPolicy)\n"
	tests := map[string]struct {
		flags []string
		want  string
		code  int
	}{
		"-A":         {flags: []string{"-A"}, code: ExitFindings, want: "Losing node node-2:\n" + platform + "Losing node node-3:\n" + web},
		"-n default": {flags: []string{"-n", "default"}, want: "Losing node node-2:\n" + platform},
		// The manifests that name no namespace are put in shop.
		"-n shop": {flags: []string{"-n", "shop"}, code: ExitFindings,
			want: "Losing node node-2:\n  Deployment/shop/platform                            1/3 left; whole again after 360 s (no DisruptionPolicy)\nLosing node node-3:\n" + web},
		"-A wins over -n": {flags: []string{"-A", "-n", "default"}, code: ExitFindings, want: "Losing node node-2:\n" + platform + "Losing node node-3:\n" + web},
		"jsonpath":        {flags: []string{"-n", "default", "-o", "jsonpath={[*].losses[*].name}"}, want: "platform"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := runAudit(t, shop, append(append([]string{"plan", "failure"}, tc.flags...), args...)...)
			if diff := cmp.Diff(tc.want, stdout); diff != "" || code != tc.code {
				t.Errorf("exit %d (want %d), stderr %q; stdout (-want +got):\n%s", code, tc.code, stderr, diff)
			}
		})
	}
}

// The node-failure scenario predicted: a single replica and a StatefulSet under a
// policy, the StatefulSet fenced after two minutes without a Lease renewal.
func TestPlanFailureWithPolicy(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "shop.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: holdfast.dev/v1alpha1
kind: DisruptionPolicy
metadata: {name: defaults, namespace: shop}
spec:
  selector: {}
  maxUnavailable: 1
  singleReplica: Surge
  nodeFailure: {fencing: Verified, fenceAfter: 2m}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: single, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: single}}
  template:
    metadata: {labels: {app: single}}
    spec: {containers: [{name: app, image: app}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  replicas: 5
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: db}]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	// The operator's flags: a namespace's policy may fence, and fenceAfter counts.
	stdout, stderr, code := runAudit(t, "", "plan", "failure", "--start-up", "5s", "--allow-namespaced-fencing", "--allow-fence-after", "-f", manifest, "-f", "testdata/shop/nodes.yaml", "node-1")
	want := `Losing node node-1:
  Deployment/shop/single                              0/1 left, down; whole again after 35 s with holdfast (surged once the node's Lease is 30s old; Kubernetes alone: 355 s)
  StatefulSet/shop/db                                 4/5 left; whole again after 145 s with holdfast (fenced on proof, or once the node is unreachable for fenceAfter 2m0s: time, not proof; Kubernetes alone: never)
`
	if diff := cmp.Diff(want, stdout); diff != "" || code != ExitFindings {
		t.Errorf("exit %d (stderr %q), table (-want +got):\n%s", code, stderr, diff)
	}
	// Without them, the same policy fences nothing, and plan says why.
	stdout, _, _ = runAudit(t, "", "plan", "failure", "--start-up", "5s", "-f", manifest, "-f", "testdata/shop/nodes.yaml", "node-1")
	if !strings.Contains(stdout, "StatefulSet/shop/db                                 4/5 left; not whole again until the node returns (not fenced: nodeFailure.fencing: Verified is not in effect") {
		t.Errorf("plan failure without the operator's consent to fencing:\n%s", stdout)
	}
	if _, stderr, code := runAudit(t, "", "plan", "failure", "-f", manifest, "-f", "testdata/shop/nodes.yaml", "node-9"); code != ExitError || !strings.Contains(stderr, `no node "node-9"`) {
		t.Errorf("an unknown node: exit %d, stderr %q", code, stderr)
	}
}

// TestPlanDrainConflictingBound: a bound set by nodes no two of which can share a wave
// says so, where a budget's would name the budget.
func TestPlanDrainConflictingBound(t *testing.T) {
	var waves []plan.Wave
	for i := range 8 {
		waves = append(waves, plan.Wave{Nodes: []string{fmt.Sprintf("node-%d", i)}})
	}
	p := &plan.Plan{Waves: waves, LowerBound: plan.LowerBound{Waves: 8, Conflicting: 8}}
	var out bytes.Buffer
	o := &PlanDrainOptions{planInput: planInput{IOStreams: genericiooptions.IOStreams{Out: &out}}}
	if err := o.printTable(p); err != nil {
		t.Fatal(err)
	}
	want := "8 nodes in 8 waves. Lower bound: 8 waves (8 nodes of which no two can share a\nwave: each pair holds more pods of a budget than it lets go at once).\n"
	if got := out.String(); !strings.HasSuffix(got, want) {
		t.Errorf("table ends:\n%s\nwant it to end:\n%s", got[max(0, len(got)-len(want)-40):], want)
	}
	checkWidth(t, out.String())
}
