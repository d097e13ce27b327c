package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A binary built as the Makefile builds it names the version and commit it
// was given, in `udpstp version`, --version and -V alike.
func TestVersionFromLinker(t *testing.T) {
	processTest(t)
	bin := filepath.Join(t.TempDir(), "udpstp")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v7.8.9-test -X main.commit=0123456789abcdef0123", "-o", bin, ".")
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
