package validate

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// The repository's files, relative to this package's directory.
const (
	dockerfilePath = "../docker/Dockerfile"
	manifestPath   = "../kubernetes/daemonset.yaml"
	scrapePath     = "../prometheus/scrape.yml"
	socketUnitPath = "../systemd/udpstp.socket"
	makefilePath   = "../../Makefile"
	goModPath      = "../../go.mod"
)

func readFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(rel))
	if err != nil {
		t.Fatalf("reading %s: %v", rel, err)
	}
	return string(b)
}

// match returns the first submatch of re in the file, or fails.
func match(t *testing.T, rel, re string) string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(readFile(t, rel))
	if m == nil {
		t.Fatalf("%s: no line matches %s", rel, re)
	}
	return m[1]
}

// controlPort is the control port the socket unit listens on: the one
// port every deployment must open.
func controlPort(t *testing.T) int32 {
	t.Helper()
	p, err := strconv.ParseInt(match(t, socketUnitPath, `(?m)^ListenDatagram=(\d+)$`), 10, 32)
	if err != nil {
		t.Fatalf("%s: ListenDatagram: %v", socketUnitPath, err)
	}
	return int32(p)
}

// binPath is where `make build` writes the binary (the Makefile's BIN).
func binPath(t *testing.T) string {
	return match(t, makefilePath, `(?m)^BIN\s*:=\s*(\S+)\s*$`)
}

// goVersion is go.mod's go directive, major.minor (1.26).
func goVersion(t *testing.T) string {
	return match(t, goModPath, `(?m)^go (\d+\.\d+)(?:\.\d+)?\s*$`)
}
