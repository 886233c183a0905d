// Package bench keeps a benchmark's figures as data: each with its unit and, where the
// benchmark states one, its target, printed as measured and written as JSON at the end.
// In benchmark mode (HOLDFAST_BENCH_DIR set, as the Makefile's bench targets set it) a
// missed target fails the run; elsewhere, as in the CI's timed tests, figures are only
// printed, since timing depends on the machine.
package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// DirEnv names the directory the reports are written to, one file each; set, it puts the
// run in benchmark mode.
const DirEnv = "HOLDFAST_BENCH_DIR"

// Figure is one measurement.
type Figure struct {
	Name string `json:"name"`
	// Value is nil when the thing measured did not happen within the run.
	Value *float64 `json:"value"`
	Unit  string   `json:"unit,omitempty"`
	// Target is the most Value may be; nil for none.
	Target *float64 `json:"target,omitempty"`
	// Met says whether Target held, or, for a check with no value, whether it passed.
	Met     *bool  `json:"met,omitempty"`
	Note    string `json:"note,omitempty"`
	Command string `json:"command,omitempty"`
}

// Of is a figure of value in unit.
func Of(name string, value float64, unit string) Figure {
	return Figure{Name: name, Value: &value, Unit: unit}
}

// Check is a figure that is a yes or no, a miss when no.
func Check(name string, ok bool) Figure {
	return Figure{Name: name, Met: &ok}
}

// AtMost gives f its target, and judges it.
func (f Figure) AtMost(target float64) Figure {
	met := f.Value != nil && *f.Value <= target
	f.Target, f.Met = &target, &met
	return f
}

// With gives f its note.
func (f Figure) With(note string) Figure {
	f.Note = note
	return f
}

// By gives f the command that measures it.
func (f Figure) By(command string) Figure {
	f.Command = command
	return f
}

// String is the figure as printed: name, value with unit, target and whether it held.
func (f Figure) String() string {
	s := fmt.Sprintf("%-60s ", f.Name)
	switch {
	case f.Value != nil:
		s += fmt.Sprintf("%.4g %s", *f.Value, f.Unit)
	case f.Target == nil && f.Met != nil:
		s += map[bool]string{true: "yes", false: "no"}[*f.Met]
	case f.Target != nil:
		s += "never (not within the run)"
	}
	if f.Target != nil {
		s += fmt.Sprintf(" (target at most %.4g %s: %s)", *f.Target, f.Unit, map[bool]string{true: "met", false: "MISSED"}[*f.Met])
	}
	if f.Note != "" {
		s += "; " + f.Note
		if f.Value == nil && f.Met == nil {
			s = fmt.Sprintf("%-60s %s", f.Name, f.Note)
		}
	}
	if f.Command != "" {
		s += " [" + f.Command + "]"
	}
	return s
}

// Report is one benchmark's figures.
type Report struct {
	Benchmark string   `json:"benchmark"`
	Command   string   `json:"command"`
	Figures   []Figure `json:"figures"`
}

// Add records f and prints it.
func (r *Report) Add(t testing.TB, f Figure) {
	t.Helper()
	r.Figures = append(r.Figures, f)
	t.Log("FIGURE " + f.String())
}

// Finish writes the report to HOLDFAST_BENCH_DIR/<benchmark>.json and, in benchmark
// mode, fails t with every missed target.
func (r *Report) Finish(t testing.TB) {
	t.Helper()
	dir := os.Getenv(DirEnv)
	if dir == "" {
		return
	}
	for _, f := range r.Figures {
		if f.Met != nil && !*f.Met {
			t.Errorf("missed: %s", f)
		}
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, r.Benchmark+".json")
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("figures written to %s", path)
}

// Go records the figures of a Go benchmark after its b.Loop (which runs the benchmark's
// function once, so these are its final figures): its time per operation in unit (s or
// ms), with a target when target > 0, and each of extra. The report is named after the
// benchmark, run by command.
func Go(b *testing.B, command, unit string, target float64, extra ...Figure) {
	b.Helper()
	per := b.Elapsed().Seconds() / float64(b.N)
	if unit == "ms" {
		per *= 1000
	}
	f := Of("time per operation", per, unit)
	if target > 0 {
		f = f.AtMost(target)
	}
	r := &Report{Benchmark: "go-" + strings.ReplaceAll(b.Name(), "/", "-"), Command: command}
	r.Add(b, f)
	for _, e := range extra {
		r.Add(b, e)
	}
	r.Finish(b)
}

// CPUTime is the CPU time the process has spent so far, on every thread (the garbage
// collector's included): a figure a busy machine stretches far less than wall time.
func CPUTime() (time.Duration, error) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, fmt.Errorf("reading the process's CPU time: %w", err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), nil
}
