package cli

import (
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-dev/holdfast/internal/policy"
)

// The autoscaler flags refuse values the hand-off cannot use, naming the flag.
func TestOperatorValidateAutoscalers(t *testing.T) {
	defaults := policy.Autoscalers{Threshold: 0.5, UnneededTime: 10 * time.Minute, Recheck: 5 * time.Minute}
	tests := map[string]struct {
		mod     func(*policy.Autoscalers)
		refused string
	}{
		"the defaults":          {mod: func(*policy.Autoscalers) {}},
		"a threshold of 1":      {mod: func(a *policy.Autoscalers) { a.Threshold = 1 }},
		"a threshold of 0":      {mod: func(a *policy.Autoscalers) { a.Threshold = 0 }, refused: "--scale-down-utilization-threshold"},
		"a threshold above 1":   {mod: func(a *policy.Autoscalers) { a.Threshold = 1.2 }, refused: "--scale-down-utilization-threshold"},
		"a negative recheck":    {mod: func(a *policy.Autoscalers) { a.Recheck = -time.Minute }, refused: "--cluster-autoscaler-recheck-timeout"},
		"an unneeded time of 0": {mod: func(a *policy.Autoscalers) { a.UnneededTime = 0 }, refused: "--cluster-autoscaler-unneeded-time"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := &OperatorOptions{MetricsAddr: "0", ProbeAddr: "0", APIQPS: 1, APIBurst: 1, LogLevel: "info", Autoscalers: defaults}
			tc.mod(&o.Autoscalers)
			err := o.Validate()
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Fatalf("want a refusal naming %s, got %v", tc.refused, err)
			}
		})
	}
}

// The operator collects at GOGC=50 unless its environment chooses.
func TestOperatorGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "200") // restored after the test
	setGCPercent()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set, the operator changed the GC percent to %d", got)
	}
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	setGCPercent()
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("without GOGC, the GC percent is %d, want %d", got, gcPercent)
	}
}
