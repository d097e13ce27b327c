package e2e

// End-to-end tests: real udpstp processes on loopback (and, with UDPST_BIN
// set, OB-UDPST's udpst against them). Each test is a real 5 s capacity
// test, so they run two at a time and are skipped with -short.

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/netlab"
)

// testResult is the part of OB-UDPST's client JSON the tests read.
type testResult struct {
	ErrorStatus   int
	ErrorMessage  string
	ErrorMessage2 string
	Input         struct {
		Role           string
		TestType       string
		SendingRateIdx int `json:"SendingRateIndex"`
		ProtocolVer    string
	}
	Output struct {
		IncrementalResult []struct {
			IPLayerCapacity float64
		}
		AtMax struct {
			MaxIPLayerCapacity  float64
			MaxETHCapacityNoFCS float64
		}
		ModalResult []struct {
			MaxIPLayerCapacity float64
		}
		Status string
	}
}

// runTestProc runs a client to completion and reads its JSON testResult.
func runTestProc(t *testing.T, bin string, args ...string) (testResult, int, string) {
	t.Helper()
	if len(args) > 0 && args[0] == "client" {
		args = append([]string{"client", "-f", "json"}, args[1:]...)
	} else {
		args = append([]string{"-f", "json"}, args...)
	}
	out, code, err := runClientProc(bin, args...)
	if err != nil {
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	var r testResult
	if jerr := json.Unmarshal(out, &r); jerr != nil {
		t.Fatalf("%s %v: exit %d, output is not JSON: %v\n%s", bin, args, code, jerr, out)
	}
	if r.ErrorStatus != code {
		t.Errorf("exit status %d, JSON ErrorStatus %d", code, r.ErrorStatus)
	}
	return r, code, string(out)
}

func ourClient(t *testing.T, args ...string) (testResult, int, string) {
	return runTestProc(t, udpstpBin, append([]string{"client"}, args...)...)
}

// checkComplete asserts a completed test: status 0, every Sub-Interval,
// a plausible maximum.
func checkComplete(t *testing.T, r testResult, code int, out string, subs int) {
	t.Helper()
	if code != 0 || r.Output.Status != "Complete" {
		t.Fatalf("test did not complete: status %d %q\n%s", code, r.ErrorMessage, out)
	}
	checkSubIntervals(t, len(r.Output.IncrementalResult), subs)
	if r.Output.AtMax.MaxIPLayerCapacity <= 0 {
		t.Errorf("maximum %.2f Mbps", r.Output.AtMax.MaxIPLayerCapacity)
	}
}

// checkSubIntervals checks that a test reported its want Sub-Intervals,
// or all but the last. Each Sub-Interval closes at the receiver's first
// Status PDU after its period (as OB-UDPST's do), so when a busy machine
// makes those late the receiver's timeline drifts, and the last one can
// fall past the stop: that is the machine, not a lost result.
func checkSubIntervals(t *testing.T, n, want int) {
	t.Helper()
	if n > want || n < want-1 {
		t.Errorf("%d Sub-Intervals, want %d", n, want)
	} else if n < want {
		t.Logf("%d Sub-Intervals of %d: the last fell past the stop", n, want)
	}
}

// TestLoopback runs our client against our server in the configurations
// the Control and Data Phases must get right. A fixed row is checked for
// what the code guarantees: never measured above the row's rate (the
// Load Sender sends no more than its row, and catches up at most 1 ms).
// How close below it a run lands depends on how busy the machine is:
// TestLabLoopbackRates judges that, in `make lab`.
func TestLoopback(t *testing.T) {
	cases := []struct {
		name   string
		host   string
		server []string
		client []string
		check  func(t *testing.T, r testResult)
	}{
		{name: "down-v4", host: "127.0.0.1", client: []string{"-d"}},
		{name: "up-v4", host: "127.0.0.1", client: []string{"-u"}},
		{name: "down-v6", host: "::1", client: []string{"-d"}},
		{name: "up-v6", host: "::1", client: []string{"-u"}},
		{name: "down-auth", host: "127.0.0.1", server: []string{"-a", "e2e-shared-key"}, client: []string{"-d", "-a", "e2e-shared-key", "-y", "7"}},
		{name: "up-auth", host: "127.0.0.1", server: []string{"-a", "e2e-shared-key"}, client: []string{"-u", "-a", "e2e-shared-key"}},
		{name: "down-algo-c", host: "127.0.0.1", client: []string{"-d", "-A", "C"}},
		{name: "up-algo-c", host: "127.0.0.1", client: []string{"-u", "-A", "c"}},
		{name: "up-fixed-100", host: "127.0.0.1", client: []string{"-u", "-I", "100"}, check: func(t *testing.T, r testResult) {
			if m := r.Output.AtMax.MaxIPLayerCapacity; m > 102 {
				t.Errorf("fixed row 100 measured %.2f Mbps", m)
			}
			if r.Input.TestType != "Fixed" {
				t.Errorf("TestType %q", r.Input.TestType)
			}
		}},
		{name: "down-fixed-50", host: "127.0.0.1", client: []string{"-d", "-I", "50"}, check: func(t *testing.T, r testResult) {
			if m := r.Output.AtMax.MaxIPLayerCapacity; m > 51 {
				t.Errorf("fixed row 50 measured %.2f Mbps", m)
			}
		}},
		{name: "down-bimodal", host: "127.0.0.1", client: []string{"-d", "-i", "2"}, check: func(t *testing.T, r testResult) {
			if len(r.Output.ModalResult) != 1 {
				t.Errorf("bimodal run has %d second-mode maxima", len(r.Output.ModalResult))
			}
		}},
		{name: "up-dual-phase", host: "127.0.0.1", client: []string{"-u", "-i", "-2", "-I", "@100"}, check: func(t *testing.T, r testResult) {
			if m := r.Output.AtMax.MaxIPLayerCapacity; m > 105 {
				t.Errorf("first mode (adjustment suppressed at row 100) max %.2f Mbps", m)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e2e(t)
			port := freePort(t, c.host)
			spawnServer(t, udpstpBin, append([]string{"server", "-p", fmt.Sprint(port), c.host}, c.server...)...)
			r, code, out := ourClient(t, append([]string{"-t", "5", "-p", fmt.Sprint(port), c.host}, c.client...)...)
			checkComplete(t, r, code, out, 5)
			if c.check != nil {
				c.check(t, r)
			}
		})
	}
}

// TestLabLoopbackRates: a fixed row on loopback delivers its rate. How
// close below the row a 5 s run lands is the machine's (a Load Sender that
// a busy CPU delays skips Bursts), so this runs in `make lab`, with one
// retry per case. The tolerance is the row's rate, whatever the machine:
// at most `below` % under it, at most `above` % over it.
func TestLabLoopbackRates(t *testing.T) {
	netlab.LabOnly(t)
	takeAllSlots(t)
	cases := []struct {
		name         string
		client       []string
		rate         float64 // the row's, Mbit/s at L3
		below, above float64 // %
	}{
		{"up-fixed-100", []string{"-u", "-I", "100"}, 100, 5, 2},
		{"down-fixed-50", []string{"-d", "-I", "50"}, 50, 6, 2},
		{"up-dual-phase", []string{"-u", "-i", "-2", "-I", "@100"}, 100, 5, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lo, hi := c.rate*(1-c.below/100), c.rate*(1+c.above/100)
			for attempt := 1; ; attempt++ {
				port := freePort(t, "127.0.0.1")
				spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
				r, code, out := ourClient(t, append([]string{"-t", "5", "-p", fmt.Sprint(port), "127.0.0.1"}, c.client...)...)
				checkComplete(t, r, code, out, 5)
				m := r.Output.AtMax.MaxIPLayerCapacity
				t.Logf("run %d: maximum %.2f Mbit/s, row %.0f (tolerance %.1f to %.1f)", attempt, m, c.rate, lo, hi)
				if m >= lo && m <= hi {
					return
				}
				if attempt == 2 {
					t.Errorf("maximum %.2f Mbit/s in two runs out of %.1f..%.1f, row %.0f", m, lo, hi, c.rate)
					return
				}
			}
		})
	}
}

// TestRefusals checks that a refused or unanswered setup gives OB-UDPST's
// ErrorStatus and one clear message.
func TestRefusals(t *testing.T) {
	cases := []struct {
		name   string
		server []string
		client []string
		status int
		msg    string
	}{
		{"jumbo-mismatch", []string{"-j"}, []string{"-d"}, 103, "jumbo"},
		{"capacity", []string{"-B", "100"}, []string{"-d", "-B", "200"}, 110, "capacity"},
		{"no-bandwidth", []string{"-B", "100"}, []string{"-d"}, 109, "bandwidth"},
		{"auth-required", []string{"-a", "k1"}, []string{"-d"}, 105, "required"},
		{"wrong-key", []string{"-a", "k1"}, []string{"-d", "-a", "k2"}, 107, "Authentication failure"},
		{"no-key-on-server", nil, []string{"-d", "-a", "k2"}, 107, "Authentication failure"},
		{"no-server", nil, nil, 200, "Minimum required connections"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			processTest(t)
			port := freePort(t, "127.0.0.1")
			if c.name != "no-server" {
				spawnServer(t, udpstpBin, append([]string{"server", "-p", fmt.Sprint(port), "127.0.0.1"}, c.server...)...)
			}
			args := append([]string{"-t", "5", "-p", fmt.Sprint(port), "127.0.0.1"}, c.client...)
			if c.client == nil {
				args = append(args, "-d")
			}
			r, code, out := ourClient(t, args...)
			// As OB-UDPST does, the refusal is followed by the
			// minimum-connections error, so it is the message before it.
			if code != c.status || !strings.Contains(r.ErrorMessage+r.ErrorMessage2, c.msg) {
				t.Errorf("status %d message %q, want %d containing %q\n%s", code, r.ErrorMessage, c.status, c.msg, out)
			}
		})
	}
}

