//go:build unix

package e2e

// Hostile files (docs/security.md, "Files in a shared directory"): what a
// local user can plant at the name of an output in a directory others
// write to (/tmp). Each test plants it for real and runs the real binary:
// a link is never followed (its target, a root-only file, stays as it
// was), a FIFO never blocks a process (every run is bounded), a predictable
// temporary name is never used, another user's file in a sticky directory
// is refused before the test, and an existing file keeps its mode.

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/server"
)

// rootOnly is a file only root may read, outside the attacked directory,
// and its content.
func rootOnly(t *testing.T) (path, content string) {
	t.Helper()
	path, content = filepath.Join(t.TempDir(), "secret"), "root only\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, content
}

// untouched fails the test unless path still holds content.
func untouched(t *testing.T, path, content, what string) {
	t.Helper()
	if b, err := os.ReadFile(path); err != nil || string(b) != content {
		t.Errorf("%s: the link's target now holds %q (%d bytes, %v), want %q", what, b[:min(len(b), 80)], len(b), err, content)
	}
}

// TestHostileClientFiles: a symbolic link (to a root-only file) or a FIFO
// planted at the client's --output, --textfile or -O name, or at the -O
// name of its second Test Connection, ends the run before the test with
// exit 75 and what is at the name, against a real server; the link's
// target stays as it was. The FIFO cases export every datagram (-O +),
// more than a pipe holds: a FIFO at -O used to block the client once the
// pipe was full; runQuick kills a run after 30 s, which fails the test.
func TestHostileClientFiles(t *testing.T) {
	processTest(t)
	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
	secret, content := rootOnly(t)
	dir := t.TempDir()
	link := func(p string) error { return os.Symlink(secret, p) }
	fifo := func(p string) error { return syscall.Mkfifo(p, 0o666) }
	for _, c := range []struct {
		name  string
		plant func(string) error
		at    string   // the planted name, in dir
		args  []string // {} is dir
		want  string
	}{
		{"output link", link, "r.json", []string{"--output", "{}/r.json"}, "is a symbolic link (--output)"},
		{"textfile link", link, "u.prom", []string{"--textfile", "{}/u.prom"}, "is a symbolic link (--textfile)"},
		{"export link", link, "x.csv", []string{"-O", "{}/x.csv"}, "is a symbolic link (-O)"},
		{"export FIFO", fifo, "y.csv", []string{"-O", "+{}/y.csv"}, "is a FIFO (-O)"},
		{"second connection's export FIFO", fifo, "z_1.csv", []string{"-C", "2", "-O", "+{}/z_#i.csv"}, "is a FIFO (-O)"},
	} {
		if err := c.plant(filepath.Join(dir, c.at)); err != nil {
			t.Fatal(err)
		}
		args := []string{udpstpBin, "client", "-d", "-t", "5", "-I", "10", "-p", fmt.Sprint(port), "127.0.0.1"}
		for _, a := range c.args {
			args = append(args, strings.ReplaceAll(a, "{}", dir))
		}
		code, out, errs := runQuick(t, nil, args...)
		if code != 75 || !strings.Contains(out, c.want) || strings.Contains(out, "Sub-Interval[") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 75 and %q before the test", c.name, code, out, errs, c.want)
		}
		untouched(t, secret, content, c.name)
		if fi, err := os.Lstat(filepath.Join(dir, c.at)); err != nil || fi.Mode().IsRegular() {
			t.Errorf("%s: the planted name was replaced: %v, %v", c.name, fi.Mode(), err)
		}
	}
}

