package validate

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pathWithout is a directory of links to every command on PATH but the
// ones named: a PATH that lacks them and has everything else.
func pathWithout(t *testing.T, drop ...string) string {
	t.Helper()
	dir := t.TempDir()
	skip := map[string]bool{}
	for _, d := range drop {
		skip[d] = true
	}
	for _, p := range filepath.SplitList(os.Getenv("PATH")) {
		entries, err := os.ReadDir(p)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if skip[e.Name()] {
				continue
			}
			// The first of a name on PATH wins, as for the shell.
			_ = os.Symlink(filepath.Join(p, e.Name()), filepath.Join(dir, e.Name()))
		}
	}
	return dir
}

// runIn runs name args in the repository's root with PATH set to path and
// returns its combined output and whether it succeeded.
func runIn(t *testing.T, path, name string, args ...string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "PATH="+path)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %v did not end: %s", name, args, out)
	}
	return string(out), err == nil
}

// make test checks its prerequisites first: without systemd-analyze (which
// its last step, make systemd-check, needs) it stops at once, before any
// other step, with the apt-get line that installs it.
func TestPrereqStopsMakeTest(t *testing.T) {
	for _, tool := range []string{"make", "sh", "go", "sed", "sort"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: cannot run make test's check", tool)
		}
	}
	path := pathWithout(t, "systemd-analyze")
	makeBin, _ := exec.LookPath("make")

	out, ok := runIn(t, path, "sh", ".ci/prereq")
	if ok || !strings.Contains(out, "systemd-analyze") || !strings.Contains(out, "apt-get install systemd") {
		t.Errorf(".ci/prereq without systemd-analyze: ok %v, output:\n%s", ok, out)
	}

	out, ok = runIn(t, path, makeBin, "test")
	if ok {
		t.Fatalf("make test without systemd-analyze succeeded:\n%s", out)
	}
	if !strings.Contains(out, "apt-get install systemd") {
		t.Errorf("make test without systemd-analyze does not say how to install it:\n%s", out)
	}
	for _, step := range []string{"gofmt", "go vet", "staticcheck", "go test"} {
		if strings.Contains(out, step) {
			t.Errorf("make test ran %q before stopping:\n%s", step, out)
		}
	}

	// With every tool there, the check passes and names what is optional.
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze not installed here: the check's passing run is not tried")
	}
	if _, err := os.Stat("/bin/kill"); err != nil {
		t.Skip("/bin/kill missing here: the check's passing run is not tried")
	}
	out, ok = runIn(t, os.Getenv("PATH"), "sh", ".ci/prereq")
	if !ok || !strings.Contains(out, "make test has what it needs") {
		t.Errorf(".ci/prereq with its tools: ok %v, output:\n%s", ok, out)
	}
	// An optional tool missing is listed, not fatal.
	out, ok = runIn(t, pathWithout(t, "fish"), "sh", ".ci/prereq")
	if !ok || !strings.Contains(out, "fish (") {
		t.Errorf(".ci/prereq without fish: ok %v, output:\n%s", ok, out)
	}
}
