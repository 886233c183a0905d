package audit_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/holdfast-dev/holdfast/internal/audit"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// TestSARIFStdin is the finding of issue 19: results read from stdin (-f -) had no
// location, and fixes were only in properties. It checks what SARIF 2.1.0 requires of
// the parts holdfast writes: a location per result, fixes with artifactChanges of at least
// one replacement each with a deletedRegion (here an empty one: an insertion), and
// suppressions of a kind SARIF defines.
func TestSARIFStdin(t *testing.T) {
	input := "# rendered by helm\n" + suppressed
	s, problems := snapshot.LoadManifestBytes(snapshot.StdinPath, []byte(input), snapshot.ManifestOptions{})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	kept, supp, _ := audit.Suppress(audit.Run(availability.Build(s, now), s.Origins), s, []string{"HF011"})
	data, err := json.Marshal(audit.SARIF(append(kept, supp...), "v1.2.3", audit.Input{}))
	if err != nil {
		t.Fatal(err)
	}
	// Read back generically, as a SARIF consumer would, rather than into holdfast's types.
	var log struct {
		Runs []struct {
			Results []struct {
				RuleID    string `json:"ruleId"`
				Locations []struct {
					PhysicalLocation *struct {
						ArtifactLocation map[string]any `json:"artifactLocation"`
						Region           map[string]int `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
				Fixes []struct {
					Description     map[string]string `json:"description"`
					ArtifactChanges []struct {
						ArtifactLocation map[string]any `json:"artifactLocation"`
						Replacements     []struct {
							DeletedRegion   map[string]int    `json:"deletedRegion"`
							InsertedContent map[string]string `json:"insertedContent"`
						} `json:"replacements"`
					} `json:"artifactChanges"`
				} `json:"fixes"`
				Suppressions []map[string]string `json:"suppressions"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &log); err != nil {
		t.Fatal(err)
	}
	type result struct {
		Rule, Location, Insert, Suppression string
	}
	var got []result
	for _, r := range log.Runs[0].Results {
		if len(r.Locations) != 1 || r.Locations[0].PhysicalLocation == nil {
			t.Fatalf("%s: locations %+v, want one physical location", r.RuleID, r.Locations)
		}
		loc := r.Locations[0].PhysicalLocation
		res := result{Rule: r.RuleID, Location: loc.ArtifactLocation["uri"].(string) + ":" + strconv.Itoa(loc.Region["startLine"])}
		if len(r.Fixes) != 1 {
			t.Fatalf("%s: %d fixes, want 1", r.RuleID, len(r.Fixes))
		}
		fix := r.Fixes[0]
		if fix.Description["text"] == "" || len(fix.ArtifactChanges) != 1 || len(fix.ArtifactChanges[0].Replacements) != 1 {
			t.Fatalf("%s: fix %+v, want a description and one change of one replacement", r.RuleID, fix)
		}
		change := fix.ArtifactChanges[0]
		rep := change.Replacements[0]
		if diff := cmp.Diff(loc.ArtifactLocation, change.ArtifactLocation); diff != "" {
			t.Errorf("%s: the fix changes another artifact (-location +fix):\n%s", r.RuleID, diff)
		}
		region := rep.DeletedRegion
		if region["startLine"] != region["endLine"] || region["startColumn"] != 1 || region["endColumn"] != 1 {
			t.Errorf("%s: deleted region %v, want the empty region at column 1 of a line", r.RuleID, region)
		}
		for _, line := range strings.Split(strings.TrimSuffix(rep.InsertedContent["text"], "\n"), "\n") {
			if !strings.HasPrefix(line, "#") {
				t.Errorf("%s: inserted line %q is not a YAML comment", r.RuleID, line)
			}
		}
		res.Insert = strconv.Itoa(region["startLine"])
		for _, sup := range r.Suppressions {
			res.Suppression = sup["kind"] + " " + sup["justification"]
		}
		got = append(got, res)
	}
	want := []result{
		{Rule: "HF002", Location: "stdin:2", Insert: "2"},
		{Rule: "HF003", Location: "stdin:17", Insert: "17", Suppression: "inSource "},
		{Rule: "HF006", Location: "stdin:2", Insert: "2", Suppression: "inSource one node per zone, spread by the node pools"},
		{Rule: "HF011", Location: "stdin:2", Insert: "2", Suppression: "external --ignore HF011"},
		{Rule: "HF012", Location: "stdin:2", Insert: "2", Suppression: "inSource one node per zone, spread by the node pools"},
	}
	slices.SortFunc(got, func(a, b result) int { return strings.Compare(a.Rule, b.Rule) })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}

// TestSARIFInvocation checks that what the audit did not read or did not audit is in the
// log, as the invocation's notifications, and that every rule has its help page.
func TestSARIFInvocation(t *testing.T) {
	input := "replicaCount: 1\n---\napiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: web}\n---\n" +
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: [\n"
	s, problems := snapshot.LoadManifestBytes("mixed.yaml", []byte(input), snapshot.ManifestOptions{})
	data, err := json.Marshal(audit.SARIF(nil, "v1.2.3", audit.Input{Problems: problems, Warnings: s.Warnings, Skipped: s.Skipped}))
	if err != nil {
		t.Fatal(err)
	}
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Rules []struct {
						ID      string `json:"id"`
						HelpURI string `json:"helpUri"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Invocations []struct {
				ExecutionSuccessful bool `json:"executionSuccessful"`
				Notifications       []struct {
					Level     string            `json:"level"`
					Message   map[string]string `json:"message"`
					Locations []struct {
						PhysicalLocation struct {
							ArtifactLocation map[string]string `json:"artifactLocation"`
							Region           map[string]int    `json:"region"`
						} `json:"physicalLocation"`
					} `json:"locations"`
				} `json:"toolExecutionNotifications"`
			} `json:"invocations"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &log); err != nil {
		t.Fatal(err)
	}
	for _, r := range log.Runs[0].Tool.Driver.Rules {
		if !strings.HasPrefix(r.HelpURI, "https://") || !strings.Contains(r.HelpURI, "docs/audit-rules.md#"+strings.ToLower(r.ID)) {
			t.Errorf("rule %s: helpUri %q, want its section of docs/audit-rules.md", r.ID, r.HelpURI)
		}
	}
	if len(log.Runs[0].Invocations) != 1 {
		t.Fatalf("%d invocations, want 1", len(log.Runs[0].Invocations))
	}
	inv := log.Runs[0].Invocations[0]
	if inv.ExecutionSuccessful {
		t.Error("executionSuccessful with a document that could not be read")
	}
	var got []string
	for _, n := range inv.Notifications {
		loc := n.Locations[0].PhysicalLocation
		got = append(got, n.Level+" "+loc.ArtifactLocation["uri"]+":"+strconv.Itoa(loc.Region["startLine"])+" "+n.Message["text"])
	}
	want := []string{
		"error mixed.yaml:9 yaml: line 9: did not find expected node content",
		"note mixed.yaml:1 not a Kubernetes object (no kind or metadata), skipped",
		"note mixed.yaml:3 Rollout/web: kind Rollout of argoproj.io/v1alpha1 is a custom resource holdfast does not know, skipped: the pods it makes are not audited",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
}
