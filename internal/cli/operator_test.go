package cli

import (
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-dev/holdfast/internal/policy"
)

// The settings flags refuse values the operator cannot use, naming the flag.
func TestOperatorValidateSettings(t *testing.T) {
	tests := map[string]struct {
		mod     func(*policy.Settings)
		refused string
	}{
		"the defaults":          {mod: func(*policy.Settings) {}},
		"a threshold of 1":      {mod: func(s *policy.Settings) { s.Autoscalers.Threshold = 1 }},
		"a threshold of 0":      {mod: func(s *policy.Settings) { s.Autoscalers.Threshold = 0 }, refused: "--scale-down-utilization-threshold"},
		"a threshold above 1":   {mod: func(s *policy.Settings) { s.Autoscalers.Threshold = 1.2 }, refused: "--scale-down-utilization-threshold"},
		"a negative recheck":    {mod: func(s *policy.Settings) { s.Autoscalers.Recheck = -time.Minute }, refused: "--cluster-autoscaler-recheck-timeout"},
		"an unneeded time of 0": {mod: func(s *policy.Settings) { s.Autoscalers.UnneededTime = 0 }, refused: "--cluster-autoscaler-unneeded-time"},
		"a brake share of 1":    {mod: func(s *policy.Settings) { s.Failure.BrakeShare = 1 }},
		"a brake share of 0":    {mod: func(s *policy.Settings) { s.Failure.BrakeShare = 0 }, refused: "--brake-share"},
		"a brake window of 0":   {mod: func(s *policy.Settings) { s.Failure.BrakeWindow = 0 }, refused: "--brake-window"},
		"a brake window of 1h":  {mod: func(s *policy.Settings) { s.Failure.BrakeWindow = time.Hour }, refused: "--brake-window"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := &OperatorOptions{MetricsAddr: "0", ProbeAddr: "0", APIQPS: 1, APIBurst: 1, LogLevel: "info", Settings: defaultSettings}
			tc.mod(&o.Settings)
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
