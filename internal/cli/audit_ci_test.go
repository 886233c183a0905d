package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeTree writes files (path: content) under a new folder and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for path, content := range files {
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// mixedRepo is a deployment repository as CI checks it out: manifests beside a Helm
// values file, a kustomization, a dashboard and a custom resource.
var mixedRepo = map[string]string{
	"web.yaml":           singleReplica,
	"values.yaml":        "replicaCount: 1\nimage:\n  repository: web\n",
	"kustomization.yaml": "resources:\n- web.yaml\n",
	"dashboard.json":     `{"title": "web", "panels": []}`,
	"rollout.yaml":       "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: web, namespace: shop}\n",
}

// TestAuditMixedFolder is the CI pipeline of issue 32: files that are not Kubernetes
// objects made the audit exit 1, which hid the findings' exit 2. They are notes now.
func TestAuditMixedFolder(t *testing.T) {
	dir := writeTree(t, mixedRepo)
	_, stderr, code := runAudit(t, "", "audit", "-f", dir)
	if code != ExitFindings {
		t.Errorf("exit %d, want %d (the single-replica drain deadlock); stderr:\n%s", code, ExitFindings, stderr)
	}
	want := []string{
		"holdfast: note: " + filepath.Join(dir, "dashboard.json") + ":1: not a Kubernetes object (no kind or metadata), skipped",
		"holdfast: note: " + filepath.Join(dir, "kustomization.yaml") + ":1: a kustomization, skipped: audit what it builds with -k DIR",
		"holdfast: note: " + filepath.Join(dir, "rollout.yaml") + ":1: Rollout/web: kind Rollout of argoproj.io/v1alpha1 is a custom resource holdfast does not know, skipped: the pods it makes are not audited",
		"holdfast: note: " + filepath.Join(dir, "values.yaml") + ":1: not a Kubernetes object (no kind or metadata), skipped",
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(stderr), "\n")); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
}

// TestAuditBrokenManifestStillFails checks that a manifest meant as an object but broken
// stays an error naming its file and line; with findings elsewhere, the exit is theirs.
func TestAuditBrokenManifestStillFails(t *testing.T) {
	broken := map[string]string{"broken.yaml": "kind: Deployment\nmetadata: {name: api}\n"}
	_, stderr, code := runAudit(t, "", "audit", "-f", writeTree(t, broken))
	if code != ExitError || !strings.Contains(stderr, "broken.yaml:1: object has no apiVersion or no kind") {
		t.Errorf("alone: exit %d, want %d; stderr:\n%s", code, ExitError, stderr)
	}
	broken["web.yaml"] = singleReplica
	_, stderr, code = runAudit(t, "", "audit", "-f", writeTree(t, broken))
	if code != ExitFindings || !strings.Contains(stderr, "broken.yaml:1: object has no apiVersion or no kind") {
		t.Errorf("beside findings: exit %d, want %d; stderr:\n%s", code, ExitFindings, stderr)
	}
}

// TestAuditCompact prints one line per finding, file:line first, as linters do.
func TestAuditCompact(t *testing.T) {
	stdout, _, code := runAudit(t, singleReplica, "audit", "-f", "-", "-o", "compact")
	want := "-:1: warning HF013: Deployment web runs a single replica and declares no strategy for disruptions: " +
		"every drain, upgrade or autoscaler consolidation of its node takes it down until the replacement is ready. (Deployment/shop/web)\n" +
		"-:24: error HF001: PodDisruptionBudget web (minAvailable 1) requires 1 of its 1 pod to stay healthy, so it allows no eviction " +
		"even when every pod is ready: every drain, upgrade or autoscaler consolidation of a node running Deployment web blocks forever. (PodDisruptionBudget/shop/web)\n"
	if diff := cmp.Diff(want, stdout); diff != "" || code != ExitFindings {
		t.Errorf("exit %d, want %d; output (-want +got):\n%s", code, ExitFindings, diff)
	}
}

// TestAuditBudgetTableFlags prints the budgets' table as kubectl prints tables: -o wide
// adds who manages each budget and its file, --no-headers drops the header, --sort-by
// orders the rows by a column, named as in the header or as a field.
func TestAuditBudgetTableFlags(t *testing.T) {
	second := strings.NewReplacer("name: web", "name: api", "app: web", "app: api", "replicas: 1", "replicas: 3").Replace(singleReplica)
	input := singleReplica + "---\n" + second
	budgets := func(stdout string) string {
		_, table, _ := strings.Cut(stdout, "matters.\n\n")
		return table
	}
	tests := map[string]struct {
		args []string
		want string
	}{
		"default": {want: "BUDGET     EXPECTED   DESIRED   HEALTHY   ALLOWED\nshop/api   3          1         3         2\nshop/web   1          1         1         0\n"},
		"wide": {args: []string{"-o", "wide"}, want: "BUDGET     EXPECTED   DESIRED   HEALTHY   ALLOWED   MANAGED BY   FILE\n" +
			"shop/api   3          1         3         2                      -:58\nshop/web   1          1         1         0                      -:24\n"},
		"no headers, sorted by a header": {args: []string{"--no-headers", "--sort-by", "allowed"}, want: "shop/web   1     1     1     0\nshop/api   3     1     3     2\n"},
		"sorted by a field, as numbers":  {args: []string{"--sort-by", "{.expected}"}, want: "BUDGET     EXPECTED   DESIRED   HEALTHY   ALLOWED\nshop/web   1          1         1         0\nshop/api   3          1         3         2\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := runAudit(t, input, append([]string{"audit", "-f", "-"}, tc.args...)...)
			if diff := cmp.Diff(tc.want, budgets(stdout)); diff != "" || code != ExitFindings {
				t.Errorf("exit %d (stderr %q), budgets (-want +got):\n%s", code, stderr, diff)
			}
		})
	}
	_, stderr, code := runAudit(t, input, "audit", "-f", "-", "--sort-by", "color")
	if code != ExitError || !strings.Contains(stderr, `--sort-by "color" names no column: use one of Budget, Expected`) {
		t.Errorf("unknown column: exit %d, stderr %q", code, stderr)
	}
}

// TestAuditKustomization audits what a kustomization builds, as kubectl apply -k applies
// it; -k and -f together are refused.
func TestAuditKustomization(t *testing.T) {
	dir := writeTree(t, mixedRepo)
	stdout, stderr, code := runAudit(t, "", "audit", "-k", dir, "-o", "compact")
	if code != ExitFindings || stderr != "" || !strings.Contains(stdout, dir+":28: error HF001: PodDisruptionBudget web") {
		t.Errorf("exit %d, want %d; stderr %q; stdout:\n%s", code, ExitFindings, stderr, stdout)
	}
	_, stderr, code = runAudit(t, "", "audit", "-k", dir, "-f", dir)
	if code != ExitError || !strings.Contains(stderr, "-f and -k cannot be given together") {
		t.Errorf("-k with -f: exit %d, stderr %q", code, stderr)
	}
}

// TestPlanMixedFolder: plan reads input as audit does, with the same notes.
func TestPlanMixedFolder(t *testing.T) {
	dir := writeTree(t, mixedRepo)
	_, stderr, code := runAudit(t, "", "plan", "drain", "--all", "-f", dir, "-f", example003+"nodes.yaml")
	if code == ExitError || !strings.Contains(stderr, "holdfast: note: "+filepath.Join(dir, "values.yaml")+":1: not a Kubernetes object") {
		t.Errorf("exit %d; stderr:\n%s", code, stderr)
	}
}
