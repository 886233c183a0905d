package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestReport: a target is judged on Add, and Finish writes the report as data named
// after the benchmark.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(DirEnv, dir)
	r := &Report{Benchmark: "bench-x", Command: "make bench-x"}
	r.Add(t, Of("plan", 2.5, "s").AtMost(3))
	r.Add(t, Check("no budget below its floor", true))
	r.Add(t, Figure{Name: "set-up", Note: "in words"})
	r.Finish(t)
	data, err := os.ReadFile(filepath.Join(dir, "bench-x.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got Report
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Figures) != 3 || got.Figures[0].Met == nil || !*got.Figures[0].Met || *got.Figures[0].Target != 3 || got.Figures[2].Met != nil {
		t.Errorf("written %s", data)
	}
	if missed := Of("plan", 3.5, "s").AtMost(3); missed.String() == "" {
		t.Error("no text")
	}
	var tooSlow Report
	tooSlow.Add(t, Of("plan", 3.5, "s").AtMost(3))
	if *tooSlow.Figures[0].Met {
		t.Error("3.5 s met a target of 3 s")
	}
}
