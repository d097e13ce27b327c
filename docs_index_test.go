package udpstp

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeMaxLines bounds the front page: what it is, install, the three
// things people do, links. The reference lives in docs/.
const readmeMaxLines = 300

// TestReadmeIsAFrontPage holds README.md to a front page that links the
// documentation's index.
func TestReadmeIsAFrontPage(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, want at most %d: move reference text to docs/", n, readmeMaxLines)
	}
	for _, want := range []string{"(docs/README.md)", "make test"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("README.md lacks %q", want)
		}
	}
}

// mdLink is a Markdown link's target, without its #fragment.
var mdLink = regexp.MustCompile(`\]\(([^)#\s]+)(?:#[^)\s]*)?\)`)

// TestDocsReachable walks the links from README.md and fails for a page in
// docs/ that no chain of links reaches, and for a link to a file that does
// not exist.
func TestDocsReachable(t *testing.T) {
	seen := map[string]bool{}
	queue := []string{"README.md"}
	for len(queue) > 0 {
		page := queue[0]
		queue = queue[1:]
		if seen[page] {
			continue
		}
		seen[page] = true
		b, err := os.ReadFile(page)
		if err != nil {
			t.Errorf("%s: %v", page, err)
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(withoutCode(string(b)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			p := filepath.Clean(filepath.Join(filepath.Dir(page), target))
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links %s, which does not exist", page, target)
				continue
			}
			if strings.HasSuffix(p, ".md") {
				queue = append(queue, p)
			}
		}
	}
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if !seen[d] {
			t.Errorf("%s is not reachable from README.md: link it from docs/README.md", d)
		}
	}
}

// withoutCode is a Markdown text without its fenced code blocks, where
// "](...)" is program output, not a link.
func withoutCode(text string) string {
	var out strings.Builder
	in := false
	for _, line := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if !in {
			out.WriteString(line)
		}
	}
	return out.String()
}
