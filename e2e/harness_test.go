package e2e

// The process harness: the binary built once, and every process a test
// starts (ours, OB-UDPST's, Prometheus, dnsmasq) started, watched,
// stopped and reaped the same way. A test never sleeps to let a process
// get somewhere: it waits for a line, a bound port or a condition, and
// every wait is bounded.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/server"
)

// udpstpBin is the binary under test, built once by TestMain.
var udpstpBin string

// buildFlags are go build's flags for udpstpBin: this test binary's build
// tags (portable_test.go), so that the processes run the same code.
var buildFlags []string

// The binary's exit statuses (cmd/udpstp/main.go's), as a script sees
// them.
const (
	exitConfig  = server.ExitConfig
	exitKeyFile = 51
	exitInit    = server.ExitInit
)

// mainPkg is the package of the binary under test.
const mainPkg = "github.com/udpstp/udpstp/cmd/udpstp"

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "udpstp-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	udpstpBin = filepath.Join(dir, "udpstp")
	out, err := exec.Command("go", append(append([]string{"build"}, buildFlags...), "-o", udpstpBin, mainPkg)...).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building udpstp: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	parallelBeside()
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// parallelBeside lets processTest tests run beside the e2e slots' tests:
// -parallel defaults to GOMAXPROCS, 2 on CI, the number of slots, so
// without it a test that mostly waits (an agent's schedule, a browser,
// a stopped PostgreSQL) would wait for a slot's worth of real tests. An
// explicit -parallel is kept.
func parallelBeside() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(cap(e2eSlots)+4))
	}
}

// e2eSlots bounds how many real tests run at once: each pushes up to about
// a gigabit through loopback, and these machines have two cores.
var e2eSlots = make(chan struct{}, 2)

// e2e marks a test that runs real tests at speed: it runs in parallel,
// in one of the two slots, and not with -short.
func e2e(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: real 5 s tests (skipped with -short)")
	}
	t.Parallel()
	e2eSlots <- struct{}{}
	t.Cleanup(func() { <-e2eSlots })
}

// processTest marks a test that starts processes but moves little data
// (agents, DNS, stores; real tests at a fixed low rate): it runs in
// parallel, without a slot, and not with -short.
func processTest(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
}

