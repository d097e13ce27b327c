//go:build linux

package e2e

// Key reload (docs/security.md, "Key file reload"): SIGHUP at a key file
// caught half-written keeps the keys in use and logs one line for the
// whole episode of failed reloads.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/await"
)

// TestReloadHalfWrittenKeyFile: a real server with -K gets SIGHUP five
// times at a key file that is half-written or malformed (a key cut
// without a line end, a last line cut, a duplicate ID, a line of one
// token, a key cut at a line end to the start of the one in use); each
// reload is awaited through its RELOADING=1 ... READY=1 on the notify
// socket. The old key still authenticates a client; the reload of the
// finished file then puts the new key in use and counts the five, and
// the log holds one failure line for them.
func TestReloadHalfWrittenKeyFile(t *testing.T) {
	processTest(t)
	keys := filepath.Join(t.TempDir(), "keys")
	const old = "old-key-0123456789abcdef"
	if err := os.WriteFile(keys, []byte("1,"+old+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nl := listenNotify(t)
	port := freePort(t, "127.0.0.1")
	p := startService(t, []string{"NOTIFY_SOCKET=" + nl.path}, nil, udpstpBin, "server", "-K", keys, "-p", fmt.Sprint(port), "127.0.0.1")
	next := nl.waitFor(t, 0, "READY=1", is("READY=1"), await.Deadline) + 1
	reload := func(content string) {
		t.Helper()
		if err := os.WriteFile(keys, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		p.signal(t, syscall.SIGHUP)
		i := nl.waitFor(t, next, "RELOADING=1", func(m string) bool { return strings.HasPrefix(m, "RELOADING=1") }, await.Deadline)
		next = nl.waitFor(t, i+1, "READY=1 after the reload", is("READY=1"), await.Deadline) + 1
	}
	for _, half := range []string{"1,old-key-01", "1," + old + "\n2,new", "1," + old + "\n1,again\n", "1," + old + "\n2\n", "1,old-key-01\n"} {
		reload(half)
	}
	if err := activateAt(port, old, 1); err != nil {
		t.Errorf("the key in use was refused after the half-written reloads: %v", err)
	}

	// The log is read from a pipe: once the success line is in, every line
	// before it is.
	reload("1," + old + "\n2,new-key-0123456789\n")
	p.waitLog(t, "key file reloaded", await.Deadline)
	if n := strings.Count(p.log(), "key file not reloaded"); n != 1 {
		t.Errorf("%d failure lines for one episode of 5 failed reloads, want 1:\n%s", n, p.log())
	}
	if line := lineWith(p.log(), "key file not reloaded"); !strings.Contains(line, "no line end") {
		t.Errorf("the failure line %q should give the first reload's reason", line)
	}
	if line := lineWith(p.log(), "key file reloaded"); !strings.Contains(line, "failed_reloads_before=5") {
		t.Errorf("the reload line %q should count the 5 failed reloads", line)
	}
	if err := activateAt(port, "new-key-0123456789", 2); err != nil {
		t.Errorf("the finished file's new key was refused: %v", err)
	}
}
