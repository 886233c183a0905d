// Command testtimes says where a test run's time went, from the events `go test -json`
// (or gotestsum --jsonfile) wrote: when each package started and how long it took, in
// the order they started, how many ran at once on average, and the slowest tests. CI
// prints it after the end-to-end tests, so that the package that holds the run up is
// named, not guessed.
//
//	testtimes [-tests N] e2e.json
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// event is the part of a test2json event this reads.
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
}

// span is one package's or one test's run.
type span struct {
	name       string
	start, end time.Time
	elapsed    time.Duration
	failed     bool
}

func main() {
	tests := flag.Int("tests", 10, "how many of the slowest tests to list")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: testtimes [-tests N] EVENTS.json\n\nWhere a go test -json run's time went: each package's start and length, the slowest tests.")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "testtimes:", err)
		os.Exit(1)
	}
	defer f.Close()
	packages, slowest, err := read(f)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testtimes: %s: %v\n", flag.Arg(0), err)
		os.Exit(1)
	}
	report(os.Stdout, packages, slowest, *tests)
}

// read returns the packages in the order they started and the top-level tests, slowest
// first. A package's start is its first event; its end, the event that passes or fails it.
func read(r io.Reader) (packages, tests []span, err error) {
	byPackage := map[string]*span{}
	var order []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20) // a test's output line may be long
	for line := 1; sc.Scan(); line++ {
		if !strings.HasPrefix(sc.Text(), "{") {
			continue // go test's own lines, such as a build failure
		}
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", line, err)
		}
		if e.Package == "" {
			continue
		}
		p := byPackage[e.Package]
		if p == nil {
			p = &span{name: e.Package, start: e.Time}
			byPackage[e.Package] = p
			order = append(order, e.Package)
		}
		done := e.Action == "pass" || e.Action == "fail"
		switch {
		case e.Action == "skip" && e.Test == "":
			delete(byPackage, e.Package) // no test files
			order = slices.DeleteFunc(order, func(name string) bool { return name == e.Package })
		case done && e.Test == "":
			p.end, p.elapsed, p.failed = e.Time, seconds(e.Elapsed), e.Action == "fail"
		case done && !strings.Contains(e.Test, "/"):
			tests = append(tests, span{name: short(e.Package) + " " + e.Test, elapsed: seconds(e.Elapsed), failed: e.Action == "fail"})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	for _, name := range order {
		packages = append(packages, *byPackage[name])
	}
	slices.SortStableFunc(tests, func(a, b span) int { return cmp.Compare(b.elapsed, a.elapsed) })
	return packages, tests, nil
}

// report writes the timeline: the packages as they started, then the slowest tests.
func report(w io.Writer, packages, tests []span, n int) {
	if len(packages) == 0 {
		fmt.Fprintln(w, "no package ran")
		return
	}
	first, last := packages[0].start, packages[0].end
	var sum time.Duration
	for _, p := range packages {
		first, last = minTime(first, p.start), maxTime(last, p.end)
		sum += p.elapsed
	}
	wall := last.Sub(first)
	fmt.Fprintf(w, "%d packages: %s of package time in %s (%.1f at once on average)\n", len(packages), round(sum), round(wall), sum.Seconds()/max(wall.Seconds(), 1))
	fmt.Fprintf(w, "%8s %8s %8s  %s\n", "start", "length", "end", "package")
	for _, p := range packages {
		end := "-" // still running when the events stop: killed by a timeout
		if !p.end.IsZero() {
			end = clock(p.end.Sub(first))
		}
		fmt.Fprintf(w, "%8s %8s %8s  %s%s\n", clock(p.start.Sub(first)), clock(p.elapsed), end, short(p.name), failed(p.failed))
	}
	if n > 0 && len(tests) > 0 {
		fmt.Fprintf(w, "slowest tests:\n")
		for _, t := range tests[:min(n, len(tests))] {
			fmt.Fprintf(w, "%8s  %s%s\n", clock(t.elapsed), t.name, failed(t.failed))
		}
	}
}

// short drops the module's path from a package, which every package here shares.
func short(pkg string) string {
	if i := strings.Index(pkg, "/test/"); i >= 0 {
		return pkg[i+1:]
	}
	if i := strings.Index(pkg, "/internal/"); i >= 0 {
		return pkg[i+1:]
	}
	return pkg
}

func failed(f bool) string {
	if f {
		return "  FAILED"
	}
	return ""
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func round(d time.Duration) time.Duration { return d.Round(time.Second) }

// clock writes d as minutes and seconds, m:ss.
func clock(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
