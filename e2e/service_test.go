//go:build linux

package e2e

// The server as a service, tested on the built binary (and, for the
// watchdog, in-process with a wedged Engine Thread: server/): sd_notify messages
// and their order on a real NOTIFY_SOCKET, SIGTERM and SIGHUP, the
// per-source Setup limit, the -G file, -x and the -l log file, socket
// activation, and the one-line errors before any socket is opened.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/enginenet"
	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/golden"
	"github.com/udpstp/udpstp/server"
)

// notifyListener is a NOTIFY_SOCKET: a unixgram socket that records every
// sd_notify message, one datagram each.
type notifyListener struct {
	path string
	conn *net.UnixConn
	mu   sync.Mutex
	msgs []string
	more chan struct{}
}

func listenNotify(t *testing.T) *notifyListener {
	t.Helper()
	// A short path: sun_path holds 108 bytes.
	dir, err := os.MkdirTemp("", "sdn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l := &notifyListener{path: filepath.Join(dir, "notify"), more: make(chan struct{}, 1)}
	l.conn, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: l.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.conn.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := l.conn.Read(buf)
			if err != nil {
				return
			}
			l.mu.Lock()
			l.msgs = append(l.msgs, string(buf[:n]))
			l.mu.Unlock()
			select {
			case l.more <- struct{}{}:
			default:
			}
		}
	}()
	return l
}

func (l *notifyListener) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}

// waitFor waits for a message, from the from-th on, that match accepts,
// and returns its index.
func (l *notifyListener) waitFor(t *testing.T, from int, what string, match func(string) bool, timeout time.Duration) int {
	t.Helper()
	deadline := time.After(timeout)
	for {
		msgs := l.all()
		for i := from; i < len(msgs); i++ {
			if match(msgs[i]) {
				return i
			}
		}
		select {
		case <-l.more:
		case <-deadline:
			t.Fatalf("no %s within %v; messages: %q", what, timeout, msgs)
		}
	}
}

func is(s string) func(string) bool { return func(m string) bool { return m == s } }

// clientRun is a client process run in the background.
type clientRun struct {
	code int
	res  testResult
	out  string
	err  error
}

func clientInBackground(args ...string) <-chan clientRun {
	ch := make(chan clientRun, 1)
	go func() {
		out, code, err := runClientProc(udpstpBin, append([]string{"client", "-f", "json"}, args...)...)
		r := clientRun{out: string(out), code: code, err: err}
		if r.err == nil {
			r.err = json.Unmarshal(out, &r.res)
		}
		ch <- r
	}()
	return ch
}

// activateAt sets up and activates one Test Connection on the server at
// port (with a key when key is not ""), then drops it: the server ends it
// after its 3 s watchdog. It tells whether the server let the client in.
// activations numbers activateAt's runs.
var activations atomic.Uint32

