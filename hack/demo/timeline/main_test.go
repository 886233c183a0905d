package main

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Every row shares one values axis, so that a replica is as tall in each, and the time
// axis is labelled in minutes and seconds from the start.
func TestRenderAxes(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	end := start.Add(95 * time.Second)
	series := map[string][]sample{
		"Deployment prod/one":   {{start, 1, 1}, {end, 1, 1}},
		"Deployment prod/three": {{start, 3, 3}, {end, 3, 3}},
	}
	var buf bytes.Buffer
	if err := render(&buf, start, end, series, nil); err != nil {
		t.Fatal(err)
	}
	html := buf.String()

	// Each row's base line, then its ready line, which is flat here.
	bases := floats(t, regexp.MustCompile(`y1="([0-9.]+)" y2="[0-9.]+" stroke="#ddd"`), html)
	lines := floats(t, regexp.MustCompile(`<polyline [^>]*points="[0-9.]+,([0-9.]+)`), html)
	if len(bases) != 2 || len(lines) != 2 {
		t.Fatalf("%d base lines and %d ready lines, want 2 of each:\n%s", len(bases), len(lines), html)
	}
	one, three := bases[0]-lines[0], bases[1]-lines[1]
	if one <= 0 || three < 2.99*one || three > 3.01*one {
		t.Errorf("1 ready replica is %.1f tall and 3 are %.1f: the rows are not on one scale", one, three)
	}
	for _, label := range []string{">0<", ">3<"} {
		if strings.Count(html, `text-anchor="end">`+label[1:]) != 2 {
			t.Errorf("the values axis label %s is not on both rows", label)
		}
	}

	var got []string
	for _, m := range regexp.MustCompile(`class="tick" x="[0-9.]+" y="[0-9.]+" dy="16" text-anchor="middle">([0-9:]+)<`).FindAllStringSubmatch(html, -1) {
		got = append(got, m[1])
	}
	if want := []string{"0:00", "0:10", "0:20", "0:30", "0:40", "0:50", "1:00", "1:10", "1:20", "1:30"}; !slices.Equal(got, want) {
		t.Errorf("time axis %v, want %v", got, want)
	}
}

func floats(t *testing.T, re *regexp.Regexp, s string) []float64 {
	t.Helper()
	var fs []float64
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		f, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	return fs
}
