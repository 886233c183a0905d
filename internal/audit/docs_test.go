package audit_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/holdfast-dev/holdfast/internal/audit"
)

// rulesPage documents every rule in a table whose rows start "| HF001 name | severity |".
const rulesPage = "../../docs/audit.md"

var ruleRow = regexp.MustCompile(`(?m)^\| (HF\d{3}) (\S+) \| (\S+) \|`)

// The table users read lists the rules the binary runs, in order, with their names and
// severities.
func TestRulesTableMatchesCatalogue(t *testing.T) {
	page, err := os.ReadFile(rulesPage)
	if err != nil {
		t.Fatal(err)
	}
	var documented, catalogue []string
	for _, m := range ruleRow.FindAllStringSubmatch(string(page), -1) {
		documented = append(documented, m[1]+" "+m[2]+" "+m[3])
	}
	for _, r := range audit.Rules() {
		catalogue = append(catalogue, r.ID+" "+r.Name+" "+r.Severity.String())
	}
	if diff := cmp.Diff(catalogue, documented); diff != "" {
		t.Errorf("the rules table of %s differs from the catalogue (-catalogue +documented):\n%s", rulesPage, diff)
	}
}
