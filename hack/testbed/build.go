package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// The pinned versions. The Kubernetes and etcd versions come from go.mod (etcd is the
// one k8s.io/kubernetes itself requires); kwok is installed as its own module.
const (
	kubernetesVersion = "v1.37.1"
	kwokModule        = "sigs.k8s.io/kwok"
	kwokVersion       = "v0.8.0"
)

//go:embed go.mod
var goMod []byte

//go:embed go.sum
var goSum []byte

// The kwok stages: nodes become Ready and keep a Lease, pods become Running and Ready,
// and deleted pods go away.
var kwokStages = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"kustomize/stage/pod/fast/pod-ready.yaml",
	"kustomize/stage/pod/fast/pod-complete.yaml",
	"kustomize/stage/pod/fast/pod-delete.yaml",
}

// binaries is a complete cached build.
type binaries struct {
	dir string
}

func (b binaries) kube() string { return filepath.Join(b.dir, "kube") }
func (b binaries) etcd() string { return filepath.Join(b.dir, "etcd") }
func (b binaries) kwok() string { return filepath.Join(b.dir, "kwok") }

// kubectl is a link to the kube binary: kubectl of the same release, for people and
// for tests that compare holdfast with kubectl.
func (b binaries) kubectl() string { return filepath.Join(b.dir, "kubectl") }
func (b binaries) stages() string  { return filepath.Join(b.dir, "kwok-stages.yaml") }

// cacheDir is keyed by everything that changes the binaries, so a second run never
// rebuilds and a version bump never reuses a stale build.
func cacheDir() (string, error) {
	root := os.Getenv("HOLDFAST_TESTBED_CACHE")
	if root == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("finding a cache folder (set HOLDFAST_TESTBED_CACHE): %w", err)
		}
		root = filepath.Join(base, "holdfast", "testbed")
	}
	h := sha256.New()
	for _, part := range [][]byte{goMod, goSum, []byte(kwokVersion), []byte(runtime.Version()), []byte(runtime.GOOS + runtime.GOARCH)} {
		h.Write(part)
		h.Write([]byte{0})
	}
	key := kubernetesVersion + "-" + hex.EncodeToString(h.Sum(nil))[:12]
	return filepath.Join(root, key), nil
}

// ensureBinaries returns the cached build, building it first if needed. A file lock
// lets parallel test binaries share one build instead of racing.
func ensureBinaries(ctx context.Context, src string, progress io.Writer) (binaries, error) {
	dir, err := cacheDir()
	if err != nil {
		return binaries{}, err
	}
	b := binaries{dir: dir}
	done := filepath.Join(dir, ".complete")
	if _, err := os.Stat(done); err == nil {
		return b, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return b, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return b, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return b, fmt.Errorf("locking %s: %w", dir, err)
	}
	if _, err := os.Stat(done); err == nil {
		return b, nil // another process built it while we waited
	}
	if _, err := os.Stat(filepath.Join(src, "cmd", "kube")); err != nil {
		return b, fmt.Errorf("the testbed is not built and %s is not the hack/testbed module folder (use --src)", src)
	}
	fmt.Fprintf(progress, "testbed: control plane %s, etcd and kwok %s are not cached; building into %s\n", kubernetesVersion, kwokVersion, dir)
	fmt.Fprintln(progress, "testbed: a cold build takes 5 to 15 minutes on 2 cores; later runs reuse it")
	start := time.Now()
	version := strings.TrimPrefix(kubernetesVersion, "v")
	major, minor, _ := strings.Cut(version, ".")
	minor, _, _ = strings.Cut(minor, ".")
	ldflags := strings.Join([]string{
		"-s -w",
		"-X k8s.io/component-base/version.gitVersion=" + kubernetesVersion,
		"-X k8s.io/component-base/version.gitMajor=" + major,
		"-X k8s.io/component-base/version.gitMinor=" + minor,
		"-X k8s.io/component-base/version.gitTreeState=clean",
		"-X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z",
	}, " ")
	steps := []struct {
		what string
		cmd  *exec.Cmd
	}{
		{"etcd", exec.CommandContext(ctx, "go", "build", "-v", "-ldflags=-s -w", "-o", b.etcd(), "./cmd/etcd")},
		{"kube-apiserver, kube-controller-manager and kube-scheduler", exec.CommandContext(ctx, "go", "build", "-v", "-ldflags="+ldflags, "-o", b.kube(), "./cmd/kube")},
		{"kwok", exec.CommandContext(ctx, "go", "install", "-v", "-ldflags=-s -w", kwokModule+"/cmd/kwok@"+kwokVersion)},
	}
	for _, step := range steps {
		step.cmd.Dir = src
		// Built as make builds holdfast (static, -trimpath), so that the packages both
		// build at the same versions (go.mod keeps them in step) are compiled once:
		// apimachinery, api and client-go among them.
		step.cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-mod=mod -trimpath", "CGO_ENABLED=0")
		fmt.Fprintf(progress, "testbed: building %s\n", step.what)
		if err := runWithProgress(step.cmd, progress); err != nil {
			return b, fmt.Errorf("building %s: %w", step.what, err)
		}
	}
	if err := os.Symlink("kube", b.kubectl()); err != nil && !os.IsExist(err) {
		return b, err
	}
	if err := writeStages(ctx, b.stages()); err != nil {
		return b, err
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		return b, err
	}
	fmt.Fprintf(progress, "testbed: built in %s\n", time.Since(start).Round(time.Second))
	return b, nil
}

// runWithProgress runs a `go build -v`, which names each package as it compiles it,
// and turns that into one progress line every few seconds.
func runWithProgress(cmd *exec.Cmd, progress io.Writer) error {
	out, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	var tail []string
	packages, last := 0, time.Now()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "go: downloading") || strings.Contains(line, ".go:") || strings.HasPrefix(line, "#") {
			tail = append(tail, line)
		} else {
			packages++
		}
		if time.Since(last) > 10*time.Second {
			fmt.Fprintf(progress, "testbed:   %d packages compiled, now %s\n", packages, line)
			last = time.Now()
		}
	}
	if err := cmd.Wait(); err != nil {
		if len(tail) > 20 {
			tail = tail[len(tail)-20:]
		}
		return fmt.Errorf("%w\n%s", err, strings.Join(tail, "\n"))
	}
	return nil
}

// writeStages concatenates kwok's stage files from its module into one config file.
func writeStages(ctx context.Context, path string) error {
	out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", kwokModule+"@"+kwokVersion).Output()
	if err != nil {
		return fmt.Errorf("locating the kwok module: %w", err)
	}
	var module struct{ Dir string }
	if err := json.Unmarshal(out, &module); err != nil || module.Dir == "" {
		return fmt.Errorf("locating the kwok module: no folder in %q", out)
	}
	var docs []string
	for _, stage := range kwokStages {
		data, err := os.ReadFile(filepath.Join(module.Dir, stage))
		if err != nil {
			return fmt.Errorf("reading kwok stage: %w", err)
		}
		docs = append(docs, strings.TrimSpace(string(data)))
	}
	return os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")+"\n"), 0o644)
}
