package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/holdfast-dev/holdfast/internal/snapshot/snapshottest"
	"github.com/holdfast-dev/holdfast/test/bench"
)

// auditCLITargets are the most process CPU `holdfast audit -f all.yaml -o json` may take
// on one file of 10,000 Deployments and their budgets, by style: a third of what it took
// before the file was read on every core and flow style without yaml.v3 (4.6-5.4 s flow,
// 2.9-3.0 s block on the development machine, docs/performance.md). Seconds hold on that
// machine only: given the binary of the code before (HOLDFAST_BIN_BEFORE), the
// benchmark holds the ratio to it instead (beforeShare).
var auditCLITargets = map[snapshottest.Style]float64{snapshottest.Flow: 1.7, snapshottest.Block: 1.0}

// beforeShare is the most process CPU the audit may take, as a share of the code
// before's on the same machine, the two run in turns.
const beforeShare = 1.0 / 3

// maxRSSPerInputByte bounds the process's peak resident memory by the size of its input.
const maxRSSPerInputByte = 25

// BenchmarkAuditCLI runs `holdfast audit -f all.yaml -o json` as a user does: the binary
// as `make build` links it (HOLDFAST_BIN, or built here), one file of 10,000 Deployments
// and 10,000 PodDisruptionBudgets, the report written to a file. It reports the process's
// CPU time (user and system, every thread) and its peak resident memory, a run at a time;
// with HOLDFAST_BIN_BEFORE, the before binary's too, run in turns with it.
func BenchmarkAuditCLI(b *testing.B) {
	bin, before := holdfastBinary(b), os.Getenv("HOLDFAST_BIN_BEFORE")
	for _, style := range []snapshottest.Style{snapshottest.Flow, snapshottest.Block} {
		b.Run(style.String(), func(b *testing.B) {
			dir := b.TempDir()
			input, output := filepath.Join(dir, "all.yaml"), filepath.Join(dir, "report.json")
			data := snapshottest.Manifests(10_000, style)
			if err := os.WriteFile(input, data, 0o644); err != nil {
				b.Fatal(err)
			}
			var cpu, cpuBefore time.Duration
			var peak int64
			runs := 0
			for b.Loop() {
				if before != "" {
					b.StopTimer()
					c, _ := runAudit(b, before, input, output)
					cpuBefore += c
					b.StartTimer()
				}
				c, rss := runAudit(b, bin, input, output)
				cpu, peak, runs = cpu+c, max(peak, rss), runs+1
			}
			checkReport(b, output)
			perRun := cpu.Seconds() / float64(runs)
			b.ReportMetric(perRun, "cpu-s/op")
			b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MiB")
			command := "go test -run '^$' -bench AuditCLI ./internal/cli/"
			described := fmt.Sprintf("%.1f MB of YAML in %s style", float64(len(data))/1e6, style)
			figure := bench.Of("process CPU per run", perRun, "s").AtMost(auditCLITargets[style]).With(described)
			if before != "" {
				command = "HOLDFAST_BIN_BEFORE=" + before + " " + command
				figure = bench.Of("process CPU per run / the code before's", cpu.Seconds()/cpuBefore.Seconds(), "x").AtMost(beforeShare).
					With(fmt.Sprintf("%s; %.2f s against %.2f s", described, perRun, cpuBefore.Seconds()/float64(runs)))
			}
			bench.Go(b, command, "s", 0, figure,
				bench.Of("peak resident memory / input size", float64(peak)/float64(len(data)), "x").AtMost(maxRSSPerInputByte).
					With(fmt.Sprintf("%.0f MiB", float64(peak)/(1<<20))))
		})
	}
}

// runAudit runs the audit once and returns the CPU time and peak resident bytes of its
// process.
func runAudit(b *testing.B, bin, input, output string) (time.Duration, int64) {
	b.Helper()
	out, err := os.Create(output)
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(bin, "audit", "-f", input, "-o", "json")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	err = cmd.Run()
	// The file's few misconfigurations are findings: exit code 2, and nothing on stderr.
	if exit := (*exec.ExitError)(nil); !errors.As(err, &exit) || exit.ExitCode() != 2 || stderr.Len() > 0 {
		b.Fatalf("holdfast audit: %v, want exit code 2; stderr: %s", err, stderr.Bytes())
	}
	u := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), u.Maxrss << 10
}

// checkReport checks that the report is JSON with the findings and budgets of the file.
func checkReport(b *testing.B, path string) {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var report struct {
		Findings []json.RawMessage `json:"findings"`
		Budgets  []json.RawMessage `json:"budgets"`
	}
	if err := json.Unmarshal(data, &report); err != nil {
		b.Fatalf("the report is not JSON: %v", err)
	}
	if len(report.Findings) == 0 || len(report.Budgets) != 10_000 {
		b.Fatalf("the report has %d findings and %d budgets, want some and 10,000", len(report.Findings), len(report.Budgets))
	}
}

// holdfastBinary is HOLDFAST_BIN (make bench builds bin/holdfast first), or else the
// binary built here as `make build` builds it: static, as shipped.
func holdfastBinary(b *testing.B) string {
	b.Helper()
	if bin := os.Getenv("HOLDFAST_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(b.TempDir(), "holdfast")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/holdfast-dev/holdfast/cmd/holdfast")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
