//go:build linux

package e2e

// The drain (docs/fleet.md), with real processes: the first SIGTERM
// stops admitting (code 13), turns /readyz to 503 and lets the running
// test finish with every Sub-Interval; a second SIGTERM stops at once;
// --drain-timeout bounds a test longer than it.

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/await"
)

// drainServer is a server under test with its notify socket and ports.
type drainServer struct {
	p      *proc
	nl     *notifyListener
	port   int // control port on 127.0.0.1
	readyz string
}

func startDrainServer(t *testing.T, extra ...string) *drainServer {
	t.Helper()
	s := &drainServer{nl: listenNotify(t), port: freePort(t, "127.0.0.1")}
	mport := freeTCPPort(t)
	s.readyz = fmt.Sprintf("http://127.0.0.1:%d/readyz", mport)
	args := append([]string{udpstpBin, "server", "-p", fmt.Sprint(s.port), "--metrics-listen", fmt.Sprintf("127.0.0.1:%d", mport)}, extra...)
	s.p = startService(t, []string{"NOTIFY_SOCKET=" + s.nl.path}, nil, append(args, "127.0.0.1")...)
	s.nl.waitFor(t, 0, "READY=1", is("READY=1"), await.Deadline)
	return s
}

// readiness is /readyz's status code, 0 when it does not answer.
func (s *drainServer) readiness() int {
	code, _, err := httpGet(s.readyz)
	if err != nil {
		return 0
	}
	return code
}

// waitRunning waits until the STATUS= line shows n running tests.
func (s *drainServer) waitRunning(t *testing.T, n int) {
	t.Helper()
	s.nl.waitFor(t, 0, fmt.Sprintf("a STATUS with %d running tests", n), func(m string) bool {
		return strings.HasPrefix(m, fmt.Sprintf("STATUS=running tests: %d ", n))
	}, await.Deadline)
}

// waitExit waits for the server to exit and returns its exit status.
func (s *drainServer) waitExit(t *testing.T, within time.Duration) int {
	t.Helper()
	return s.p.exit(t, within)
}

func (s *drainServer) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	s.p.signal(t, sig)
}

// TestDrainLetsRunningTestFinish: a test runs when the server gets
// SIGTERM. The server says STOPPING=1 and a STATUS= of the drain, /readyz
// turns from 200 to 503, a new client is refused with code 13 (ErrorStatus
// 113), the running test completes with ErrorStatus 0 and its
// Sub-Intervals, and the server then exits 0 by itself.
func TestDrainLetsRunningTestFinish(t *testing.T) {
	e2e(t)
	s := startDrainServer(t)
	if code := s.readiness(); code != http.StatusOK {
		t.Fatalf("/readyz of a serving server: %d, want 200", code)
	}
	running := clientInBackground("-d", "-t", "10", "-I", "@200", "-p", fmt.Sprint(s.port), "127.0.0.1")
	s.waitRunning(t, 1)

	from := len(s.nl.all())
	s.signal(t, syscall.SIGTERM)
	s.nl.waitFor(t, from, "STOPPING=1", is("STOPPING=1"), await.Deadline)
	s.nl.waitFor(t, from, "a STATUS of the drain", func(m string) bool {
		return strings.HasPrefix(m, "STATUS=draining: no new tests; 1 running")
	}, await.Deadline)
	await.True(t, "/readyz to say 503", func() bool { return s.readiness() == http.StatusServiceUnavailable })

	r, code, out := ourClient(t, "-d", "-t", "5", "-p", fmt.Sprint(s.port), "127.0.0.1")
	if want := 100 + int(control.SetupDraining); code != want || r.ErrorStatus != want ||
		!strings.Contains(r.ErrorMessage+r.ErrorMessage2, control.SetupCodeText(control.SetupDraining)) {
		t.Errorf("a client during the drain: exit %d, ErrorStatus %d %q; want %d\n%s", code, r.ErrorStatus, r.ErrorMessage, want, out)
	}

	var first clientRun
	select {
	case first = <-running:
	case <-time.After(40 * time.Second):
		t.Fatal("the running client did not end")
	}
	if first.err != nil {
		t.Fatalf("the running client: %v\n%s", first.err, first.out)
	}
	checkComplete(t, first.res, first.code, first.out, 10)
	if first.res.ErrorStatus != 0 {
		t.Errorf("the running client ended with ErrorStatus %d %q, want 0", first.res.ErrorStatus, first.res.ErrorMessage)
	}
	if code := s.waitExit(t, await.Deadline); code != 0 {
		t.Errorf("server exit status %d after its drain, want 0\n%s", code, s.p.log())
	}
	if log := s.p.log(); !strings.Contains(log, "drained: no test left") || strings.Contains(log, "cut short") {
		t.Errorf("server log does not say it drained:\n%s", log)
	}
}