// TestWildcardServer: a server given no address listens on every address,
// IPv4 and IPv6 together (one dual-stack socket), and serves both; a
// client that dialled 127.0.0.2 gets its answers from 127.0.0.1 (the
// source the kernel picks) and must follow them there.
func TestWildcardServer(t *testing.T) {
	e2e(t)
	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port))
	for _, host := range []string{"127.0.0.1", "127.0.0.2", "::1"} {
		r, code, out := ourClient(t, "-d", "-t", "5", "-I", "20", "-p", fmt.Sprint(port), host)
		checkComplete(t, r, code, out, 5)
	}
}

// TestJunkAtServer floods a running server's control port with datagrams
// that are no valid Setup Request while a test runs: the test completes,
// and the server serves the next one.
func TestJunkAtServer(t *testing.T) {
	e2e(t)
	port := freePort(t, "127.0.0.1")
	srv := spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
	conn, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stop := make(chan struct{})
	var sent int
	go func() {
		junk := [][]byte{{}, {0xac, 0xe1}, make([]byte, 56), make([]byte, 1500), []byte("GET / HTTP/1.0\r\n\r\n")}
		bad := make([]byte, 56)
		copy(bad, []byte{0xac, 0xe1, 0, 20, 0, 1, 0, 1, 1, 0})
		bad[55] = 1 // a checksum that does not verify
		junk = append(junk, bad)
		for i := 0; i < 20000; i++ { // bounded: at most 20000 datagrams
			select {
			case <-stop:
				return
			default:
			}
			conn.Write(junk[i%len(junk)])
			sent++
			if i%100 == 99 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	r, code, out := ourClient(t, "-d", "-t", "5", "-p", fmt.Sprint(port), "127.0.0.1")
	close(stop)
	checkComplete(t, r, code, out, 5)
	r, code, out = ourClient(t, "-u", "-t", "5", "-I", "10", "-p", fmt.Sprint(port), "127.0.0.1")
	checkComplete(t, r, code, out, 5)
	if strings.Contains(srv.log(), "panic") {
		t.Errorf("server log mentions a panic:\n%s", srv.log())
	}
}

// TestInterruptWritesResult interrupts a client mid-test: it stops, tells
// the server, and still writes its JSON result file, with ErrorStatus 255
// and the reason, atomically.
func TestInterruptWritesResult(t *testing.T) {
	e2e(t)
	port := freePort(t, "127.0.0.1")
	srv := spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
	outFile := filepath.Join(t.TempDir(), "result.json")
	c := spawnClient(t, "-d", "-t", "10", "-p", fmt.Sprint(port), "--output", outFile, "127.0.0.1")
	c.waitFirstSub(t)
	c.signal(t, os.Interrupt)
	if !c.waitClient() {
		t.Fatalf("client did not end within %v of SIGINT", await.Deadline)
	}
	if code := c.exitCode(); code != 255 {
		t.Errorf("exit status %d, want 255", code)
	}
	b, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatalf("no result file after SIGINT: %v", err)
	}
	var r testResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("result file is not JSON: %v\n%s", err, b)
	}
	if r.ErrorStatus != 255 || !strings.Contains(r.ErrorMessage, "interrupted") {
		t.Errorf("ErrorStatus %d, ErrorMessage %q", r.ErrorStatus, r.ErrorMessage)
	}
	if len(r.Output.IncrementalResult) < 1 {
		t.Errorf("the Sub-Intervals measured before the interrupt are missing")
	}
	// The server learned of the stop from the client, not from its 3 s
	// watchdog: the reason it logs says which.
	if !await.Within(await.Deadline, func() bool { return strings.Contains(srv.log(), "test ended") }) {
		t.Fatalf("server did not end the test:\n%s", srv.log())
	}
	line := lineWith(srv.log(), "test ended")
	t.Logf("server: %s", line)
	if strings.Contains(line, dataphase.EndWatchdog.String()) {
		t.Errorf("server ended the test on its watchdog, not on the client's stop: %s", line)
	}
	entries, _ := os.ReadDir(filepath.Dir(outFile))
	if len(entries) != 1 {
		t.Errorf("temporary files left next to the result: %v", entries)
	}
}

