package validate

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// changelogRelease is CHANGELOG.md's latest release heading, read here as
// the root package udpstp reads it for a `go build` binary.
func changelogRelease(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^## (v[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?)(?:[ \t]|$)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("CHANGELOG.md has no release heading")
	}
	return string(m[1])
}

// contrib/release/version gives the release from CHANGELOG.md in a copy of
// the tree without .git (a fresh clone has no tag either), and the release
// plus the commit in this checkout; debversion makes a Debian version that
// starts with the release of either.
func TestReleaseVersion(t *testing.T) {
	release := changelogRelease(t)
	script, err := filepath.Abs("../release/version")
	if err != nil {
		t.Fatal(err)
	}

	copyDir := t.TempDir()
	b, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(copyDir, "CHANGELOG.md"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(dir string) string {
		cmd := exec.Command("sh", script)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("version in %s: %v: %s", dir, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := run(copyDir); got != release {
		t.Errorf("version without .git = %q, want %q", got, release)
	}
	if got := debversion(t, release); got != strings.TrimPrefix(release, "v") {
		t.Errorf("debversion %q = %q, want the release", release, got)
	}

	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed: checked the copy without .git only")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Run(); err != nil {
		t.Skipf("%s is not a git checkout: checked the copy without .git only", root)
	}
	got := run(root)
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(release) + `(\+[0-9a-f]{7,40}(\.dirty)?|\+dirty)?$`).MatchString(got) {
		t.Errorf("version in the checkout = %q, want %s[+COMMIT[.dirty]]", got, release)
	}
	if deb := debversion(t, got); !strings.HasPrefix(deb, strings.TrimPrefix(release, "v")) {
		t.Errorf("debversion %q = %q, want it to start with the release", got, deb)
	}

	// A copy inside another checkout is not a commit of udpstp.
	outer := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", outer).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	inner := filepath.Join(outer, "udpstp")
	if err := os.MkdirAll(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inner, "CHANGELOG.md"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := run(inner); got != release {
		t.Errorf("version of a copy inside another checkout = %q, want %q", got, release)
	}
}
