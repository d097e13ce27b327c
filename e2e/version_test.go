package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udpstp/udpstp"
)

// A binary built as the Makefile builds it names the version and commit it
// was given, in `udpstp version`, --version and -V alike.
func TestVersionFromLinker(t *testing.T) {
	processTest(t)
	bin := filepath.Join(t.TempDir(), "udpstp")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v7.8.9-test -X main.commit=0123456789abcdef0123", "-o", bin, mainPkg)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, arg := range []string{"version", "--version", "-V"} {
		out, err := exec.Command(bin, arg).CombinedOutput()
		if err != nil {
			t.Fatalf("udpstp %s: %v\n%s", arg, err, out)
		}
		for _, want := range []string{"udpstp v7.8.9-test\n", "Commit: 0123456789ab\n", "Go: go1."} {
			if !strings.Contains(string(out), want) {
				t.Errorf("udpstp %s: %q lacks %q", arg, out, want)
			}
		}
	}
}

// A copy of the tree without .git (a release archive, `git archive`, a
// container's build context) knows its release from CHANGELOG.md: `go
// build` and `make build` there both give a binary that says it, where
// before they said "devel" and "dev".
func TestVersionOfATreeWithoutGit(t *testing.T) {
	processTest(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	release, err := udpstp.Release()
	if err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(t.TempDir(), "udpstp")
	// cp -a of the tracked and new files, without .git and build output.
	if out, err := exec.Command("sh", "-c", `mkdir -p "$2" && cd "$1" && tar -c --exclude=./.git --exclude=./bin --exclude=./build --exclude=./demo-results . | tar -x -C "$2"`,
		"sh", root, tree).CombinedOutput(); err != nil {
		t.Fatalf("copying the tree: %v\n%s", err, out)
	}
	bin := filepath.Join(tree, "udpstp-go")
	// -trimpath and no cgo, as make build: the copy's packages then share
	// the build cache with make build's below (no path of the copy in
	// them), one compilation for both instead of two.
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/udpstp")
	build.Dir = tree
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	checkVersion(t, bin, release, "unknown (built without VCS information)")

	if _, err := exec.LookPath("make"); err != nil {
		t.Log("make not installed: checked go build only")
		return
	}
	mk := exec.Command("make", "build", "BIN=udpstp-make")
	mk.Dir = tree
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	checkVersion(t, filepath.Join(tree, "udpstp-make"), release, "unknown (built without VCS information)")
}

// checkVersion runs bin's version command and wants exactly version and
// the commit line given.
func checkVersion(t *testing.T, bin, version, commit string) {
	t.Helper()
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	for _, want := range []string{"udpstp " + version + "\n", "Commit: " + commit + "\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("%s version: %q lacks %q", filepath.Base(bin), out, want)
		}
	}
}
