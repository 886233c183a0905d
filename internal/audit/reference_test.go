package audit_test

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/holdfast-dev/holdfast/internal/audit"
)

var update = flag.Bool("update", false, "rewrite docs/audit-rules.md from the rule catalogue")

const rulesReference = "../../docs/audit-rules.md"

// TestRulesReference keeps docs/audit-rules.md, where each rule's SARIF helpUri points,
// in step with the catalogue: go test ./internal/audit -run TestRulesReference -update
// rewrites it.
func TestRulesReference(t *testing.T) {
	var b strings.Builder
	b.WriteString("# holdfast audit rules\n\n<!-- Generated from internal/audit/rules.go by `go test ./internal/audit -run TestRulesReference -update`. -->\n\n")
	b.WriteString("Each finding of `holdfast audit` names one of these rules; `holdfast audit --explain RULE` prints the same text.\n")
	for _, r := range audit.Rules() {
		fmt.Fprintf(&b, "\n## %s %s\n\nSeverity: %s.", r.ID, r.Name, r.Severity)
		if r.LiveOnly {
			b.WriteString(" Live clusters only: it needs pods and status, which manifests do not have.")
		}
		fmt.Fprintf(&b, "\n\n%s.\n\n%s\n", r.Summary, r.Rationale)
		if !strings.HasSuffix(r.HelpURI(), "#"+strings.ToLower(r.ID+"-"+r.Name)) {
			t.Errorf("%s: helpUri %s does not point at its heading", r.ID, r.HelpURI())
		}
	}
	want := b.String()
	if *update {
		if err := os.WriteFile(rulesReference, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(rulesReference)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("%s is not the catalogue's (-want +got); rerun with -update:\n%s", rulesReference, diff)
	}
}