// multiResult is the multi-connection part of the client JSON.
type multiResult struct {
	ErrorStatus int
	Input       struct {
		NumberOfHosts       int
		NumberOfConnections int
		MinNumOfConnections int
		HostList            []struct {
			Host        string
			ControlPort int
		}
	}
	Output struct {
		IncrementalResult []struct{ ActiveConnections int }
		AtMax             struct{ ActiveConnections int }
	}
}

// TestMultiConnection runs one test over several Test Connections: -C 3
// against one server, four connections round robin over two servers, and
// -C 2-4 over a live and an unreachable server (the test goes on with the
// two that came up, as OB-UDPST's does).
func TestMultiConnection(t *testing.T) {
	cases := []struct {
		name    string
		servers int // live servers
		dead    bool
		args    []string
		status  int
		hosts   int
		conns   int
		active  int
	}{
		{"C3-one-server", 1, false, []string{"-d", "-C", "3"}, 0, 1, 3, 3},
		{"C4-two-servers", 2, false, []string{"-u", "-C", "4"}, 0, 2, 4, 4},
		{"C2-4-one-unreachable", 1, true, []string{"-d", "-C", "2-4"}, 1, 2, 4, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e2e(t)
			var hosts []string
			for i := 0; i < c.servers; i++ {
				port := freePort(t, "127.0.0.1")
				spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
				hosts = append(hosts, fmt.Sprintf("127.0.0.1:%d", port))
			}
			if c.dead {
				hosts = append(hosts, fmt.Sprintf("127.0.0.1:%d", freePort(t, "127.0.0.1")))
			}
			args := append(append([]string{"client", "-f", "json", "-t", "5"}, c.args...), hosts...)
			out, code, err := runClientProc(udpstpBin, args...)
			if err != nil {
				t.Fatal(err)
			}
			var r multiResult
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatalf("not JSON (exit %d): %v\n%s", code, err, out)
			}
			if code != c.status || r.ErrorStatus != c.status {
				t.Fatalf("status %d / %d, want %d\n%s", code, r.ErrorStatus, c.status, out)
			}
			if r.Input.NumberOfHosts != c.hosts || len(r.Input.HostList) != c.hosts || r.Input.NumberOfConnections != c.conns {
				t.Errorf("hosts %d (%d listed), connections %d", r.Input.NumberOfHosts, len(r.Input.HostList), r.Input.NumberOfConnections)
			}
			checkSubIntervals(t, len(r.Output.IncrementalResult), 5)
			if r.Output.AtMax.ActiveConnections != c.active {
				t.Errorf("%d active connections at the maximum, want %d", r.Output.AtMax.ActiveConnections, c.active)
			}
		})
	}
}

