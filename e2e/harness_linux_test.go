//go:build linux

package e2e

// The harness's helpers that only the Linux-only tests (the service, the
// drain, the archive, the lab) use.

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// waitLine waits up to within for a log line containing s, and fails the
// test if none came.
func (p *proc) waitLine(t testing.TB, s string, within time.Duration) string {
	t.Helper()
	l := p.findLine(s, within)
	if l == "" {
		t.Fatalf("%s never logged %q (%s):\n%s", p.name, s, p.state(), p.log())
	}
	return l
}

// waitLog waits until the process has logged a line containing s.
func (p *proc) waitLog(t testing.TB, s string, timeout time.Duration) {
	t.Helper()
	p.waitLine(t, s, timeout)
}

// elapsed is how long the process ran (so far).
func (p *proc) elapsed() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended.IsZero() {
		return time.Since(p.started)
	}
	return p.ended.Sub(p.started)
}

// startService starts the binary with extra environment and descriptors
// and waits for its start-up line; the process is interrupted at the end
// of the test if it still runs, and killed 8 s later.
func startService(t *testing.T, env []string, files []*os.File, argv ...string) *proc {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.ExtraFiles = files
	return start(t, cmd, ourServerOpts())
}
