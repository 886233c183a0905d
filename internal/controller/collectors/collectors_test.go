package collectors

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegisterReusesTheFirstCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := prometheus.GaugeOpts{Name: "holdfast_test", Help: "A test gauge."}
	first, err := Register(reg, prometheus.NewGauge(opts))
	if err != nil {
		t.Fatal(err)
	}
	again, err := Register(reg, prometheus.NewGauge(opts))
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Error("a second registration did not return the first collector")
	}
	// The same name with other labels is a different collector: an error, not a reuse.
	if _, err := Register(reg, prometheus.NewGaugeVec(opts, []string{"x"})); err == nil {
		t.Error("a conflicting registration was accepted")
	}
}

func TestLabelValue(t *testing.T) {
	for in, want := range map[string]string{
		"Evict":           "evict",
		"NoBetterPlace":   "no_better_place",
		"BudgetExhausted": "budget_exhausted",
		"selected":        "selected",
		"":                "",
	} {
		if got := LabelValue(in); got != want {
			t.Errorf("LabelValue(%q) = %q, want %q", in, got, want)
		}
	}
}
