package e2e

// Files are checked before the test: the client's --output, --textfile, -O
// and -E, the server's -G and -l, each refused before a packet is sent,
// with the reason, however the path is wrong (missing, through a file, a
// directory, on a read-only file system).

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// badPaths are file names that cannot be written, each with what the
// message must say.
func badPaths(t *testing.T) map[string]string {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		filepath.Join(dir, "missing", "f"): "no such file or directory",
		filepath.Join(plain, "f"):          "not a directory",
		dir:                                "is a directory",
	}
}

// TestClientFilesCheckedFirst: a client whose --output, -O or -E cannot be
// used exits 75 at once, with the reason as its one report line, having
// sent nothing: pointed at a port where nothing answers, it never waits
// for (or warns of) a Setup Response.
func TestClientFilesCheckedFirst(t *testing.T) {
	processTest(t)
	port := freePort(t, "127.0.0.1") // nothing listens: a Setup Request would time out
	paths := badPaths(t)
	type tc struct {
		args []string
		want string
	}
	var cases []tc
	for p, why := range paths {
		cases = append(cases,
			tc{[]string{"--output", p}, why + " (--output)"},
			tc{[]string{"-O", p}, why + " (-O)"})
	}
	cases = append(cases, tc{[]string{"-E", "udpstp-none9"}, "OPEN ERROR: no such file or directory (/sys/class/net/udpstp-none9/statistics/rx_bytes)"})
	for _, c := range cases {
		args := append([]string{udpstpBin, "client", "-d", "-t", "5", "-p", fmt.Sprint(port), "127.0.0.1"}, c.args...)
		code, out, errs := runQuick(t, nil, args...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		last := lines[len(lines)-1]
		// Standard error has the error line too (a terminal shows it when
		// the report goes to a file), and nothing else.
		if code != 75 || !strings.Contains(last, c.want) || strings.Contains(out, "Timeout") || errs != "udpstp: "+last+"\n" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 75 and %q on both, nothing sent", c.args, code, out, errs, c.want)
		}
	}
	// With -f json the reason is in the document.
	code, out, _ := runQuick(t, nil, udpstpBin, "client", "-d", "-f", "json", "-p", fmt.Sprint(port), "127.0.0.1", "--output", filepath.Join(t.TempDir(), "x", "r.json"))
	if code != 75 || !strings.Contains(out, `"ErrorStatus":75,"ErrorMessage":"FOPEN ERROR: cannot create a file in `) {
		t.Errorf("json: exit %d: %s", code, out)
	}
}

// TestServerFilesCheckedFirst: -G and -l are refused before the server
// listens, for each kind of bad path; the ones that would pass are fine.
func TestServerFilesCheckedFirst(t *testing.T) {
	processTest(t)
	paths := badPaths(t)
	for p, why := range paths {
		port := freePort(t, "127.0.0.1")
		for _, c := range [][]string{{"-G", p}, {"-x", "-l", p}} {
			args := append([]string{udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1"}, c...)
			code, _, errs := runQuick(t, nil, args...)
			if code != 75 || !strings.Contains(errs, "FOPEN ERROR") || !strings.Contains(errs, why) {
				t.Errorf("%q: exit %d, %q; want 75, FOPEN ERROR, %q", c, code, errs, why)
			}
		}
	}
}

// TestFilesOnReadOnlyFileSystem: root may write into any directory, so the
// one that refuses even root is a read-only mount, made in a mount
// namespace of the test's own (unshare).
func TestFilesOnReadOnlyFileSystem(t *testing.T) {
	processTest(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and unshare(1) for a read-only mount")
	}
	ro := t.TempDir()
	port := freePort(t, "127.0.0.1")
	for _, c := range []struct {
		args []string
		out  bool // the reason is on standard output (the client's report)
	}{
		{[]string{"client", "-d", "-p", fmt.Sprint(port), "127.0.0.1", "--output", ro + "/r.json"}, true},
		{[]string{"client", "-d", "-p", fmt.Sprint(port), "127.0.0.1", "-O", ro + "/x_#i.csv"}, true},
		{[]string{"client", "-d", "-p", fmt.Sprint(port), "127.0.0.1", "--textfile", ro + "/udpstp.prom"}, true},
		{[]string{"server", "-p", fmt.Sprint(port), "127.0.0.1", "-G", ro + "/stats.json"}, false},
		{[]string{"server", "-p", fmt.Sprint(port), "127.0.0.1", "-x", "-l", ro + "/log"}, false},
	} {
		script := fmt.Sprintf("mount -t tmpfs -o ro udpstp-ro %s && exec %s %s", ro, udpstpBin, strings.Join(c.args, " "))
		code, out, errs := runQuick(t, nil, unshare, "--mount", "--propagation", "private", "sh", "-c", script)
		msg := errs
		if c.out {
			msg = out
		}
		if code != 75 || !strings.Contains(msg, "read-only file system") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 75 and a read-only file system", c.args, code, out, errs)
		}
	}
}