// TestDrainSecondSignalStopsAtOnce: SIGTERM starts a drain; a second
// SIGTERM stops the server at once, cutting the test short (warning 9).
// SIGINT after SIGTERM does the same.
func TestDrainSecondSignalStopsAtOnce(t *testing.T) {
	for _, second := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(second.String(), func(t *testing.T) {
			e2e(t)
			s := startDrainServer(t)
			running := clientInBackground("-d", "-t", "30", "-I", "@200", "-p", fmt.Sprint(s.port), "127.0.0.1")
			s.waitRunning(t, 1)
			from := len(s.nl.all())
			s.signal(t, syscall.SIGTERM)
			s.nl.waitFor(t, from, "a STATUS of the drain", func(m string) bool { return strings.HasPrefix(m, "STATUS=draining") }, await.Deadline)
			s.signal(t, second)
			// Well before the 30 s test's end: the stop cuts it.
			if code := s.waitExit(t, await.Deadline); code != 0 {
				t.Errorf("server exit status %d, want 0", code)
			}
			checkCut(t, <-running, 30, "a server stopped twice")
			if !strings.Contains(s.p.log(), "second signal: stopping now") {
				t.Errorf("server log lacks the second signal:\n%s", s.p.log())
			}
		})
	}
}

// TestDrainTimeoutBoundsLongTest: a test longer than --drain-timeout is
// cut at the timeout (warning 9), and the server exits 0.
func TestDrainTimeoutBoundsLongTest(t *testing.T) {
	e2e(t)
	s := startDrainServer(t, "--drain-timeout", "6s")
	running := clientInBackground("-d", "-t", "30", "-I", "@200", "-p", fmt.Sprint(s.port), "127.0.0.1")
	s.waitRunning(t, 1)
	s.signal(t, syscall.SIGTERM)
	if code := s.waitExit(t, await.Deadline); code != 0 {
		t.Errorf("server exit status %d after its drain timeout, want 0", code)
	}
	checkCut(t, <-running, 30, "a server past its drain timeout")
	if !strings.Contains(s.p.log(), "drain timeout: the tests still running are cut short") {
		t.Errorf("server log lacks the drain timeout:\n%s", s.p.log())
	}
}

// checkCut checks that a client's test of secs seconds was cut short by
// its server: warning 9, fewer Sub-Intervals than the test's.
func checkCut(t *testing.T, c clientRun, secs int, what string) {
	t.Helper()
	if c.err != nil {
		t.Fatalf("client of %s: %v\n%s", what, c.err, c.out)
	}
	if n := len(c.res.Output.IncrementalResult); c.res.ErrorStatus != dataphase.WarnEndedEarly || n >= secs {
		t.Errorf("client of %s: ErrorStatus %d %q, %d Sub-Intervals; want warning %d and fewer than %d",
			what, c.res.ErrorStatus, c.res.ErrorMessage, n, dataphase.WarnEndedEarly, secs)
	}
}