// freePort returns a UDP port nothing listens on right now, on the given
// loopback address.
func freePort(t testing.TB, host string) int {
	t.Helper()
	c, err := net.ListenPacket("udp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Skipf("no %s loopback here: %v", host, err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// freeTCPPort returns a TCP port nothing listens on right now on
// 127.0.0.1.
func freeTCPPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// procOpts say how start watches a process and how it ends it.
type procOpts struct {
	name  string // in messages; argv[0]'s base name when empty
	merge bool   // standard output's lines go to the log too (our server, an agent)

	// Readiness, checked in this order; start returns once each one
	// given holds, and fails the test if the process exits first or
	// await.Deadline (readyWithin, if set) passes.
	ready       string                // a log line containing this
	readyUDP    int                   // the process has this UDP port bound (waitBound)
	readyCond   func() (bool, string) // this holds; the string says why not
	readyWithin time.Duration

	// At the end of the test, a process that still runs gets stop
	// (SIGKILL when nil) and, grace later (8 s when 0), SIGKILL; with
	// strict, that SIGKILL fails the test.
	stop   os.Signal
	grace  time.Duration
	strict bool
}

// proc is a process under test: its output as lines, its exit.
type proc struct {
	cmd  *exec.Cmd
	name string
	opts procOpts

	mu      sync.Mutex
	logs    *stream       // standard error's lines (and standard output's when merged)
	stdout  *stream       // standard output's (the log itself when merged)
	changed chan struct{} // closed and replaced when a line comes or the process ends
	started time.Time
	ended   time.Time
	err     error         // Wait's
	done    chan struct{} // closed once it exited and its output is all in
}

// stream is one output of a process: what it wrote, and its lines.
type stream struct {
	raw   bytes.Buffer
	lines []string
	at    []time.Time // when each line came
}

// lineWriter splits what a process writes into lines on s.
type lineWriter struct {
	p       *proc
	s       *stream
	partial []byte
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	w.s.raw.Write(b)
	w.partial = append(w.partial, b...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.s.lines = append(w.s.lines, string(w.partial[:i]))
		w.s.at = append(w.s.at, time.Now())
		w.partial = w.partial[i+1:]
	}
	w.p.notifyLocked()
	return len(b), nil
}

// flush adds the last line, one without its newline.
func (w *lineWriter) flush() {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	if len(w.partial) > 0 {
		w.s.lines = append(w.s.lines, string(w.partial))
		w.s.at = append(w.s.at, time.Now())
		w.partial = nil
	}
}

func (p *proc) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// start starts cmd (its Env, Dir, ExtraFiles, Stdin as the caller set
// them; a Stdout or Stderr the caller set, a terminal say, is left alone
// and not captured) and waits until it is ready as o says. It is reaped,
// and stopped if it still runs, when the test ends.
func start(t testing.TB, cmd *exec.Cmd, o procOpts) *proc {
	t.Helper()
	p := &proc{cmd: cmd, name: o.name, opts: o, changed: make(chan struct{}), done: make(chan struct{}), logs: &stream{}}
	if p.name == "" {
		p.name = filepath.Base(cmd.Path)
		if len(cmd.Args) > 0 {
			p.name = filepath.Base(cmd.Args[0])
		}
	}
	p.stdout = p.logs
	if !o.merge {
		p.stdout = &stream{}
	}
	var writers []*lineWriter
	if cmd.Stdout == nil {
		w := &lineWriter{p: p, s: p.stdout}
		cmd.Stdout, writers = w, append(writers, w)
	}
	if cmd.Stderr == nil {
		w := &lineWriter{p: p, s: p.logs}
		cmd.Stderr, writers = w, append(writers, w)
	}
	// A child that keeps our pipes open (a daemon) does not hold the
	// reaping beyond this.
	cmd.WaitDelay = 5 * time.Second
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", p.name, err)
	}
	go func() {
		err := cmd.Wait()
		for _, w := range writers {
			w.flush()
		}
		p.mu.Lock()
		p.err, p.ended = err, time.Now()
		p.mu.Unlock()
		close(p.done)
		p.mu.Lock()
		p.notifyLocked() // after done: a waiter woken sees the exit
		p.mu.Unlock()
	}()
	t.Cleanup(func() { p.cleanup(t) })
	p.awaitReady(t)
	return p
}

// cleanup ends the process at the end of the test as its opts say.
func (p *proc) cleanup(t testing.TB) {
	if !p.running() {
		return
	}
	grace := p.opts.grace
	if grace == 0 {
		grace = 8 * time.Second
	}
	if p.opts.stop != nil && p.opts.stop != os.Kill {
		p.cmd.Process.Signal(p.opts.stop)
		if p.waitExit(grace) {
			return
		}
		if p.opts.strict {
			t.Errorf("%s did not stop within %v of %v", p.name, grace, p.opts.stop)
		}
	}
	p.cmd.Process.Kill()
	<-p.done
}

// awaitReady waits for what o asks, failing the test (the process
// killed) if it exits before or the wait runs out.
func (p *proc) awaitReady(t testing.TB) {
	t.Helper()
	within := p.opts.readyWithin
	if within == 0 {
		within = await.Deadline
	}
	fail := func(what string) {
		t.Helper()
		p.kill()
		t.Fatalf("%s not ready (%s):\n%s%s", p.name, what, p.log(), p.output())
	}
	if p.opts.ready != "" {
		if p.findLine(p.opts.ready, within) == "" {
			fail(fmt.Sprintf("no line %q; %s", p.opts.ready, p.state()))
		}
	}
	if p.opts.readyUDP != 0 {
		if !await.Within(within, func() bool { return !p.running() || boundUDP(p.cmd.Process.Pid, p.opts.readyUDP) }) || !p.running() {
			fail(fmt.Sprintf("UDP port %d not bound; %s", p.opts.readyUDP, p.state()))
		}
	}
	if p.opts.readyCond != nil {
		detail := ""
		ok := await.Within(within, func() bool {
			var ok bool
			ok, detail = p.opts.readyCond()
			return ok || !p.running()
		})
		if !ok || !p.running() {
			fail(fmt.Sprintf("%s; %s", detail, p.state()))
		}
	}
}

// state says whether the process runs, or how it ended.
func (p *proc) state() string {
	if p.running() {
		return "it runs"
	}
	return fmt.Sprintf("it exited: %v", p.exitErr())
}

// waitFor waits up to within for cond, checking it again whenever the
// process writes a line or ends; it reports whether cond held.
func (p *proc) waitFor(within time.Duration, cond func() bool) bool {
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		p.mu.Lock()
		ch := p.changed
		p.mu.Unlock()
		if cond() {
			return true
		}
		if !p.running() {
			return false // no line will come
		}
		select {
		case <-ch:
		case <-timer.C:
			return cond()
		}
	}
}