// TestHostileServerFiles: -G's start-up check used to open NAME.tmp with
// O_TRUNC, truncating whatever a planted link there pointed to; now a link
// at NAME.tmp is left alone (the server starts and writes NAME), and a
// link or FIFO at the -G or -l name itself is refused at start, exit 75,
// naming what is there.
func TestHostileServerFiles(t *testing.T) {
	processTest(t)
	secret, content := rootOnly(t)
	dir := t.TempDir()
	stats := filepath.Join(dir, "stats.json")
	if err := os.Symlink(secret, stats+".tmp"); err != nil {
		t.Fatal(err)
	}
	port := freePort(t, "127.0.0.1")
	cmd := exec.Command(udpstpBin, "server", "-p", fmt.Sprint(port), "-G", stats, "127.0.0.1")
	cmd.Env = append(os.Environ(), server.EnvStatsTiming+"=200ms,1s")
	p := startServerProc(t, cmd, true)
	p.stopAtCleanup(t, "udpstp")
	untouched(t, secret, content, "-G with a link at NAME.tmp")
	await.True(t, "the -G file", func() bool { _, err := os.Stat(stats); return err == nil })
	untouched(t, secret, content, "-G's first file written")
	if fi, err := os.Lstat(stats + ".tmp"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the planted NAME.tmp link is gone: %v", err)
	}

	for _, c := range []struct {
		opt   []string
		plant func(string) error
		want  string
	}{
		{[]string{"-G"}, func(p string) error { return os.Symlink(secret, p) }, "is a symbolic link (--stats-file/-G)"},
		{[]string{"-G"}, func(p string) error { return syscall.Mkfifo(p, 0o666) }, "is a FIFO (--stats-file/-G)"},
		{[]string{"-x", "-l"}, func(p string) error { return os.Symlink(secret, p) }, "is a symbolic link (--log-file/-l)"},
		{[]string{"-x", "-l"}, func(p string) error { return syscall.Mkfifo(p, 0o666) }, "is a FIFO (--log-file/-l)"},
	} {
		name := filepath.Join(t.TempDir(), "planted")
		if err := c.plant(name); err != nil {
			t.Fatal(err)
		}
		args := append([]string{udpstpBin, "server", "-p", fmt.Sprint(freePort(t, "127.0.0.1"))}, c.opt...)
		code, out, errs := runQuick(t, nil, append(args, name, "127.0.0.1")...)
		// A server that wrongly started in the background is stopped.
		var pid int
		if _, err := fmt.Sscanf(out+errs, "udpstp: server running in the background, process %d", &pid); err == nil && pid > 0 {
			syscall.Kill(pid, syscall.SIGTERM)
		}
		if code != 75 || !strings.Contains(errs, c.want) {
			t.Errorf("%v %s: exit %d, %q; want 75 and %q", c.opt, c.want, code, errs, c.want)
		}
		untouched(t, secret, content, fmt.Sprint(c.opt))
	}
}

// TestHostileStickyDirectory: in a sticky directory (mode 1777, as /tmp) a
// result file owned by another user used to make the final rename fail
// for an unprivileged client: the test ran to its end, the result vanished
// and the client exited 75 while its JSON said ErrorStatus 0. Now the run
// is refused before the test: exit 75 (OB-UDPST's FOPEN ERROR status),
// ErrorStatus 75 in the JSON, no Sub-Interval, the other user's file as it
// was. The client runs as nobody (uid 65534), the file is uid 54321's.
func TestHostileStickyDirectory(t *testing.T) {
	processTest(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: a file given to another user, a client run as nobody")
	}
	base := t.TempDir()
	// nobody must reach the binary and the directory: t.TempDir's are 0700.
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(base, "udpstp")
	b, err := os.ReadFile(udpstpBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	sticky := filepath.Join(base, "shared")
	if err := os.Mkdir(sticky, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	result := filepath.Join(sticky, "result.json")
	if err := os.WriteFile(result, []byte("theirs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(result, 54321, 54321); err != nil {
		t.Fatal(err)
	}
	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")

	cmd := exec.Command(bin, "client", "-f", "json", "-d", "-t", "5", "-I", "10", "-p", fmt.Sprint(port),
		"--output", result, "127.0.0.1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	run := runCmd(cmd, 60*time.Second)
	if run.err != nil {
		t.Fatal(run.err)
	}
	out, code := []byte(run.stdout), run.code
	var r testResult
	if jerr := json.Unmarshal(out, &r); jerr != nil {
		t.Fatalf("exit %d, output is not JSON: %v\n%s", code, jerr, out)
	}
	if code != 75 || r.ErrorStatus != 75 || !strings.Contains(r.ErrorMessage, "owned by another user in a sticky directory") ||
		len(r.Output.IncrementalResult) != 0 {
		t.Errorf("exit %d, ErrorStatus %d %q, %d Sub-Intervals; want 75, 75, the sticky directory named, none",
			code, r.ErrorStatus, r.ErrorMessage, len(r.Output.IncrementalResult))
	}
	if b, _ := os.ReadFile(result); string(b) != "theirs\n" {
		t.Errorf("their file now holds %q", b)
	}
}

// TestHostileModeKept: a result file, an export file and a textfile that
// exist with mode 0600 are still 0600 after a real test writes them (the
// result file and the textfile used to come back 0644).
func TestHostileModeKept(t *testing.T) {
	e2e(t)
	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
	dir := t.TempDir()
	result, export, textfile := filepath.Join(dir, "r.json"), filepath.Join(dir, "x.csv"), filepath.Join(dir, "u.prom")
	for _, f := range []string{result, export, textfile} {
		if err := os.WriteFile(f, []byte("old\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r, code, out := ourClient(t, "-d", "-t", "5", "-I", "10", "-p", fmt.Sprint(port), "--output", result, "-O", export,
		"--textfile", textfile, "127.0.0.1")
	if code != 0 {
		t.Fatalf("exit %d %q\n%s", code, r.ErrorMessage, out)
	}
	for _, f := range []string{result, export, textfile} {
		fi, err := os.Stat(f)
		if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() <= int64(len("old\n")) {
			t.Errorf("%s: %v, %v; want 0600 and the new content", f, fi.Mode(), err)
		}
	}
}
