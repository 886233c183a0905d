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
