//go:build e2e

// Package demo_test runs `hack/demo.sh` end to end, as `make demo` does, checks that its
// narration tells what the demo is there to show, and that the HTML report it writes
// renders a chart in a browser.
package demo_test

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/holdfast-dev/holdfast/test/e2e/framework"
)

// narration is what the demo must say, step by step: each pattern must match a line.
var narration = []struct{ step, pattern string }{
	{"1", `000-companion-per-node: bad.yaml [1-9]\d* findings, fixed.yaml 0`},
	{"1", `001-autoscaler-consolidation: bad.yaml [1-9]\d* findings, fixed.yaml 0`},
	{"1", `002-scheduler-packing: bad.yaml [1-9]\d* findings, fixed.yaml 0`},
	{"1", `003-single-replica-budget: bad.yaml [1-9]\d* findings, fixed.yaml 0`},
	{"1", `004-upgrade-mass-drain: bad.yaml [1-9]\d* findings, fixed.yaml 0`},
	{"1", `exit code 2 : the single-replica drain deadlock fails CI`},
	{"2", `is up with 6 nodes in 3 zones`},
	{"4", `(?m)^api-\S+ +1/1 +Running .* node-1 `},
	{"5", `HF008  3 of the 3 running pods of Deployment api are on node node-1`},
	{"6", `(?m)^STATUS: deployed$`},
	{"6", `the operator runs on this\n.*machine instead, as system:serviceaccount:holdfast-system:holdfast-operator`},
	{"6", `(?m)^storage-guard +N/A +1 +1 `},
	{"7", `drained and holding the budget: node-[56] since`},
	{"8", `node-1 \(exit 3\): node-1 prod/mysvc-\S+: PodDisruptionBudget prod/mysvc \(minAvailable 1\) .* never allows an eviction`},
	{"8", `node-2 \(exit 0\): Drained 1 of 1 node\(s\)`},
	{"8", `node-6 \(exit 0\): Drained 1 of 1 node\(s\)`},
	{"9", `Deployment/mysvc: Surging, 1 extra pod beside the 1 replica for the drain of node node-1`},
	{"9", `(?m)^node-1 +drained +1 `},
	{"9", `the Deployment was never written: generation \d+, 1 replica`},
	{"10", `(?m)^Rebalanced +api +kubernetes.io/hostname: 3 to 0 pods .* moves from kubernetes.io/hostname=node-1 \(3 pods\)`},
	{"10", `(?m)^Rebalanced +api +kubernetes.io/hostname: 2 to 0 pods .* moves from kubernetes.io/hostname=node-1 \(2 pods\)`},
	{"11", `mysvc Ready again on another node \d+ s after the crash`},
	{"11", `Deployment/mysvc: Recovering, 1 pod on lost node node-\d: 1 extra pod beside the 1 replica`},
	{"11", `is back: mysvc is at its 1 replica again, the extra pod gone`},
}

func TestDemo(t *testing.T) {
	root := framework.RepoRoot()
	bin := t.TempDir()
	build(t, root, filepath.Join(bin, "holdfast"), "./cmd/holdfast")
	testbed := os.Getenv("HOLDFAST_TESTBED")
	if testbed == "" {
		testbed = filepath.Join(bin, "testbed")
		build(t, filepath.Join(root, "hack", "testbed"), testbed, ".")
	}
	dir := filepath.Join(t.TempDir(), "demo")
	cmd := exec.Command(filepath.Join(root, "hack", "demo.sh"))
	cmd.Env = append(os.Environ(), "DEMO_DIR="+dir, "HOLDFAST="+filepath.Join(bin, "holdfast"), "HOLDFAST_TESTBED="+testbed)
	out, err := cmd.CombinedOutput()
	logs, _ := filepath.Glob(dir + "-logs/*.log")
	if err != nil {
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			t.Logf("%s:\n%s", l, b)
		}
		t.Fatalf("hack/demo.sh: %v\n%s", err, out)
	}
	text := regexp.MustCompile(`\x1b\[[0-9;]*m`).ReplaceAllString(string(out), "")
	t.Log(text)
	for _, n := range narration {
		if !regexp.MustCompile(n.pattern).MatchString(text) {
			t.Errorf("step %s: the narration has no line matching %q", n.step, n.pattern)
		}
	}

	m := regexp.MustCompile(`report: (\S+\.html)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("the demo does not print the path of its report")
	}
	report, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	// The drains never take a workload below its budget: the report's lowest points once
	// each workload was up. mysvc is surged, never dropped; platform has no budget but
	// holdfast drain paces it one pod at a time.
	for w, floor := range map[string]int{"DaemonSet storage/storage-agent": 5, "Deployment prod/api": 2, "Deployment prod/mysvc": 1, "Deployment prod/platform": 2} {
		m := regexp.MustCompile(">" + w + `<.*\n?.*>lowest (\d+) of (\d+) ready once up<`).FindSubmatch(report)
		if m == nil {
			t.Errorf("the report has no line for %s, or no lowest point", w)
			continue
		}
		if lowest, _ := strconv.Atoi(string(m[1])); lowest < floor {
			t.Errorf("%s: lowest %s of %s ready in the report, want at least %d", w, m[1], m[2], floor)
		}
	}
	screenshot(t, m[1])
}

func build(t *testing.T, dir, out, pkg string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

// screenshot opens the report in headless Chromium and checks the picture holds the
// chart: lines in at least four of the report's colours. Without Chromium the check is
// skipped, unless HOLDFAST_REQUIRE_BROWSER is set (CI installs Chromium and sets it).
func screenshot(t *testing.T, report string) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("HOLDFAST_REQUIRE_BROWSER") != "" {
			t.Fatal("HOLDFAST_REQUIRE_BROWSER is set and chromium is not on PATH")
		}
		t.Log("chromium is not on PATH: the report is not checked in a browser")
		return
	}
	png := filepath.Join(t.TempDir(), "report.png")
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--window-size=1100,900", "--screenshot="+png, "file://"+report)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	img := decode(t, png)
	// The first four colours of the timeline's palette, one per workload.
	colours := map[string]color.RGBA{
		"blue": {0x1f, 0x77, 0xb4, 0xff}, "red": {0xd6, 0x27, 0x28, 0xff},
		"green": {0x2c, 0xa0, 0x2c, 0xff}, "purple": {0x94, 0x67, 0xbd, 0xff},
	}
	counts := map[string]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			for name, c := range colours {
				if near(img.At(x, y), c) {
					counts[name]++
				}
			}
		}
	}
	t.Logf("screenshot %s: pixels per chart colour %v", png, counts)
	for name, n := range counts {
		if n < 100 {
			t.Errorf("the rendered report shows %d %s pixels: no chart line in that colour", n, name)
		}
	}
	if len(counts) < len(colours) {
		t.Errorf("the rendered report shows %d of the chart's %d colours", len(counts), len(colours))
	}
}

func decode(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decoding the screenshot: %v", err)
	}
	return img
}

// near reports whether c is within a small distance of want (anti-aliasing aside).
func near(c color.Color, want color.RGBA) bool {
	r, g, b, _ := c.RGBA()
	d := func(v uint32, w uint8) int { return abs(int(v>>8) - int(w)) }
	return d(r, want.R)+d(g, want.G)+d(b, want.B) < 24
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
