package engine

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocListsFiles holds the package comment's list of files to the
// directory: every name or pattern it gives matches a file, and every
// source file (tests aside) is named or matched, so a move cannot leave it
// stale.
func TestDocListsFiles(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`[a-z_*]+\.go`).FindAllString(string(doc), -1)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{"doc.go": true}
	for _, n := range names {
		matched := false
		for _, f := range files {
			if ok, _ := filepath.Match(n, f); ok && !strings.HasSuffix(f, "_test.go") {
				matched, listed[f] = true, true
			}
		}
		if !matched {
			t.Errorf("doc.go names %s, which matches no file", n)
		}
	}
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") && !listed[f] {
			t.Errorf("%s is missing from doc.go's list of files", f)
		}
	}
}
