package snapshot

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// parseOnCores parses data as a file named all.yaml with cores cores, and renders what it
// read: each object with its place, then every problem, warning and note, in order, as
// merge gives them once the objects are decoded.
func parseOnCores(t *testing.T, data []byte, cores int) []string {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(cores))
	r := parseFile(fileJob{name: "all.yaml", read: func() ([]byte, error) { return data, nil }}, ManifestOptions{}.withDefaults())
	var out []string
	for _, o := range r.objects {
		out = append(out, "object "+o.ref.String()+" at "+o.origin.String())
	}
	s, problems := merge([]fileResult{r})
	for _, p := range problems {
		out = append(out, "problem "+p.Error())
	}
	for _, p := range s.Warnings {
		out = append(out, "warning "+p.Error())
	}
	for _, p := range s.Skipped {
		out = append(out, "skipped "+p.Error())
	}
	return out
}

// largeFile is over minSplit of Deployments, with a broken document, an unknown field, a
// field of the wrong type, an object defined twice and a note scattered through it, and
// extra (which may hold aliases) after the first half and at the end.
func largeFile(extra string) []byte {
	var b strings.Builder
	for i := 0; b.Len() < 2*minSplit; i++ {
		if i == 3000 {
			b.WriteString("---\n" + extra)
		}
		fmt.Fprintf(&b, "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web-%d, namespace: shop}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web-%d}}\n", i, i)
		switch i % 997 {
		case 1:
			b.WriteString("---\nkind: [\n")
		case 2:
			b.WriteString("---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: odd}\nspec: {replicaz: 1}\n")
		case 3:
			b.WriteString("---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: typed}\nspec: {replicas: two}\n")
		case 4:
			b.WriteString("---\nreplicaCount: 1\n")
		}
	}
	b.WriteString("---\n" + extra)
	return []byte(b.String())
}

// TestLargeFileReadOnCoresAsInOne checks that a large file read on several cores gives
// what it gives on one: the same objects at the same lines, the same problems in order.
func TestLargeFileReadOnCoresAsInOne(t *testing.T) {
	data := largeFile("")
	one := parseOnCores(t, data, 1)
	if diff := cmp.Diff(one, parseOnCores(t, data, 4)); diff != "" {
		t.Errorf("on 4 cores (-one +four):\n%s", diff)
	}
	if parts := splitParts(splitYAML(data), len(data), 4); len(parts) != 4 {
		t.Errorf("cut into %d parts, want 4", len(parts))
	}
}

// aliases is a Deployment whose annotations repeat a string of size bytes n times.
func aliases(name string, size, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\n  annotations:\n    a0: &s %s\n", name, strings.Repeat("x", size))
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "    a%d: *s\n", i)
	}
	return b.String()
}

// TestLargeFileBudgetSpentInOrder checks that the parts of a file share its one budget:
// two documents of aliases that each take most of it are refused together, at the
// second, as when read on one core, though each part alone fits in the whole budget.
func TestLargeFileBudgetSpentInOrder(t *testing.T) {
	for name, extra := range map[string]string{
		"each fits, not both": aliases("big", 10_000, 1000),
		"one is too much":     aliases("huge", 10_000, 3000),
	} {
		t.Run(name, func(t *testing.T) {
			data := largeFile(extra)
			one := parseOnCores(t, data, 1)
			if len(one) != 1 || !strings.Contains(one[0], "expands past") {
				t.Fatalf("on one core, read %d things, want the refusal alone: %.300v", len(one), one)
			}
			if diff := cmp.Diff(one, parseOnCores(t, data, 4)); diff != "" {
				t.Errorf("on 4 cores (-one +four):\n%s", diff)
			}
		})
	}
}
