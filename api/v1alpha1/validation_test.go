package v1alpha1

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
	"sigs.k8s.io/yaml"
)

// The CEL rules of the generated CRD that guard a parse in the operator use regular
// expressions, which CEL evaluates with RE2 as Go's regexp does. These tests read each
// expression from config/crd/bases and check it against the parser the operator uses:
// whatever the rule accepts must parse (no value the API server stores breaks the
// operator), and the usual spellings must be accepted. The rules as a whole are tested
// against a real API server in test/e2e/validation.

// ruleRegexp returns the regular expression of the first self.matches('…') in the
// x-kubernetes-validations of the property at path, under the DisruptionPolicy spec.
func ruleRegexp(t *testing.T, path ...string) *regexp.Regexp {
	t.Helper()
	b, err := os.ReadFile("../../config/crd/bases/holdfast.dev_disruptionpolicies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	node := crd["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
	for _, p := range append([]string{"spec"}, path...) {
		if p == "[]" {
			node = node["items"].(map[string]any)
			continue
		}
		node = node["properties"].(map[string]any)[p].(map[string]any)
	}
	for _, v := range node["x-kubernetes-validations"].([]any) {
		rule := v.(map[string]any)["rule"].(string)
		_, after, ok := strings.Cut(rule, "self.matches('")
		if !ok {
			continue
		}
		expr, _, _ := strings.Cut(after, "')")
		return regexp.MustCompile(expr)
	}
	t.Fatalf("no self.matches rule at %v", path)
	return nil
}

func TestScheduleRule(t *testing.T) {
	re := ruleRegexp(t, "maintenanceWindows", "[]", "schedule")
	accepted := []string{
		"0 2 * * 6", "*/15 * * * *", "0 9-17 * * 1-5", "0 2 * * MON-FRI", "0 2 * * mon,wed,fri",
		"30 1 1,15 * *", "0 0 1 JAN,jul *", "0-30/5 * * * *", "5/10 * * * *", "0 0 31 12 SUN",
		"  0  2  *  *  *  ", "? ? ? ? ?", "@daily", "@hourly", "@weekly", "@monthly", "@yearly",
		"@annually", "@midnight", "00 00 01 01 00", "59 23 31 12 6",
	}
	for _, s := range accepted {
		if !re.MatchString(s) {
			t.Errorf("the rule refuses %q", s)
		}
		if _, err := cron.ParseStandard(s); err != nil {
			t.Errorf("the rule accepts %q, which the operator cannot parse: %v", s, err)
		}
	}
	refused := []string{
		"every saturday", "0 25 * * 9", "0 2 * *", "0 2 * * * *", "60 * * * *", "* 24 * * *",
		"* * 0 * *", "* * 32 * *", "* * * 0 *", "* * * 13 *", "* * * * 7", "*/0 * * * *",
		"@every 1h", "@reboot", "CRON_TZ=UTC 0 2 * * *", "0 2 * * MONDAY", "-1 * * * *",
		"0,,1 * * * *", "0 2 * * 1-", "",
	}
	for _, s := range refused {
		if re.MatchString(s) {
			t.Errorf("the rule accepts %q", s)
		}
	}
}

// Every value the rule accepts parses in the operator; a corpus of generated fields
// covers ranges, steps and lists at each position.
func TestScheduleRuleImpliesParse(t *testing.T) {
	re := ruleRegexp(t, "maintenanceWindows", "[]", "schedule")
	pieces := []string{"*", "?", "0", "1", "5", "7", "12", "23", "24", "31", "32", "59", "60", "1-5", "5-1", "0-59", "*/2", "1-5/2", "3/4", "1,2", "jan", "MON", "sun-sat", "dec"}
	for i, p := range pieces {
		for pos := range 5 {
			fields := []string{"0", "0", "1", "1", "0"}
			fields[pos] = p
			s := strings.Join(fields, " ")
			_, err := cron.ParseStandard(s)
			// A reversed range (5-1) is the one thing the rule cannot see; the operator
			// reports it as an invalid window.
			if re.MatchString(s) && err != nil && p != "5-1" {
				t.Errorf("piece %d: the rule accepts %q, which the operator cannot parse: %v", i, s, err)
			}
		}
	}
}

func TestDurationRule(t *testing.T) {
	re := ruleRegexp(t, "escapeAfter")
	for _, s := range []string{"0", "0s", "10m", "1h30m", "1.5h", "90s", "500ms", "1us", "1µs", "2ns", "744h"} {
		if !re.MatchString(s) {
			t.Errorf("the rule refuses %q", s)
		}
		if d, err := time.ParseDuration(s); err != nil || d < 0 {
			t.Errorf("the rule accepts %q, which decodes as %v, %v", s, d, err)
		}
	}
	for _, s := range []string{"banana", "-1h", "1", "1d", "h", "1.h", ".5h", "1h-30m", " 1h", "", "+1h"} {
		if re.MatchString(s) {
			t.Errorf("the rule accepts %q", s)
		}
	}
	for _, path := range [][]string{{"maintenanceWindows", "[]", "duration"}, {"rebalance", "cooldown"}, {"nodeFailure", "lostAfter"}, {"nodeFailure", "fenceAfter"}} {
		if got := ruleRegexp(t, path...).String(); got != re.String() {
			t.Errorf("%v: the duration rule %q differs from escapeAfter's %q", path, got, re)
		}
	}
}

func TestTimeZoneRule(t *testing.T) {
	re := ruleRegexp(t, "maintenanceWindows", "[]", "timeZone")
	for _, s := range []string{"UTC", "Europe/Paris", "America/Argentina/Buenos_Aires", "Etc/GMT+5", "Etc/GMT-14", "EST5EDT", "America/Port-au-Prince"} {
		if !re.MatchString(s) {
			t.Errorf("the rule refuses %q", s)
		}
		if _, err := time.LoadLocation(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	// Mars/Olympus has the shape of a zone: the operator reports it (InvalidWindow).
	for _, s := range []string{"Europe/", "/etc/localtime", "../zoneinfo/UTC", "Europe Paris", "UTC;", "+01:00"} {
		if re.MatchString(s) {
			t.Errorf("the rule accepts %q", s)
		}
	}
}
