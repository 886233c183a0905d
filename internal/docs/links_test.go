package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// link is a markdown link's target: [text](target).
	link = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// fence opens or closes a code block, whose text holds no links.
	fence = regexp.MustCompile("(?m)^\\s*```")
	// notSlug is what GitHub drops from a heading to make its anchor, after the text of
	// the links in it.
	notSlug    = regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
	headedLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// TestLinks checks every relative link of the repository's markdown files: the file it
// names exists and, for a markdown file, so does the heading its #anchor names. Pages
// move (docs/engineering); links must follow them.
func TestLinks(t *testing.T) {
	out, err := exec.Command("git", "-C", repo, "ls-files", "--cached", "--others", "--exclude-standard", "*.md").Output()
	if err != nil {
		t.Fatalf("listing the markdown files with git: %v", err)
	}
	anchors := map[string]map[string]bool{}
	for _, file := range strings.Fields(string(out)) {
		if strings.HasPrefix(file, "hack/cluster-autoscaler/") {
			continue // another project's source, kept as it is
		}
		data, err := os.ReadFile(filepath.Join(repo, file))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range links(string(data)) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := filepath.Join(repo, file)
			if path != "" {
				dest = filepath.Join(filepath.Dir(dest), path)
			}
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s: link %s: no such file", file, target)
				continue
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			if anchors[dest] == nil {
				anchors[dest] = headings(t, dest)
			}
			if !anchors[dest][anchor] {
				t.Errorf("%s: link %s: no heading with that anchor", file, target)
			}
		}
	}
}

// links returns the link targets of markdown text outside code blocks.
func links(text string) []string {
	var out []string
	for i, part := range fence.Split(text, -1) {
		if i%2 == 1 {
			continue
		}
		for _, m := range link.FindAllStringSubmatch(part, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// headings returns the anchors GitHub gives the headings of a markdown file.
func headings(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for i, part := range fence.Split(string(data), -1) {
		if i%2 == 1 {
			continue
		}
		for line := range strings.SplitSeq(part, "\n") {
			title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
			if !ok || !strings.HasPrefix(line, "#") {
				continue
			}
			title = headedLink.ReplaceAllString(title, "$1")
			slug := notSlug.ReplaceAllString(strings.ToLower(strings.TrimSpace(title)), "")
			out[strings.ReplaceAll(slug, " ", "-")] = true
		}
	}
	return out
}