// TestMultiConnectionMinimum: with -C 3 and a server that refuses, the
// minimum is not met and the run ends with OB-UDPST's ErrorStatus (the
// refusal's, kept over 200) and no results.
func TestMultiConnectionMinimum(t *testing.T) {
	e2e(t)
	good := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(good), "127.0.0.1")
	bad := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-j", "-p", fmt.Sprint(bad), "127.0.0.1")
	r, code, out := ourClient(t, "-d", "-t", "5", "-C", "2",
		fmt.Sprintf("127.0.0.1:%d", good), fmt.Sprintf("127.0.0.1:%d", bad))
	if code != 103 || !strings.Contains(r.ErrorMessage, "Minimum required connections (2)") {
		t.Errorf("status %d, message %q; want 103 and the minimum-connections error\n%s", code, r.ErrorMessage, out)
	}
	if len(r.Output.IncrementalResult) != 0 {
		t.Errorf("results reported for a run below its minimum")
	}
	// An unreachable server: its timeout (a warning) becomes 200, and the
	// live connection the client then stops does not make it a success.
	dead := freePort(t, "127.0.0.1")
	r, code, out = ourClient(t, "-d", "-t", "5", "-C", "2",
		fmt.Sprintf("127.0.0.1:%d", good), fmt.Sprintf("127.0.0.1:%d", dead))
	if code != 200 || !strings.Contains(r.ErrorMessage, "Minimum required connections (2)") {
		t.Errorf("status %d, message %q; want 200 and the minimum-connections error\n%s", code, r.ErrorMessage, out)
	}
}