// activateAt runs one Control Phase against our server on loopback. Each
// call has an mcIdent of its own, as every client run draws one: two
// identical signed Setup Requests within a second are a replay to the
// server.
func activateAt(port int, key string, id uint8) error {
	cfg := control.DefaultClientConfig()
	cfg.TestIntTime = 5
	if key != "" {
		cfg.Key, cfg.KeyID = []byte(key), id
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ident := uint16(activations.Add(1))
	net, closeNet := enginenet.NewClient(enginenet.Options{Log: slog.New(slog.DiscardHandler)})
	defer closeNet()
	cc, err := control.Activate(ctx, net, &cfg, control.ServerAddr{Host: "127.0.0.1", Port: port}, 0, ident, func(string) {})
	if err != nil {
		return err
	}
	cc.Sock.Close()
	return nil
}

// TestServiceLifecycle: under a NOTIFY_SOCKET the server says READY=1
// first, then STATUS= lines that show a running test, feeds the watchdog,
// and on SIGTERM says STOPPING=1, ends the running test with the stop
// handshake (the client completes with status 0) and exits within 5 s,
// writing its -G file in OB-UDPST's schema on the way out. (With
// --drain-timeout 0: the drain's own test is drain_e2e_test.go.)
func TestServiceLifecycle(t *testing.T) {
	e2e(t)
	nl := listenNotify(t)
	port := freePort(t, "127.0.0.1")
	statsDir := t.TempDir()
	p := startService(t, []string{"NOTIFY_SOCKET=" + nl.path, "WATCHDOG_USEC=1000000", server.EnvStatsTiming + "=500ms,60s"}, nil,
		udpstpBin, "server", "--drain-timeout", "0", "-p", fmt.Sprint(port), "-G", filepath.Join(statsDir, "stats_%Y%m%d-%H%M%S.json"), "127.0.0.1")
	nl.waitFor(t, 0, "READY=1", is("READY=1"), await.Deadline)
	result := filepath.Join(t.TempDir(), "result.json")
	client := spawnClient(t, "-d", "-t", "10", "-p", fmt.Sprint(port), "--output", result, "127.0.0.1")
	nl.waitFor(t, 0, "a STATUS with the running test", func(m string) bool {
		return strings.HasPrefix(m, "STATUS=running tests: 1 (1 down, 0 up)")
	}, await.Deadline)
	nl.waitFor(t, 0, "WATCHDOG=1", is("WATCHDOG=1"), await.Deadline)
	client.waitFirstSub(t)

	sent := time.Now()
	p.signal(t, syscall.SIGTERM)
	nl.waitFor(t, 0, "STOPPING=1", is("STOPPING=1"), await.Deadline)
	if !p.waitExit(6 * time.Second) {
		t.Fatalf("server still running 6 s after SIGTERM:\n%s", p.log())
	}
	if err := p.exitErr(); err != nil {
		t.Errorf("server exit after SIGTERM: %v\n%s", err, p.log())
	}
	if d := time.Since(sent); d > 5*time.Second {
		t.Errorf("server took %v to exit after SIGTERM, bound 5 s", d)
	}
	// The stop handshake ends the test cleanly: its results stand, with
	// the warning that the server ended it early.
	if !client.waitClient() {
		t.Fatalf("client still running %v after its server stopped", await.Deadline)
	}
	var res testResult
	b, err := os.ReadFile(result)
	if err == nil {
		err = json.Unmarshal(b, &res)
	}
	if code := client.exitCode(); err != nil || code != dataphase.WarnEndedEarly || res.ErrorStatus != dataphase.WarnEndedEarly ||
		len(res.Output.IncrementalResult) < 1 || !strings.Contains(res.ErrorMessage, "ended early by the server") {
		t.Errorf("client of a stopped server: exit %d, ErrorStatus %d (%q), %d Sub-Intervals, err %v\n%s",
			code, res.ErrorStatus, res.ErrorMessage, len(res.Output.IncrementalResult), err, client.output())
	}

	// The order: READY=1 first, STATUS= after it, STOPPING=1 once and
	// after every STATUS=.
	msgs := nl.all()
	if len(msgs) == 0 || msgs[0] != "READY=1" {
		t.Errorf("first message %q, want READY=1; all: %q", msgs, msgs)
	}
	stopping, lastStatus := -1, -1
	for i, m := range msgs {
		switch {
		case m == "STOPPING=1":
			if stopping >= 0 {
				t.Errorf("STOPPING=1 sent twice")
			}
			stopping = i
		case strings.HasPrefix(m, "STATUS="):
			lastStatus = i
		case m == "READY=1":
			if i > 0 {
				t.Errorf("READY=1 again at message %d", i)
			}
		case m != "WATCHDOG=1":
			t.Errorf("unexpected message %q", m)
		}
	}
	if lastStatus < 0 || stopping < lastStatus {
		t.Errorf("STOPPING=1 at %d, last STATUS at %d: %q", stopping, lastStatus, msgs)
	}

	// The -G file, written at exit: OB-UDPST's schema, this run's figures.
	files, _ := filepath.Glob(filepath.Join(statsDir, "stats_*.json"))
	if len(files) != 1 {
		t.Fatalf("statistics files: %v", files)
	}
	b = readStatsFile(t, files[0])
	var doc struct {
		ProcessID   int `json:"process_id"`
		ControlPort int `json:"control_port"`
		Records     []struct {
			Maximum struct {
				Allocated struct {
					ConnectionCount int `json:"connection_count"`
				} `json:"allocated"`
			} `json:"maximum"`
			Average struct {
				Queued struct {
					TxDatagramRate float64 `json:"tx_datagram_rate"`
				} `json:"queued"`
				Delivered struct {
					TxDatagramRate float64 `json:"tx_datagram_rate"`
				} `json:"delivered"`
			} `json:"average"`
		} `json:"data_records"`
		Counters struct {
			Setup struct {
				Accepts int `json:"accepts_sent"`
			} `json:"setup"`
		} `json:"counters"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	maxConns, queued, delivered := 0, 0.0, 0.0
	for _, r := range doc.Records {
		maxConns = max(maxConns, r.Maximum.Allocated.ConnectionCount)
		queued = max(queued, r.Average.Queued.TxDatagramRate)
		delivered = max(delivered, r.Average.Delivered.TxDatagramRate)
	}
	if doc.ProcessID != p.cmd.Process.Pid || doc.ControlPort != port || doc.Counters.Setup.Accepts != 1 ||
		maxConns != 1 || queued <= 0 || delivered <= 0 {
		t.Errorf("-G figures: pid %d, port %d, accepts %d, max connections %d, queued %.2f/s, delivered %.2f/s",
			doc.ProcessID, doc.ControlPort, doc.Counters.Setup.Accepts, maxConns, queued, delivered)
	}
}

// readStatsFile reads the -G file at path and checks that it has the shape
// of OB-UDPST's (the golden server_perf_stats.json).
func readStatsFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := os.ReadFile(filepath.Join(golden.Require(t), "server_perf_stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := golden.SameJSONShape(b, ref); err != nil {
		t.Errorf("-G file: %v\n%s", err, b)
	}
	return b
}

// TestReloadKeysOnSIGHUP: SIGHUP puts a rewritten key file in use (a
// client with the new key gets in, one with the removed key is refused),
// a file that does not load leaves the keys as they were, and a test that
// runs meanwhile completes.
func TestReloadKeysOnSIGHUP(t *testing.T) {
	e2e(t)
	keys := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keys, []byte("1,old-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t, "127.0.0.1")
	p := startService(t, nil, nil, udpstpBin, "server", "-K", keys, "-p", fmt.Sprint(port), "127.0.0.1")
	running := clientInBackground("-u", "-t", "5", "-I", "20", "-a", "old-key", "-y", "1", "-p", fmt.Sprint(port), "127.0.0.1")
	p.waitLog(t, "test started", await.Deadline)

	if err := os.WriteFile(keys, []byte("# rotated\n2,new-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.signal(t, syscall.SIGHUP)
	p.waitLog(t, "key file reloaded", await.Deadline)
	if err := activateAt(port, "new-key", 2); err != nil {
		t.Errorf("the new key was refused after the reload: %v", err)
	}
	var se *control.SetupError
	if err := activateAt(port, "old-key", 1); err == nil || !asSetupError(err, &se) || se.Status != 107 {
		t.Errorf("the removed key after the reload: %v, want ErrorStatus 107", err)
	}

	if err := os.WriteFile(keys, []byte("2,new-key\n2,again\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.signal(t, syscall.SIGHUP)
	p.waitLog(t, "key file not reloaded", await.Deadline)
	if err := activateAt(port, "new-key", 2); err != nil {
		t.Errorf("a bad key file replaced the keys in use: %v", err)
	}

	r := <-running
	if r.err != nil || r.code != 0 {
		t.Errorf("the test running across the reloads: exit %d, %v\n%s", r.code, r.err, r.out)
	}
	checkSubIntervals(t, len(r.res.Output.IncrementalResult), 5)
	if line := lineWith(p.log(), "key file not reloaded"); !strings.Contains(line, "duplicate key ID 2") || !strings.Contains(line, "--key-file/-K") {
		t.Errorf("reload error line %q should name the option and the reason", line)
	}
}

func asSetupError(err error, se **control.SetupError) bool {
	e, ok := err.(*control.SetupError)
	*se = e
	return ok
}

// TestSetupFloodIsLimitedPerSource: a source flooding the control port
// with Setup Requests gets its burst answered and the rest dropped and
// counted, while a client from another address still gets in.
func TestSetupFloodIsLimitedPerSource(t *testing.T) {
	processTest(t)
	nl := listenNotify(t)
	port := freePort(t, "127.0.0.1")
	p := startService(t, []string{"NOTIFY_SOCKET=" + nl.path}, nil, udpstpBin, "server", "--setup-rate", "5", "-p", fmt.Sprint(port), "127.0.0.1")
	flooder, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)})
	if err != nil {
		t.Skipf("no 127.0.0.2 here: %v", err)
	}
	defer flooder.Close()
	// Valid requests the server refuses (jumbo off): each answered one is
	// a response to the flooder.
	req := (&control.SetupPDU{ProtocolVer: 20, MCCount: 1, CmdRequest: control.SetupCmdRequest}).Encode(make([]byte, control.SetupLen))
	to := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}
	const flood = 400
	for i := 0; i < flood; i++ {
		flooder.WriteToUDP(req, to)
		if i%50 == 49 {
			time.Sleep(2 * time.Millisecond) // no loss in the socket buffers
		}
	}
	answers := 0
	buf := make([]byte, 512)
	for {
		flooder.SetReadDeadline(time.Now().Add(2 * time.Second)) // the answers have stopped
		if _, _, err := flooder.ReadFromUDP(buf); err != nil {
			break
		}
		answers++
	}
	if burst := server.SetupBurst(5); answers < burst/2 || answers > burst+10 {
		t.Errorf("%d of %d flooded requests answered, want about the burst of %d", answers, flood, burst)
	}
	if err := activateAt(port, "", 0); err != nil {
		t.Errorf("a client from another address was refused during the flood: %v", err)
	}
	dropped := regexp.MustCompile(`(\d+) dropped over the per-source rate`)
	nl.waitFor(t, 0, "a STATUS counting the dropped requests", func(m string) bool {
		g := dropped.FindStringSubmatch(m)
		n, _ := strconv.Atoi(append(g, "", "0")[1])
		return n >= flood-answers-10
	}, await.Deadline)
	if !strings.Contains(p.log(), "source over its rate limit") || strings.Count(p.log(), "source over its rate limit") != 1 {
		t.Errorf("the flood should be logged once:\n%s", p.log())
	}
}

// TestStatsFileWrittenPeriodically: -G files appear on their own, named by
// the strftime pattern, in OB-UDPST's schema; no temporary file is left.
func TestStatsFileWrittenPeriodically(t *testing.T) {
	processTest(t)
	dir := t.TempDir()
	port := freePort(t, "127.0.0.1")
	p := startService(t, []string{server.EnvStatsTiming + "=200ms,600ms"}, nil,
		udpstpBin, "server", "-p", fmt.Sprint(port), "-G", filepath.Join(dir, "perf_%Y.json"), "127.0.0.1")
	want := filepath.Join(dir, fmt.Sprintf("perf_%d.json", time.Now().Year()))
	if !await.Within(await.Deadline, func() bool { _, err := os.Stat(want); return err == nil }) {
		entries, _ := os.ReadDir(dir)
		t.Fatalf("no %s after %v; %v\n%s", want, await.Deadline, entries, p.log())
	}
	readStatsFile(t, want) // renamed into place whole: readable at once
	// No temporary file once the server is gone (while it runs, one may be
	// on its way to the next rename).
	p.signal(t, os.Interrupt)
	if !p.waitExit(await.Deadline) {
		t.Fatalf("server still running %v after SIGINT", await.Deadline)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// TestDaemonAndLogFile: -x returns to the shell with status 0 once the
// server runs in the background; its log goes to the -l file, which is
// renamed to .old past -k thousand bytes.
func TestDaemonAndLogFile(t *testing.T) {
	processTest(t)
	dir := t.TempDir()
	logFile := filepath.Join(dir, "udpstp.log")
	port := freePort(t, "127.0.0.1")
	start := time.Now()
	out, err := exec.Command(udpstpBin, "server", "-x", "-l", logFile, "-k", "10", "--log-level", "debug", "-v",
		"-p", fmt.Sprint(port), "127.0.0.1").CombinedOutput()
	if err != nil {
		t.Fatalf("server -x: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`process (\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("server -x did not say which process runs: %q", out)
	}
	pid, _ := strconv.Atoi(string(m[1]))
	t.Cleanup(func() { stopPid(pid) })
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("-x took %v to return", d)
	}
	b, _ := os.ReadFile(logFile)
	if !bytes.Contains(b, []byte("server started")) || !bytes.Contains(b, []byte("pid="+strconv.Itoa(pid))) {
		t.Fatalf("log file lacks the start line of process %d:\n%s", pid, b)
	}
	// At debug level each invalid Setup Request logs a line (refusals are
	// logged once per episode): 100 of them are well past 10 x 1000 bytes.
	c, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	junk := make([]byte, control.SetupLen) // not a Setup PDU: pduId 0
	for i := 0; i < 100; i++ {
		c.Write(junk)
		if i%20 == 19 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if !await.Within(await.Deadline, func() bool { st, err := os.Stat(logFile + ".old"); return err == nil && st.Size() > 10000 }) {
		b, _ := os.ReadFile(logFile)
		t.Fatalf("no %s.old after 100 invalid requests; log:\n%s", logFile, b)
	}
	if st, err := os.Stat(logFile); err != nil || st.Size() > 10000 {
		t.Errorf("the new log file: %v, %d bytes", err, st.Size())
	}
	if err := stopPid(pid); err != nil {
		t.Error(err)
	}
}

// TestSocketActivation: a control socket passed as systemd does
// (LISTEN_FDS, LISTEN_PID, descriptor 3) is used instead of binding.
func TestSocketActivation(t *testing.T) {
	processTest(t)
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	f, err := pc.File()
	pc.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	other := freePort(t, "127.0.0.1")
	// LISTEN_PID must be the server's own: the shell exports its $$ and
	// becomes the server.
	p := startService(t, nil, []*os.File{f}, "/bin/sh", "-c", `export LISTEN_PID=$$ LISTEN_FDS=1; exec "$0" "$@"`,
		udpstpBin, "server", "-p", fmt.Sprint(other))
	f.Close()
	line := lineWith(p.log(), "server started")
	if !strings.Contains(line, "socket_activation=true") || !strings.Contains(line, fmt.Sprintf("listen=[127.0.0.1:%d]", port)) {
		t.Errorf("start line %q: want the passed socket on port %d", line, port)
	}
	if err := activateAt(port, "", 0); err != nil {
		t.Errorf("no Test Connection through the passed socket: %v", err)
	}
	if err := activateAt(other, "", 0); err == nil {
		t.Errorf("the server also bound -p %d", other)
	}
}

// TestServiceOptionErrors: every bad service option is one line naming the
// option, with a non-zero status, before any socket is opened (the -G
// check comes first even when the port is taken).
func TestServiceOptionErrors(t *testing.T) {
	processTest(t)
	taken, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := fmt.Sprint(taken.LocalAddr().(*net.UDPAddr).Port)
	missing := filepath.Join(t.TempDir(), "no", "such", "dir")
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--log-format", "xml"}, exitConfig, []string{"'xml' is not a valid log format", "--log-format"}},
		{[]string{"--log-level", "loud"}, exitConfig, []string{"'loud' is not a valid log level", "--log-level"}},
		{[]string{"--max-connections", "0"}, exitConfig, []string{"out-of-range for --max-connections (1-254)"}},
		{[]string{"-G", filepath.Join(missing, "stats.json")}, 75, []string{"FOPEN ERROR", "no/such/dir", "no such file or directory", "--stats-file/-G"}},
		{[]string{"-x", "-l", filepath.Join(missing, "log")}, 75, []string{"FOPEN ERROR", "--log-file/-l"}},
		{[]string{"-K", filepath.Join(missing, "keys")}, exitKeyFile, []string{"key file"}},
		{[]string{"-l", "log"}, exitConfig, []string{"--log-file/-l needs --daemon/-x"}},
	} {
		args := append([]string{"server", "-p", port, "127.0.0.1"}, c.args...)
		r := runCmd(exec.Command(udpstpBin, args...), 10*time.Second)
		code := r.code
		if r.err != nil {
			code = -1
		}
		msg := strings.TrimSpace(r.stderr)
		if code != c.code || strings.Count(msg, "\n") != 0 {
			t.Errorf("%q: exit %d, want %d, with one line: %q", c.args, code, c.code, msg)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%q: %q lacks %q", c.args, msg, w)
			}
		}
	}
}

// stopPid sends SIGTERM to a process that is not our child (a daemon)
// and waits up to 6 s for it to go, then kills it.
func stopPid(pid int) error {
	if syscall.Kill(pid, syscall.SIGTERM) != nil {
		return nil // gone already
	}
	if await.Within(6*time.Second, func() bool {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return err != nil || bytes.Contains(st, []byte(") Z "))
	}) {
		return nil
	}
	syscall.Kill(pid, syscall.SIGKILL)
	return fmt.Errorf("process %d still ran 6 s after SIGTERM", pid)
}