// findLine returns the first log line containing s, waiting up to within
// for one; "" if none came.
func (p *proc) findLine(s string, within time.Duration) string {
	p.waitFor(within, func() bool { return p.line(s) != "" })
	return p.line(s)
}

// waitOutput waits up to within for a line of standard output containing
// s, and fails the test if none came.
func (p *proc) waitOutput(t testing.TB, s string, within time.Duration) string {
	t.Helper()
	p.waitFor(within, func() bool { return lineWith(p.output(), s) != "" })
	l := lineWith(p.output(), s)
	if l == "" {
		t.Fatalf("%s never printed %q (%s):\n%s%s", p.name, s, p.state(), p.output(), p.errors())
	}
	return l
}

// line returns the first log line containing s, or "".
func (p *proc) line(s string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.logs.lines {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// log is the process's log: its standard error's lines (and its
// standard output's, merged).
func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.logs.lines, "\n")
}

// output is what the process wrote on its standard output.
func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.raw.String()
}

// outputLines are the lines of the process's standard output, and when
// each came.
func (p *proc) outputLines() ([]string, []time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.stdout.lines...), append([]time.Time(nil), p.stdout.at...)
}

// errors is what the process wrote on its standard error (with its
// standard output, merged).
func (p *proc) errors() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.raw.String()
}

// running says whether the process has not been reaped yet.
func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// waitExit waits up to within for the process to exit, and says whether
// it did (it still runs otherwise).
func (p *proc) waitExit(within time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(within):
		return false
	}
}

// exit waits up to within for the process to exit and returns its exit
// status; one that still runs is killed and fails the test.
func (p *proc) exit(t testing.TB, within time.Duration) int {
	t.Helper()
	if !p.waitExit(within) {
		p.kill()
		t.Fatalf("%s still ran %v later: killed\n%s%s", p.name, within, p.log(), p.output())
	}
	return p.exitCode()
}

// stop sends sig and waits for the exit (8 s, then a kill that fails the
// test); it returns the exit status.
func (p *proc) stop(t testing.TB, sig os.Signal) int {
	t.Helper()
	p.signal(t, sig)
	return p.exit(t, 8*time.Second)
}

// signal sends sig to the process, which must still run.
func (p *proc) signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to %s: %v", sig, p.name, err)
	}
}

// kill kills the process if it runs, and waits until it is reaped.
func (p *proc) kill() {
	p.cmd.Process.Kill()
	<-p.done
}

