package operatorcli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

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
			o := &Options{MetricsAddr: "0", ProbeAddr: "0", APIQPS: 1, APIBurst: 1, LogLevel: "info", LoggingFormat: "text", Settings: policy.DefaultSettings}
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

// The runtime's soft memory limit is 90 % of the container's, unless GOMEMLIMIT chooses.
func TestOperatorMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	for name, tc := range map[string]struct {
		gomemlimit, limit string
		want              int64
		refused           bool
	}{
		"90 % of the limit":     {limit: "268435456", want: 241591860},
		"GOMEMLIMIT wins":       {gomemlimit: "100MiB", limit: "268435456", want: math.MaxInt64},
		"no limit given":        {want: math.MaxInt64},
		"not a number of bytes": {limit: "256Mi", refused: true},
		"zero":                  {limit: "0", refused: true},
	} {
		t.Run(name, func(t *testing.T) {
			// The unset limit; setMemoryLimit reads GOMEMLIMIT only from the environment.
			debug.SetMemoryLimit(math.MaxInt64)
			unsetOrSet(t, "GOMEMLIMIT", tc.gomemlimit)
			unsetOrSet(t, MemoryLimitEnv, tc.limit)
			err := setMemoryLimit()
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), MemoryLimitEnv) {
					t.Errorf("got %v, want a refusal naming %s", err, MemoryLimitEnv)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := debug.SetMemoryLimit(-1); got != tc.want {
				t.Errorf("soft memory limit %d, want %d", got, tc.want)
			}
		})
	}
}

// unsetOrSet sets the variable for the test, or unsets it when value is empty; either
// way it is restored after the test.
func unsetOrSet(t *testing.T, name, value string) {
	t.Setenv(name, value)
	if value == "" {
		if err := os.Unsetenv(name); err != nil {
			t.Fatal(err)
		}
	}
}

// loggingChild, set in the environment, makes TestOperatorLoggingFormat's child process
// apply that --logging-format and log, as the operator does: component-base's logging
// can be applied once per process only.
const loggingChild = "HOLDFAST_TEST_LOGGING_FORMAT"

// An unknown --logging-format is refused, naming the flag and the formats there are.
func TestOperatorValidateLoggingFormat(t *testing.T) {
	o := &Options{MetricsAddr: "0", ProbeAddr: "0", APIQPS: 1, APIBurst: 1, LogLevel: "info", LoggingFormat: "yaml",
		Settings: policy.DefaultSettings}
	err := o.Validate()
	if err == nil || err.Error() != `unknown --logging-format "yaml": use text or json` {
		t.Errorf("want a refusal naming --logging-format and the formats, got %v", err)
	}
}

// --logging-format=json makes klog's and controller-runtime's lines JSON objects, and
// text keeps klog's format; --log-level=debug lets V(4) through in both.
func TestOperatorLoggingFormat(t *testing.T) {
	if format := os.Getenv(loggingChild); format != "" {
		var stderr bytes.Buffer
		o := &Options{LoggingFormat: format, LogLevel: "debug", IOStreams: genericiooptions.IOStreams{Out: io.Discard, ErrOut: &stderr}}
		if err := o.applyLogging(); err != nil {
			t.Fatal(err)
		}
		klog.InfoS("Starting holdfast operator", "version", "v0.0.0-test")
		ctrl.Log.WithName("disruptionpolicy").V(4).Info("Decided", "policy", klog.KRef("shop", "web"))
		klog.Flush()
		fmt.Print(stderr.String())
		return
	}
	run := func(format string) []string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestOperatorLoggingFormat$")
		cmd.Env = append(os.Environ(), loggingChild+"="+format)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("--logging-format=%s: %v\n%s", format, err, out)
		}
		var lines []string
		for l := range strings.Lines(string(out)) {
			if strings.HasPrefix(l, "PASS") {
				break
			}
			lines = append(lines, strings.TrimSuffix(l, "\n"))
		}
		return lines
	}

	type line struct {
		Msg     string `json:"msg"`
		V       int    `json:"v"`
		Logger  string `json:"logger"`
		Version string `json:"version"`
		Policy  struct{ Name, Namespace string }
	}
	var got []line
	for _, l := range run("json") {
		var j line
		if err := json.Unmarshal([]byte(l), &j); err != nil {
			t.Fatalf("--logging-format=json wrote a line that is not JSON: %v\n%s", err, l)
		}
		got = append(got, j)
	}
	want := []line{
		{Msg: "Starting holdfast operator", Version: "v0.0.0-test"},
		{Msg: "Decided", V: 4, Logger: "disruptionpolicy", Policy: struct{ Name, Namespace string }{"web", "shop"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("--logging-format=json (-want +got):\n%s", diff)
	}

	text := run("text")
	if len(text) != 2 || !strings.HasSuffix(text[0], `] "Starting holdfast operator" version="v0.0.0-test"`) ||
		!strings.HasSuffix(text[1], `] "Decided" logger="disruptionpolicy" policy="shop/web"`) {
		t.Errorf("--logging-format=text wrote:\n%s", strings.Join(text, "\n"))
	}
}
