//go:build scale

package scale

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// holdfastBin is the binary under test: HOLDFAST_BIN, or bin/holdfast of the repository
// (make build).
func holdfastBin() string {
	if b := os.Getenv("HOLDFAST_BIN"); b != "" {
		return b
	}
	return filepath.Join(framework.RepoRoot(), "bin", "holdfast")
}

// operatorProcess is `holdfast operator` run as its own process, so that its memory is
// its own and not the benchmark's.
type operatorProcess struct {
	cmd              *exec.Cmd
	exited           chan struct{}
	metrics, healthz string
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr() (string, error) {
	port, err := framework.FreePort()
	return fmt.Sprintf("127.0.0.1:%d", port), err
}

func startOperator(kubeconfig, logPath string) (*operatorProcess, error) {
	metrics, err := freeAddr()
	if err != nil {
		return nil, err
	}
	probes, err := freeAddr()
	if err != nil {
		return nil, err
	}
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(holdfastBin(), "operator", "--kubeconfig", kubeconfig, "--leader-elect=false",
		"--metrics-bind-address", metrics, "--metrics-secure=false", "--health-probe-bind-address", probes)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s operator: %w", holdfastBin(), err)
	}
	o := &operatorProcess{cmd: cmd, exited: make(chan struct{}), metrics: "http://" + metrics + "/metrics", healthz: "http://" + probes + "/readyz"}
	go func() { cmd.Wait(); log.Close(); close(o.exited) }()
	return o, nil
}

func (o *operatorProcess) stop() {
	o.cmd.Process.Signal(os.Interrupt)
	<-o.exited
}

// waitReady waits for /readyz, which passes once the operator's caches have synced.
func (o *operatorProcess) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-o.exited:
			return fmt.Errorf("the operator exited: %s", o.cmd.ProcessState)
		default:
		}
		if resp, err := http.Get(o.healthz); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("the operator was not ready within %s", timeout)
}

// memory is the operator's resident memory (now and at its peak) and Go heap in use.
type memory struct {
	rss, peak, heap float64 // bytes
}

func (m memory) String() string {
	return fmt.Sprintf("RSS %s (peak %s), Go heap %s", mb(m.rss), mb(m.peak), mb(m.heap))
}

func mb(b float64) string { return fmt.Sprintf("%.0f MB", b/1e6) }

func (o *operatorProcess) memory() (memory, error) {
	var m memory
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", o.cmd.Process.Pid))
	if err != nil {
		return m, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(fields[1], 64)
		switch fields[0] {
		case "VmRSS:":
			m.rss = kb * 1024
		case "VmHWM:":
			m.peak = kb * 1024
		}
	}
	m.heap, err = o.metric("go_memstats_heap_alloc_bytes")
	return m, err
}

// metric sums the samples of a metric family on the operator's endpoint.
func (o *operatorProcess) metric(name string) (float64, error) { return o.metricWhere(name, "") }

// metricWhere sums the samples of a metric family whose labels contain labels, such as
// `name="disruptionpolicy"`.
func (o *operatorProcess) metricWhere(name, labels string) (float64, error) {
	resp, err := http.Get(o.metrics)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sum, found := 0.0, false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) || (len(line) > len(name) && line[len(name)] != ' ' && line[len(name)] != '{') || !strings.Contains(line, labels) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("reading %q: %w", line, err)
		}
		sum, found = sum+v, true
	}
	if err := sc.Err(); err != nil && err != io.EOF {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("no %s on %s", name, o.metrics)
	}
	return sum, nil
}

func (o *operatorProcess) mustMemory(t *testing.T) memory {
	t.Helper()
	m, err := o.memory()
	if err != nil {
		t.Fatalf("reading the operator's memory: %v", err)
	}
	return m
}

func (o *operatorProcess) mustMetric(t *testing.T, name string) float64 {
	t.Helper()
	v, err := o.metric(name)
	if err != nil {
		t.Fatalf("reading the operator's metrics: %v", err)
	}
	return v
}

// queueTimes are a controller's reconciles so far: how many, and the seconds they spent
// waiting in its queue and working.
type queueTimes struct{ n, waited, worked float64 }

func (o *operatorProcess) queueTimes(controller string) (queueTimes, error) {
	var q queueTimes
	var err error
	label := fmt.Sprintf("name=%q", controller)
	for _, m := range []struct {
		name string
		into *float64
	}{{"workqueue_queue_duration_seconds_count", &q.n}, {"workqueue_queue_duration_seconds_sum", &q.waited}, {"workqueue_work_duration_seconds_sum", &q.worked}} {
		if *m.into, err = o.metricWhere(m.name, label); err != nil {
			return q, err
		}
	}
	return q, nil
}

// since describes the reconciles after before: how many, and their mean wait and work.
func (q queueTimes) since(before queueTimes) string {
	n := q.n - before.n
	if n == 0 {
		return "no reconciles"
	}
	ms := func(s float64) string { return fmt.Sprintf("%.0f ms", 1000*s/n) }
	return fmt.Sprintf("%.0f reconciles, mean %s queued and %s working", n, ms(q.waited-before.waited), ms(q.worked-before.worked))
}
