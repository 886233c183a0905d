package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// component is one process of the testbed, as recorded in DIR/state.json so that
// down stops exactly what up started.
type component struct {
	Name   string   `json:"name"`
	Binary string   `json:"binary"`
	Args   []string `json:"args"`
	// Env is added to the launcher's environment.
	Env []string `json:"env,omitempty"`
	PID int      `json:"pid"`
	Log string   `json:"log"`
}

// state is DIR/state.json.
type state struct {
	Components []component `json:"components"`
	Kubeconfig string      `json:"kubeconfig"`
	Server     string      `json:"server"`
	// Finalizer is the pod finalizer's URL, whose /crashed testbed crash and restore read.
	Finalizer string `json:"finalizer,omitempty"`
}

func statePath(dir string) string { return filepath.Join(dir, "state.json") }

func (s state) save(dir string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(statePath(dir), data, 0o644)
}

func loadState(dir string) (state, error) {
	var s state
	data, err := os.ReadFile(statePath(dir))
	if err != nil {
		return s, fmt.Errorf("no testbed in %s: %w", dir, err)
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("reading %s: %w", statePath(dir), err)
	}
	return s, nil
}

// start runs c in its own process group, so that a Ctrl-C aimed at a test run does not
// reach it half-way, with its output in its log file. The returned channel is closed
// when the process exits while this launcher is still alive.
func start(c *component) (<-chan struct{}, error) {
	logFile, err := os.OpenFile(c.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(c.Binary, c.Args...)
	if len(c.Env) > 0 {
		cmd.Env = append(os.Environ(), c.Env...)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", c.Name, err)
	}
	c.PID = cmd.Process.Pid
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		logFile.Close()
		close(exited)
	}()
	return exited, nil
}

// alive reports whether c's pid is still the process up started: a pid can be reused
// after the process dies, so the executable must match too.
func alive(c component) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", c.PID))
	if err != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.PID))
	if err == nil {
		// A zombie has exited; only its parent has not collected it yet.
		if fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(fields) > 0 && fields[0] == "Z" {
			return false
		}
	}
	return strings.TrimSuffix(exe, " (deleted)") == c.Binary
}

// stop sends SIGTERM, then SIGKILL if the process has not gone within grace.
func stop(c component, grace time.Duration) error {
	if !alive(c) {
		return nil
	}
	if err := syscall.Kill(c.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stopping %s (pid %d): %w", c.Name, c.PID, err)
	}
	deadline := time.Now().Add(grace)
	for alive(c) {
		if time.Now().After(deadline) {
			syscall.Kill(c.PID, syscall.SIGKILL)
			deadline = time.Now().Add(grace)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// logTail returns the last n lines of a component's log, for crash reports.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const window = 64 << 10
	if info, err := f.Stat(); err == nil && info.Size() > window {
		f.Seek(info.Size()-window, io.SeekStart)
	}
	data, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// crashReport names a dead component and shows the end of its log.
func crashReport(c component) error {
	return fmt.Errorf("%s (pid %d) exited; the end of %s:\n%s", c.Name, c.PID, c.Log, logTail(c.Log, 25))
}

func status(dir string, out io.Writer) error {
	s, err := loadState(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "kubeconfig: %s\nserver:     %s\n", s.Kubeconfig, s.Server)
	var dead []error
	for _, c := range s.Components {
		st := "running"
		if !alive(c) {
			st = "exited"
			dead = append(dead, crashReport(c))
		}
		fmt.Fprintf(out, "%-24s pid %-8d %s\n", c.Name, c.PID, st)
	}
	return errors.Join(dead...)
}

func down(dir string) error {
	s, err := loadState(dir)
	if err != nil {
		return err
	}
	// Stop in reverse start order: kwok and the controllers before the API server,
	// the API server before etcd.
	var errs []error
	for i := len(s.Components) - 1; i >= 0; i-- {
		if err := stop(s.Components[i], 10*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return os.RemoveAll(dir)
}