// TestShowErrors: with -e the client reports its socket's errors when a
// Test Connection ends: here the server dies mid-test, so the client's
// Load PDUs meet ICMP port unreachable (connection refused).
func TestShowErrors(t *testing.T) {
	e2e(t)
	port := freePort(t, "127.0.0.1")
	srv := spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
	c := spawnClient(t, "-e", "-u", "-t", "10", "-I", "5", "-p", fmt.Sprint(port), "127.0.0.1")
	c.waitFirstSub(t)
	srv.kill()
	if !c.waitClient() {
		t.Fatal("client did not end after its server died")
	}
	if e := c.errors(); !strings.Contains(e, "socket errors") || !strings.Contains(e, "connection_refused=") {
		t.Errorf("no socket error report on stderr:\n%s", e)
	}
}

// TestOneTestServerExit: a -1 server ends after its Test Connection with
// that connection's ErrorStatus as its exit status, as OB-UDPST's does: 0
// after a completed test, not 0 when the client vanished mid-test.
func TestOneTestServerExit(t *testing.T) {
	for _, tc := range []struct {
		name string
		kill bool
	}{{"completed", false}, {"client killed", true}} {
		t.Run(tc.name, func(t *testing.T) {
			e2e(t)
			port := freePort(t, "127.0.0.1")
			srv := spawnServer(t, udpstpBin, "server", "-1", "-p", fmt.Sprint(port), "127.0.0.1")
			if tc.kill {
				c := spawnClient(t, "-d", "-t", "10", "-p", fmt.Sprint(port), "127.0.0.1")
				c.waitFirstSub(t)
				c.kill()
			} else {
				r, code, out := ourClient(t, "-d", "-t", "5", "-p", fmt.Sprint(port), "127.0.0.1")
				checkComplete(t, r, code, out, 5)
			}
			if !srv.waitExit(await.Deadline) {
				srv.kill()
				t.Fatalf("a -1 server still runs after its test:\n%s", srv.log())
			}
			code := srv.exitCode()
			if tc.kill && code == 0 {
				t.Errorf("exit status 0 after the client vanished:\n%s", srv.log())
			}
			if !tc.kill && code != 0 {
				t.Errorf("exit status %d after a completed test:\n%s", code, srv.log())
			}
		})
	}
}
