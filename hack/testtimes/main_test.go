package main

import (
	"strings"
	"testing"
)

func TestTimeline(t *testing.T) {
	events := `go: downloading something
{"Time":"2026-01-01T10:00:00Z","Action":"start","Package":"m/test/e2e/slow"}
{"Time":"2026-01-01T10:00:01Z","Action":"start","Package":"m/test/e2e/quick"}
{"Time":"2026-01-01T10:00:01Z","Action":"skip","Package":"m/test/e2e/framework","Elapsed":0}
{"Time":"2026-01-01T10:00:30Z","Action":"pass","Package":"m/test/e2e/quick","Test":"TestQuick","Elapsed":29}
{"Time":"2026-01-01T10:00:31Z","Action":"pass","Package":"m/test/e2e/quick","Elapsed":30}
{"Time":"2026-01-01T10:01:40Z","Action":"fail","Package":"m/test/e2e/slow","Test":"TestSlow/case","Elapsed":99}
{"Time":"2026-01-01T10:01:40Z","Action":"fail","Package":"m/test/e2e/slow","Test":"TestSlow","Elapsed":100}
{"Time":"2026-01-01T10:01:40Z","Action":"fail","Package":"m/test/e2e/slow","Elapsed":100}
`
	packages, tests, err := read(strings.NewReader(events))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	report(&out, packages, tests, 5)
	want := `2 packages: 2m10s of package time in 1m40s (1.3 at once on average)
   start   length      end  package
    0:00     1:40     1:40  test/e2e/slow  FAILED
    0:01     0:30     0:31  test/e2e/quick
slowest tests:
    1:40  test/e2e/slow TestSlow  FAILED
    0:29  test/e2e/quick TestQuick
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestBadEventNamesItsLine(t *testing.T) {
	_, _, err := read(strings.NewReader("{\"Action\":\"start\"}\n{not json\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "line 2:") {
		t.Errorf("got %v, want an error naming line 2", err)
	}
}
