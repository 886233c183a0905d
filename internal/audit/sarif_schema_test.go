package audit_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/holdfast-dev/holdfast/internal/audit"
	"github.com/holdfast-dev/holdfast/internal/availability"
	"github.com/holdfast-dev/holdfast/internal/snapshot"
)

// sarifSchema is the JSON schema of SARIF 2.1.0 (its final draft, rtm.5, the schema of
// the OASIS standard), as the npm package @microsoft/jest-sarif 1.0.0-beta.0 ships it in
// lib/schemas.
const sarifSchema = "testdata/sarif-2.1.0-rtm.5.json"

// TestSARIFSchema validates a log with every part holdfast writes (results from a file
// and from standard input, fixes, both kinds of suppression, notifications of input
// not read, read with a warning and skipped, and the property bag) against the SARIF
// schema, formats included, so that code-scanning tools accept it.
func TestSARIFSchema(t *testing.T) {
	f, err := os.Open(sarifSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", sarifSchema, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(sarifSchema, doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile(sarifSchema)
	if err != nil {
		t.Fatal(err)
	}

	stdin, problems := snapshot.LoadManifestBytes(snapshot.StdinPath, []byte(suppressed), snapshot.ManifestOptions{})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	kept, supp, _ := audit.Suppress(audit.Run(availability.Build(stdin, now), stdin.Origins), stdin, []string{"HF011"})
	mixed, problems := snapshot.LoadManifestBytes("deploy/mixed.yaml", []byte("replicaCount: 1\n---\napiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: web}\n---\n"+
		"apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: web}\nspec: {minAvailable: 1, selector: {matchLabels: {app: web}}}\n---\n"+
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: [\n"), snapshot.ManifestOptions{})
	if len(problems) == 0 || len(mixed.Warnings) == 0 || len(mixed.Skipped) == 0 {
		t.Fatalf("the input should give problems, warnings and skipped documents: %v, %v, %v", problems, mixed.Warnings, mixed.Skipped)
	}
	findings := append(append(kept, supp...), audit.Run(availability.Build(mixed, now), mixed.Origins)...)
	data, err := json.Marshal(audit.SARIF(findings, "v1.2.3", audit.Input{Problems: problems, Warnings: mixed.Warnings, Skipped: mixed.Skipped}))
	if err != nil {
		t.Fatal(err)
	}
	log, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(log); err != nil {
		t.Errorf("the SARIF log is not valid SARIF 2.1.0: %v", err)
	}

	var bag struct {
		Properties map[string]string `json:"properties"`
	}
	if err := json.Unmarshal(data, &bag); err != nil {
		t.Fatal(err)
	}
	if bag.Properties["apiVersion"] != "holdfast.dev/v1alpha1" || bag.Properties["kind"] != "AuditReport" {
		t.Errorf("the log's properties are %v; want apiVersion holdfast.dev/v1alpha1 and kind AuditReport", bag.Properties)
	}
}