// exitCode is the exit status once the process has exited (-1 for a
// signal), -1 before.
func (p *proc) exitCode() int {
	if p.running() {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// exitErr is Wait's error once the process has exited.
func (p *proc) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// stopAtCleanup has the process interrupted (SIGINT) when the test ends
// if it still runs, and fails the test if it then takes more than 8 s to
// stop.
func (p *proc) stopAtCleanup(t testing.TB, name string) {
	p.name, p.opts.stop, p.opts.grace, p.opts.strict = name, os.Interrupt, 8*time.Second, true
}

// lineWith returns the first line of log that contains s, or "".
func lineWith(log, s string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// ourServerOpts watch our server: its output is its log, it is ready
// once it logs that it started, and it is interrupted when the test
// ends.
func ourServerOpts() procOpts {
	return procOpts{name: "udpstp server", merge: true, ready: "server started", stop: os.Interrupt}
}

// spawnServer starts a server (ours unless bin says otherwise) and waits
// until it answers; it is stopped with SIGINT when the test ends, and
// fails the test if it does not stop within 8 s.
func spawnServer(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	p := startServerProc(t, exec.Command(bin, args...), bin == udpstpBin)
	p.stopAtCleanup(t, filepath.Base(bin))
	return p
}

// startServerProc starts cmd, a server, with its standard error (and,
// for ours, its output) in the proc's log, and waits until it answers:
// ours logs that it started; udpst says nothing, so the wait is for its
// control socket (its -p). It is interrupted when the test ends.
func startServerProc(t *testing.T, cmd *exec.Cmd, ours bool) *proc {
	t.Helper()
	if ours {
		return start(t, cmd, ourServerOpts())
	}
	return start(t, cmd, procOpts{name: "udpst server", readyUDP: portArg(t, cmd.Args), stop: os.Interrupt})
}

// startWatched starts cmd with its output (standard error, and standard
// output with it) as its log; it is killed when the test ends if it
// still runs.
func startWatched(t testing.TB, cmd *exec.Cmd) *proc {
	t.Helper()
	return start(t, cmd, procOpts{merge: true})
}

// spawnClient starts our client with args (text output on its standard
// output, kept apart from its standard error); it is killed when the test
// ends if it still runs.
func spawnClient(t *testing.T, args ...string) *proc {
	t.Helper()
	return start(t, exec.Command(udpstpBin, append([]string{"client"}, args...)...), procOpts{name: "udpstp client"})
}

// waitFirstSub waits until the client printed a Sub-Interval: its Data
// Phase runs.
func (p *proc) waitFirstSub(t *testing.T) {
	t.Helper()
	p.waitOutput(t, "Sub-Interval[", await.Deadline)
}

// waitClient waits for the client to end, at most await.Deadline (then
// it is killed), and says whether it did.
func (p *proc) waitClient() bool {
	if p.waitExit(await.Deadline) {
		return true
	}
	p.kill()
	return false
}

// portArg returns the value of -p in a server's arguments.
func portArg(t testing.TB, args []string) int {
	t.Helper()
	for i, a := range args[:len(args)-1] {
		if a == "-p" {
			if p, err := strconv.Atoi(args[i+1]); err == nil {
				return p
			}
		}
	}
	t.Fatalf("no -p port in %q", args)
	return 0
}

// boundUDP says whether process pid has a UDP socket bound to port. It
// reads /proc/PID/net/udp and udp6, which list the sockets of that
// process's network namespace, so it serves a server in a lab namespace
// too (ip netns exec execs the server under the same pid).
func boundUDP(pid, port int) bool {
	if runtime.GOOS != "linux" {
		// No /proc to look in: only udpst servers (UDPST_BIN) need this
		// off Linux, and their -p is taken as bound.
		return true
	}
	suffix := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"udp", "udp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			if fs := strings.Fields(line); len(fs) > 1 && strings.HasSuffix(fs[1], suffix) {
				return true
			}
		}
	}
	return false
}

// ran is a process run to its end by runCmd.
type ran struct {
	stdout, stderr string
	code           int   // the exit status; -1 for a signal
	err            error // why it did not run, or was killed at the limit
}

// runCmd runs cmd to its end, killing it after within, and returns its
// output and exit status. A non-zero exit is a status, not an error.
func runCmd(cmd *exec.Cmd, within time.Duration) ran {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var out, errs bytes.Buffer
	if cmd.Stdout == nil {
		cmd.Stdout = &out
	}
	if cmd.Stderr == nil {
		cmd.Stderr = &errs
	}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return ran{code: -1, err: err}
	}
	stop := context.AfterFunc(ctx, func() { cmd.Process.Kill() })
	err := cmd.Wait()
	killed := !stop()
	r := ran{stdout: out.String(), stderr: errs.String(), code: cmd.ProcessState.ExitCode()}
	var ee *exec.ExitError
	switch {
	case killed:
		r.err = fmt.Errorf("%s killed after %v", filepath.Base(cmd.Args[0]), within)
	case errors.As(err, &ee):
	case err != nil:
		r.err = err
	}
	return r
}

// runQuick runs args (args[0] the program) with env added, killed after
// 30 s (a hung one only), and returns its exit status, standard output
// and error.
func runQuick(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	r := runCmd(cmd, 30*time.Second)
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.code, r.stdout, r.stderr
}

// runClientProc runs a client to completion, killing it after 40 s, and
// returns its standard output and exit status; err says why it did not
// run at all.
func runClientProc(bin string, args ...string) (out []byte, code int, err error) {
	r := runCmd(exec.Command(bin, args...), 40*time.Second)
	return []byte(r.stdout), r.code, r.err
}

// runOutput runs cmd to its end (killed after 60 s, an error then) and
// returns its standard output, as exec.Cmd's Output does: a non-zero exit
// is an error too, with standard error in its text.
func runOutput(cmd *exec.Cmd) ([]byte, error) {
	r := runCmd(cmd, 60*time.Second)
	if r.err == nil && r.code != 0 {
		r.err = fmt.Errorf("exit status %d: %s", r.code, strings.TrimSpace(r.stderr))
	}
	return []byte(r.stdout), r.err
}
