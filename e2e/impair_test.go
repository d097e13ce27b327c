//go:build linux

package e2e

// The impairment lab end to end (the network lab layer of
// DEVELOPERS.md's tests): our server and client as real processes
// in the namespaces of internal/testkit/netlab, over paths with delay, NAT, a
// stateful firewall, a narrow link, and faults (a server stopped, killed
// or restarted mid-test, a forged stop, a client killed, the path cut).
//
// What holds on a busy 2-core machine runs in `make test` (TestImpairPaths,
// TestImpairFaults): a test completes or ends with a clear status, its
// result file is written, the server frees the test. Bounds on time are
// generous there; `make lab` (UDPSTP_LAB=1) tightens them to the 3 s the
// watchdog promises. What measures the machine (capacity through the
// relay, the counts of reordering, duplication and burst loss, a rate
// step) is in TestImpairLab, gated by netlab.LabOnly.

import (
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/netlab"
)

// impairTest marks a normal-suite impairment test: an end-to-end test
// (e2e: parallel, one of the package's slots, skipped with -short) that
// needs the relay, NAT and nftables. The cases are light (20 to
// 50 Mbit/s), but they share the slots with the loopback tests, whose
// gigabit runs a third or fourth concurrent test would starve on two
// cores.
func impairTest(t *testing.T) {
	t.Helper()
	if err := netlab.AvailableFor(netlab.Config{Relay: true, NAT: netlab.Masquerade}); err != nil {
		t.Skip(err)
	}
	e2e(t)
}

// rtt20 is the relay's delay for a path of 20 ms round trip, the shortest
// of the issue's: 10 ms each way.
var rtt20 = netlab.Impairment{Delay: 10 * time.Millisecond}

// impairResult is the part of the client JSON the fault cases read (the
// others read labResult): the test time and the error texts too.
type impairResult struct {
	ErrorStatus   int
	ErrorMessage  string
	ErrorMessage2 string
	Output        struct {
		TestInterval      float64
		IncrementalResult []struct {
			IPLayerCapacity float64
		}
		AtMax struct {
			MaxIPLayerCapacity float64
		}
		Status string
	}
}

// messages is the result's error text.
func (r impairResult) messages() string {
	return strings.TrimSpace(r.ErrorMessage + " " + r.ErrorMessage2)
}

// pathCase is a path the Control and Data Phases must cross.
type pathCase struct {
	name string
	cfg  netlab.Config
	dir  netlab.Direction
	both []string // options both ends need (-T)
	args []string
	// narrow: the case sends datagrams larger than the narrow link, so
	// the router must have met some: answered them with ICMP (DF set) or
	// fragmented them (DF clear: a UDP GSO send has no DF, see
	// runPathCase).
	narrow bool
}

// pathCases are the NAT, firewall and narrow-MTU paths. The load
// direction is shaped at 50 Mbit/s; NAT and firewall paths have 20 ms of
// round trip through the relay, so conntrack sees the relay's double
// crossing of the router too.
func pathCases() []pathCase {
	shaped := func(c netlab.Config, dir netlab.Direction) netlab.Config {
		s := netlab.Shape{RateBps: 50e6}
		if dir == netlab.Down {
			c.Down.RateBps = s.RateBps
		} else {
			c.Up.RateBps = s.RateBps
		}
		return c
	}
	var cs []pathCase
	for _, dir := range []netlab.Direction{netlab.Down, netlab.Up} {
		for _, n := range []struct {
			name string
			cfg  netlab.Config
		}{
			{"masquerade", netlab.Config{NAT: netlab.Masquerade}},
			{"masquerade-random", netlab.Config{NAT: netlab.MasqueradeRandom}},
			{"firewall", netlab.Config{FirewallPort: labPort}},
			// A home router's NAT in front of a firewalled server. With
			// masquerade random instead, no test can start: the server's
			// Null Request opens its firewall for the external port of
			// the Setup, and the Test Activation leaves from another
			// (the protocol's design, OB-UDPST's as ours).
			{"masquerade-firewall", netlab.Config{NAT: netlab.Masquerade, FirewallPort: labPort}},
		} {
			c := n.cfg
			c.Up.Relay, c.Down.Relay = rtt20, rtt20
			cs = append(cs, pathCase{name: n.name + "-" + dir.String(), cfg: shaped(c, dir), dir: dir})
		}
	}
	for i, mtu := range []int{1492, 1400, 1280} {
		narrow := netlab.Narrow{MTU: mtu, Link: netlab.NarrowMiddle}
		for _, dir := range []netlab.Direction{netlab.Down, netlab.Up} {
			// -T: 1500-byte datagrams, which the narrow link refuses.
			cs = append(cs, pathCase{name: fmt.Sprintf("mtu%d-T-%v", mtu, dir), cfg: shaped(netlab.Config{Narrow: narrow}, dir),
				dir: dir, both: []string{"-T"}, narrow: true})
		}
		// Default options: 1250-byte datagrams below 1 Gbit/s, which fit
		// every narrow link; the case checks the path does not upset the
		// test (one direction per MTU).
		dir := []netlab.Direction{netlab.Down, netlab.Up}[i%2]
		cs = append(cs, pathCase{name: fmt.Sprintf("mtu%d-default-%v", mtu, dir), cfg: shaped(netlab.Config{Narrow: narrow}, dir), dir: dir})
	}
	return cs
}

// TestImpairPaths runs every path case with our client and server: each
// must complete (ErrorStatus below 50) with Sub-Intervals and a maximum.
// With UDPST_BIN set it also runs both mixed pairings with OB-UDPST. A
// mixed pairing that fails twice fails the test only if OB-UDPST against
// itself completes the same path: OB-UDPST's own limits (its receiver
// stops at the first fragmented datagram, its sender at the first
// "fragmentation needed") are not ours to pass.
func TestImpairPaths(t *testing.T) {
	ours := labImpl{name: "udpstp", bin: udpstpBin, ours: true}
	for _, c := range pathCases() {
		t.Run(c.name, func(t *testing.T) {
			impairTest(t)
			pair := func(server, client labImpl) pathOutcome {
				var o pathOutcome
				t.Run(server.name+"-server-"+client.name+"-client", func(t *testing.T) { o = runPathCase(t, c, server, client) })
				return o
			}
			if o := pair(ours, ours); !o.ok() {
				t.Errorf("udpstp over %s: %s", c.name, o.failure)
			}
			b := optionalUdpstBin(t)
			if b == "" {
				return
			}
			ob := labImpl{name: "OB-UDPST", bin: b}
			var self *pathOutcome
			for _, p := range [][2]labImpl{{ours, ob}, {ob, ours}} {
				o := pair(p[0], p[1])
				if o.ok() {
					continue
				}
				if o = pair(p[0], p[1]); o.ok() {
					continue
				}
				if self == nil {
					s := pair(ob, ob)
					self = &s
				}
				if self.ok() {
					t.Errorf("%s server, %s client over %s: %s; OB-UDPST against itself completes", p[0].name, p[1].name, c.name, o.failure)
				} else {
					t.Logf("%s server, %s client over %s: %s; so does OB-UDPST against itself (%s)", p[0].name, p[1].name, c.name, o.failure, self.failure)
				}
			}
		})
	}
}

// pathOutcome is one run of a path case; failure is "" when it completed.
type pathOutcome struct{ failure string }

func (o pathOutcome) ok() bool { return o.failure == "" }

// impairDirFlag is the client option for dir.
func impairDirFlag(dir netlab.Direction) string {
	if dir == netlab.Up {
		return "-u"
	}
	return "-d"
}

// runPathCase runs c with server and client on a fresh lab and says how
// it went.
func runPathCase(t *testing.T, c pathCase, server, client labImpl) pathOutcome {
	l := netlab.New(t, c.cfg)
	labServer(t, l, server, c.both...)
	before, err := l.Counters(l.RouterNS)
	if err != nil {
		t.Fatal(err)
	}
	r := labClient(t, l, client, 5, append(append([]string{impairDirFlag(c.dir)}, c.both...), c.args...)...)
	after, err := l.Counters(l.RouterNS)
	if err != nil {
		t.Fatal(err)
	}
	delta := func(k string) int64 { return after[k] - before[k] }
	icmp := delta("Icmp:OutDestUnreachs") + delta("Icmp6OutPktTooBigs")
	// A datagram with DF clear is fragmented by the router instead of
	// answered: Linux sets DF on a UDP datagram only when it fits the
	// route's MTU as a whole, which a GSO super-packet never does
	// (__ip_make_skb), so a Load Sender writing Bursts with UDP_SEGMENT
	// sends without DF unless its socket asks for IP_PMTUDISC_DO, and
	// OB-UDPST's single sends carry DF.
	frags := delta("Ip:FragOKs")
	refused, _ := l.FirewallRefused()
	var relay []string
	for _, d := range []netlab.Direction{netlab.Down, netlab.Up} {
		if s, err := l.RelayStats(d); err == nil {
			relay = append(relay, fmt.Sprintf("%v: read %d, own drops %d", d, s.Read, s.OwnDrops()))
		}
	}
	t.Logf("ErrorStatus %d %q, %s; max L3 %.2f Mbit/s over %d Sub-Intervals; router: %d ICMP errors sent, %d datagrams fragmented; firewall refused %d; relay %s",
		r.ErrorStatus, strings.TrimSpace(r.ErrorMessage+" "+r.ErrorMessage2), r.Output.Status, r.Output.AtMax.MaxIPLayerCapacity,
		len(r.Output.IncrementalResult), icmp, frags, refused, strings.Join(relay, "; "))
	if c.narrow && icmp+frags == 0 {
		t.Errorf("the router neither answered nor fragmented a datagram: the case did not meet the narrow link")
	}
	if r.ErrorStatus < 0 || r.ErrorStatus >= 50 || len(r.Output.IncrementalResult) == 0 || r.Output.AtMax.MaxIPLayerCapacity <= 0 {
		return pathOutcome{failure: fmt.Sprintf("did not complete: ErrorStatus %d: %s", r.ErrorStatus, strings.TrimSpace(r.ErrorMessage+" "+r.ErrorMessage2))}
	}
	return pathOutcome{}
}

// --- Faults -----------------------------------------------------------

// faultSecs is the test time of the fault cases, and faultAt when the
// fault strikes.
const (
	faultSecs = 8
	faultAt   = 3500 * time.Millisecond
)

// watchdogSlack is what a fault case allows beyond the 3 s watchdog for a
// test to end or the server to free it: a busy machine delays processes
// by seconds, and `make lab` (EnvLab) holds the tighter bound.
func watchdogSlack() time.Duration {
	if os.Getenv(netlab.EnvLab) == "1" {
		return time.Second
	}
	return 6 * time.Second
}

// faultServer is our server in the lab's server namespace under a
// NOTIFY_SOCKET, so the test reads its STATUS= lines (the tests it runs).
type faultServer struct {
	p      *proc
	notify *notifyListener
}

// startFaultServer starts our server in l (extra options after the
// port) and stops it when the test ends, if it still runs.
func startFaultServer(t *testing.T, l *netlab.Lab, n *notifyListener) *faultServer {
	t.Helper()
	// --drain-timeout 0: a SIGTERM cuts the running test, the fault
	// these cases make (drain_e2e_test.go tests the drain).
	cmd := l.Command(l.ServerNS, udpstpBin, "server", "-v", "--drain-timeout", "0", "-p", strconv.Itoa(labPort), l.ServerAddr.String())
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+n.path)
	return &faultServer{p: startServerProc(t, cmd, true), notify: n}
}

// waitIdle waits until the server's STATUS= says no test runs, from
// message index from on, and returns how long that took.
func (s *faultServer) waitIdle(t *testing.T, from int, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	s.notify.waitFor(t, from, "STATUS= with no test running", func(m string) bool {
		return strings.HasPrefix(m, "STATUS=running tests: 0 ")
	}, limit)
	return time.Since(start)
}

// exit waits for the server process to end.
func (s *faultServer) exit(t *testing.T, limit time.Duration) {
	t.Helper()
	if !s.p.waitExit(limit) {
		s.p.kill()
		t.Errorf("the server did not exit within %v:\n%s", limit, s.p.log())
	}
}

// faultClient is our client running in the background, text on its standard
// output, its JSON result in a file (--output).
type faultClient struct {
	*proc
	outFile string
}

// startFaultClient starts our client in l's client namespace for a test
// of secs.
func startFaultClient(t *testing.T, l *netlab.Lab, secs int, args ...string) *faultClient {
	t.Helper()
	c := &faultClient{outFile: filepath.Join(t.TempDir(), "result.json")}
	a := append([]string{"client", "-t", strconv.Itoa(secs), "-p", strconv.Itoa(labPort), "--output", c.outFile}, args...)
	c.proc = start(t, l.Command(l.ClientNS, udpstpBin, append(a, l.ServerAddr.String())...), procOpts{name: "client"})
	return c
}

// wait waits up to limit for the client to end; false if it had to be
// killed.
func (c *faultClient) wait(t *testing.T, limit time.Duration) bool {
	t.Helper()
	if c.waitExit(limit) {
		return true
	}
	c.kill()
	t.Errorf("the client still ran %v later: killed\nstdout: %s\nstderr: %s", limit, c.output(), c.errors())
	return false
}

// result reads the client's result file, which must have been written.
func (c *faultClient) result(t *testing.T) impairResult {
	t.Helper()
	b, err := os.ReadFile(c.outFile)
	if err != nil {
		t.Fatalf("no result file (--output): %v\nstdout: %s\nstderr: %s", err, c.output(), c.errors())
	}
	var r impairResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("result file is not JSON: %v\n%s", err, b)
	}
	if code := c.exitCode(); code != r.ErrorStatus {
		t.Errorf("exit status %d, result file's ErrorStatus %d", code, r.ErrorStatus)
	}
	return r
}

// describe is the client's outcome for the log, with its standard error
// (warnings, socket errors) when it did not end with status 0.
func (c *faultClient) describe(r impairResult) string {
	d := fmt.Sprintf("exit %d after %v: ErrorStatus %d %q, %s, %d Sub-Intervals, TestInterval %v, max L3 %.2f Mbit/s",
		c.exitCode(), c.elapsed().Round(10*time.Millisecond), r.ErrorStatus, r.messages(),
		r.Output.Status, len(r.Output.IncrementalResult), r.Output.TestInterval, r.Output.AtMax.MaxIPLayerCapacity)
	if e := strings.TrimSpace(c.errors()); r.ErrorStatus != 0 && e != "" {
		d += fmt.Sprintf("; stderr: %.600s", e)
	}
	return d
}

// servesNext runs a whole test against l's server after a fault: it must
// complete, the server having freed what the fault left.
func servesNext(t *testing.T, l *netlab.Lab, what string) {
	t.Helper()
	c := startFaultClient(t, l, 5, "-d", "-I", "20")
	c.wait(t, 5*time.Second+3*time.Second+watchdogSlack())
	if r := c.result(t); r.ErrorStatus != 0 {
		t.Errorf("%s: %s", what, c.describe(r))
	}
}

// relayNote is what the relay did in both directions, for the log: a
// fault case's outcome is the product's only if the relay kept up.
func relayNote(l *netlab.Lab) string {
	var n []string
	for _, d := range []netlab.Direction{netlab.Down, netlab.Up} {
		s, err := l.RelayStats(d)
		if err != nil {
			n = append(n, err.Error())
			continue
		}
		n = append(n, fmt.Sprintf("%v %d packets, %d own drops, late %v at most", d, s.Read, s.OwnDrops(), s.LateMax.Round(time.Microsecond)))
	}
	return "relay: " + strings.Join(n, "; ")
}

// faultLab is the lab of the fault cases: 20 ms of round trip through the
// relay, nothing else.
func faultLab(t *testing.T) *netlab.Lab {
	return netlab.New(t, netlab.Config{Up: netlab.Shape{Relay: rtt20}, Down: netlab.Shape{Relay: rtt20}})
}

// earlyEndRE is the text a test cut short by the server must carry.
var earlyEndRE = regexp.MustCompile(`ended early by the server after (\d+(?:\.\d)?) of (\d+) s`)

// checkEndedEarly asserts what a test the server cut short must report:
// a warning (1..49) with the results so far kept, not
// "Complete", and "ended early by the server after N of M s" in the text
// and in the JSON, N the real test time in seconds (to a tenth).
func checkEndedEarly(t *testing.T, c *faultClient, r impairResult, at time.Duration) {
	t.Helper()
	if r.ErrorStatus < 1 || r.ErrorStatus > 49 {
		t.Errorf("ErrorStatus %d, want a warning (1-49): the server ended the test %v into %d s", r.ErrorStatus, at.Round(100*time.Millisecond), faultSecs)
	}
	if r.Output.Status == "Complete" {
		t.Errorf("Output.Status %q for a test cut short after %v of %d s", r.Output.Status, at.Round(100*time.Millisecond), faultSecs)
	}
	subs := len(r.Output.IncrementalResult)
	if subs == 0 || subs >= faultSecs {
		t.Errorf("%d Sub-Intervals kept, want the %d or so before the end", subs, int(at.Seconds()))
	}
	for where, text := range map[string]string{"JSON": r.messages(), "text output": c.output()} {
		m := earlyEndRE.FindStringSubmatch(text)
		if m == nil {
			t.Errorf("the %s does not say %q: %q", where, "ended early by the server after N of M s", text)
			continue
		}
		n, _ := strconv.ParseFloat(m[1], 64)
		if total, _ := strconv.Atoi(m[2]); total != faultSecs || n < float64(subs-1) || n > float64(subs+1) {
			t.Errorf("the %s says %q: want N near the %d Sub-Intervals and M = %d", where, m[0], subs, faultSecs)
		}
	}
}

// faultReasons returns the reasons of the server's "test ended" lines.
func faultReasons(p *proc) []string {
	var rs []string
	for _, line := range strings.Split(p.log(), "\n") {
		if !strings.Contains(line, "test ended") {
			continue
		}
		if i := strings.Index(line, "reason="); i >= 0 {
			rs = append(rs, strings.Trim(line[i+len("reason="):], `"`))
		}
	}
	return rs
}

// TestImpairFaults: a test cut short by the server (stop signals, a
// restart, a stop forged on the path), an end killed with SIGKILL, the
// path cut for 2 s and for 5 s. Each ends (or recovers) with a status that
// says what happened, within the 3 s watchdog plus slack, with its result
// file written, and the server frees the test.
func TestImpairFaults(t *testing.T) {
	t.Run("server-SIGTERM", func(t *testing.T) { serverStopCase(t, "SIGTERM") })
	t.Run("server-SIGINT", func(t *testing.T) { serverStopCase(t, "SIGINT") })
	t.Run("server-restart", func(t *testing.T) { serverStopCase(t, "restart") })
	t.Run("forged-stop", forgedStopCase)
	t.Run("server-SIGKILL", serverKillCase)
	t.Run("client-SIGKILL", clientKillCase)
	t.Run("cut-2s", func(t *testing.T) { cutCase(t, 2*time.Second) })
	t.Run("cut-5s", func(t *testing.T) { cutCase(t, 5*time.Second) })
}

// serverStopCase stops the server mid-test as an operator would: SIGTERM
// (systemctl stop), SIGINT (Ctrl-C), or SIGTERM and a new server on the
// same port (systemctl restart). The server runs its stop handshake; the
// client must say the server ended the test early.
func serverStopCase(t *testing.T, how string) {
	impairTest(t)
	l := faultLab(t)
	n := listenNotify(t)
	srv := startFaultServer(t, l, n)
	c := startFaultClient(t, l, faultSecs, "-e", "-d", "-I", "20")
	time.Sleep(faultAt)
	sig := os.Signal(os.Interrupt)
	if how != "SIGINT" {
		sig = syscall.SIGTERM
	}
	stopped := time.Now()
	srv.p.signal(t, sig)
	c.wait(t, 3*time.Second+watchdogSlack())
	srv.exit(t, control.DefaultShutdownGrace+watchdogSlack())
	if how == "restart" {
		startFaultServer(t, l, listenNotify(t))
		servesNext(t, l, "the restarted server's test")
	}
	r := c.result(t)
	t.Logf("%s %v into the test; client: %s; server's reasons %q; %s", how, stopped.Sub(c.started).Round(10*time.Millisecond), c.describe(r), faultReasons(srv.p), relayNote(l))
	checkEndedEarly(t, c, r, stopped.Sub(c.started))
	for _, reason := range faultReasons(srv.p) {
		if reason == dataphase.EndStopped.String() {
			t.Errorf("the server logged reason %q for a test its %s cut short", reason, how)
		}
	}
}

// forgedStopCase: an on-path attacker (in the router) sends the client a
// Load PDU with the stop action, from the server's address and test port.
// The client cannot tell it from the server's; it must not report a
// complete test.
func forgedStopCase(t *testing.T) {
	impairTest(t)
	l := faultLab(t)
	n := listenNotify(t)
	srv := startFaultServer(t, l, n)
	c := startFaultClient(t, l, faultSecs, "-d", "-I", "20")
	time.Sleep(faultAt)
	from := len(n.all())
	cli, server, err := clientTestConnection(l)
	if err != nil {
		t.Fatal(err)
	}
	pdu := make([]byte, dataphase.LoadHeaderLen)
	h := dataphase.LoadHeader{TestAction: dataphase.ActionStop2, SeqNo: 1 << 30, UDPPayload: dataphase.LoadHeaderLen}
	h.Encode(pdu)
	dataphase.SealLoadChecksum(pdu)
	forged := time.Now()
	if err := l.ForgeUDP(l.RouterNS, server, cli, pdu); err != nil {
		t.Fatal(err)
	}
	c.wait(t, 3*time.Second+watchdogSlack())
	r := c.result(t)
	// The client's stop ends the server's side too, at once or by its
	// watchdog.
	idle := srv.waitIdle(t, from, 3*time.Second+2*time.Second+watchdogSlack())
	t.Logf("forged a stop from %v to %v %v into the test; client: %s; server idle %v later, reasons %q; %s",
		server, cli, forged.Sub(c.started).Round(10*time.Millisecond), c.describe(r), idle.Round(10*time.Millisecond), faultReasons(srv.p), relayNote(l))
	checkEndedEarly(t, c, r, forged.Sub(c.started))
}

// clientTestConnection finds the client's Test Connection in l: the client's
// connected UDP socket whose peer is not the control port.
func clientTestConnection(l *netlab.Lab) (client, server netip.AddrPort, err error) {
	out, err := l.Command(l.ClientNS, "ss", "-H", "-u", "-n", "state", "established").Output()
	if err != nil {
		return client, server, fmt.Errorf("ss: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		lo, err1 := netip.ParseAddrPort(f[len(f)-2])
		pe, err2 := netip.ParseAddrPort(f[len(f)-1])
		if err1 == nil && err2 == nil && pe.Addr() == l.ServerAddr && pe.Port() != labPort {
			return lo, pe, nil
		}
	}
	return client, server, fmt.Errorf("no Test Connection in the client's sockets:\n%s", out)
}

// serverKillCase: the server dies (SIGKILL) mid-test; the client's
// watchdog ends the test 3 s later with an error.
func serverKillCase(t *testing.T) {
	impairTest(t)
	l := faultLab(t)
	srv := startFaultServer(t, l, listenNotify(t))
	c := startFaultClient(t, l, faultSecs, "-d", "-I", "20")
	time.Sleep(faultAt)
	killed := time.Now()
	srv.p.kill()
	c.wait(t, 3*time.Second+watchdogSlack())
	r := c.result(t)
	took := c.ended.Sub(killed)
	t.Logf("server killed %v into the test; client ended %v later: %s; %s", killed.Sub(c.started).Round(10*time.Millisecond), took.Round(10*time.Millisecond), c.describe(r), relayNote(l))
	if took > 3*time.Second+watchdogSlack() {
		t.Errorf("the client ended %v after its server died, want about 3 s", took)
	}
	// As OB-UDPST's client does (same lab, same kill): ErrorStatus 200,
	// the minimum of connections unavailable, the traffic-stopped warning,
	// and no Sub-Intervals.
	if r.ErrorStatus == 0 || r.Output.Status == "Complete" || r.messages() == "" {
		t.Errorf("a test whose server died reads as a success: %s", c.describe(r))
	}
}

// clientKillCase: the client dies (SIGKILL) mid-test; the server frees
// the test within 3 s (by its watchdog, or sooner by the ICMP refusals
// of the dead port), logs why, and serves the next one.
func clientKillCase(t *testing.T) {
	impairTest(t)
	l := faultLab(t)
	n := listenNotify(t)
	srv := startFaultServer(t, l, n)
	c := startFaultClient(t, l, faultSecs, "-u", "-I", "20")
	time.Sleep(faultAt)
	from := len(n.all())
	killed := time.Now()
	c.kill()
	took := srv.waitIdle(t, from, 3*time.Second+2*time.Second+watchdogSlack()) // STATUS= comes every 2 s
	t.Logf("client killed %v into the test; the server was idle %v later; reasons %q",
		killed.Sub(c.started).Round(10*time.Millisecond), took.Round(10*time.Millisecond), faultReasons(srv.p))
	// Which of the two ends it is depends on the path, not on us: where the
	// client's kernel answers the server's Status PDUs with ICMP port
	// unreachable and the path carries it back, the server ends at the
	// third refusal (EndPeerGone, well under 3 s); where nothing comes
	// back, the watchdog ends it at 3 s. Both free the slot in time.
	rs := faultReasons(srv.p)
	if len(rs) != 1 || (rs[0] != dataphase.EndWatchdog.String() && rs[0] != dataphase.EndPeerGone.String()) {
		t.Errorf("server's reasons %q, want %q or %q", rs, dataphase.EndWatchdog.String(), dataphase.EndPeerGone.String())
	}
	servesNext(t, l, "the next test after a killed client")
}

// cutCase cuts the path for d mid-test. Shorter than the 3 s watchdog the
// test recovers and runs to its end, warning of the outage; longer, the
// watchdogs of both ends end it about 3 s into the cut, and the server is
// free for the next test once the path is mended.
func cutCase(t *testing.T, d time.Duration) {
	impairTest(t)
	l := faultLab(t)
	n := listenNotify(t)
	srv := startFaultServer(t, l, n)
	c := startFaultClient(t, l, faultSecs, "-d", "-I", "20")
	time.Sleep(faultAt - time.Second)
	from := len(n.all())
	// Timed by the kernel: the outage is d however late this process runs
	// (an nft to cut and one to mend made 2 s last over 4 on a loaded
	// machine). It began by the time CutFor returned.
	if err := l.CutFor(d); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	time.Sleep(d)
	dropped, _ := l.CutDropped()
	if err := l.Cut(false); err != nil {
		t.Fatal(err)
	}
	c.wait(t, faultSecs*time.Second+3*time.Second+watchdogSlack())
	r := c.result(t)
	took := c.ended.Sub(cut)
	t.Logf("path cut %v into the test for %v (%d packets dropped); client ended %v after the cut began: %s; server's reasons %q; %s",
		cut.Sub(c.started).Round(10*time.Millisecond), d, dropped, took.Round(10*time.Millisecond), c.describe(r), faultReasons(srv.p), relayNote(l))
	subs := r.Output.IncrementalResult
	if d < 3*time.Second {
		if r.ErrorStatus < 0 || r.ErrorStatus >= 50 || len(subs) != faultSecs {
			t.Errorf("a %v outage did not recover: %s", d, c.describe(r))
		} else if last := subs[len(subs)-1]; last.IPLayerCapacity < 10 {
			t.Errorf("the last Sub-Interval carried %.2f Mbit/s: traffic did not resume after the cut", last.IPLayerCapacity)
		}
		if r.ErrorStatus == 0 {
			t.Errorf("a %v outage left no warning: %s", d, c.describe(r))
		}
		srv.waitIdle(t, from, faultSecs*time.Second+watchdogSlack())
		return
	}
	if took > 3*time.Second+watchdogSlack() {
		t.Errorf("the client ended %v after the path was cut, want about 3 s", took)
	}
	if r.ErrorStatus == 0 || r.Output.Status == "Complete" || r.messages() == "" {
		t.Errorf("a test whose path was cut for %v: %s", d, c.describe(r))
	}
	if took := srv.waitIdle(t, from, 3*time.Second+2*time.Second+watchdogSlack()); took > d+2*time.Second+watchdogSlack() {
		t.Errorf("the server freed the test %v after the cut", took)
	}
	servesNext(t, l, "the next test after the cut")
}

// --- The lab's timing-bound checks (make lab) ---------------------------

// impairKind says what an impairment-lab case checks.
type impairKind int

const (
	// impairCapacity: the L2 maximum within tol % of the tbf rate.
	impairCapacity impairKind = iota
	// impairReorder: reordering reads as out-of-order, not as loss.
	impairReorder
	// impairDup: duplication reads as duplicates.
	impairDup
	// impairBurstLoss: burst loss reads as loss, the relay's count.
	impairBurstLoss
	// impairStep: a rate step down shows in the Sub-Intervals within 2 s,
	// and the maximum is the higher rate.
	impairStep
)

// impairLabCase is one case of TestImpairLab.
type impairLabCase struct {
	name  string
	cfg   netlab.Config
	dir   netlab.Direction
	secs  int
	both  []string
	args  []string
	kind  impairKind
	want  float64 // Mbit/s: the shape (capacity, step: the rate before it)
	tol   float64 // %
	about string
}

// coverage is the least share of a test's Load PDUs its Sub-Intervals
// count: those before the first Status PDU and in the last half second
// fall in none (about a tenth of a 5 s test's, see runLabCase).
const coverage = 0.8

// stepAt and stepTo are the rate step of the impairStep case.
const (
	stepAt = 5 * time.Second
	stepTo = 50e6
)

// relayPath is a relay delay of rtt split over both directions, with m
// added to dir.
func relayPath(rtt time.Duration, dir netlab.Direction, m netlab.Impairment) netlab.Config {
	d := netlab.Impairment{Delay: rtt / 2}
	m.Delay = rtt / 2
	if dir == netlab.Down {
		return netlab.Config{Down: netlab.Shape{Relay: m}, Up: netlab.Shape{Relay: d}}
	}
	return netlab.Config{Up: netlab.Shape{Relay: m}, Down: netlab.Shape{Relay: d}}
}

// shapeDir adds a tbf rate to dir of c.
func shapeDir(c netlab.Config, dir netlab.Direction, rate float64) netlab.Config {
	if dir == netlab.Down {
		c.Down.RateBps = int64(rate)
	} else {
		c.Up.RateBps = int64(rate)
	}
	return c
}

// impairLabCases are the cases; top is the highest rate the
// relay's baseline carried (0: none beyond the others).
func impairLabCases(top float64) []impairLabCase {
	const M = 1e6
	var cs []impairLabCase
	for _, rate := range []float64{50 * M, 200 * M} {
		for _, rtt := range []time.Duration{20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond} {
			cs = append(cs, impairLabCase{
				name: fmt.Sprintf("cap-%vM-rtt%d-down", rate/M, rtt.Milliseconds()),
				cfg:  shapeDir(relayPath(rtt, netlab.Down, netlab.Impairment{}), netlab.Down, rate),
				dir:  netlab.Down, secs: 10, both: []string{"-j"}, kind: impairCapacity, want: rate / M, tol: 2,
				about: fmt.Sprintf("tbf %v Mbit/s down, RTT %v, -j", rate/M, rtt),
			})
		}
	}
	if top > 0 {
		for _, dir := range []netlab.Direction{netlab.Down, netlab.Up} {
			cs = append(cs, impairLabCase{
				name: fmt.Sprintf("cap-%vM-rtt50-%v", top/M, dir),
				cfg:  shapeDir(relayPath(50*time.Millisecond, dir, netlab.Impairment{}), dir, top),
				dir:  dir, secs: 10, both: []string{"-j"}, kind: impairCapacity, want: top / M, tol: 2,
				about: fmt.Sprintf("tbf %v Mbit/s %v (the relay's highest clean rate), RTT 50 ms, -j", top/M, dir),
			})
		}
	}
	for _, dir := range []netlab.Direction{netlab.Down, netlab.Up} {
		cs = append(cs,
			impairLabCase{name: "reorder-" + dir.String(), dir: dir, secs: 5, args: []string{"-I", "50"}, kind: impairReorder,
				cfg:   relayPath(20*time.Millisecond, dir, netlab.Impairment{ReorderPct: 1, ReorderBy: 2 * time.Millisecond}),
				about: "1 % of Load PDUs held 2 ms, RTT 20 ms, fixed row 50"},
			impairLabCase{name: "dup-" + dir.String(), dir: dir, secs: 5, args: []string{"-I", "50"}, kind: impairDup,
				cfg:   relayPath(20*time.Millisecond, dir, netlab.Impairment{DupPct: 1}),
				about: "1 % of Load PDUs duplicated, RTT 20 ms, fixed row 50"},
			impairLabCase{name: "burst-loss-" + dir.String(), dir: dir, secs: 5, args: []string{"-I", "50"}, kind: impairBurstLoss,
				cfg:   relayPath(20*time.Millisecond, dir, netlab.Impairment{Loss: netlab.GilbertElliott{P: 0.2, R: 25, LossBad: 100}}),
				about: "Gilbert-Elliott p 0.2 % r 25 % (bursts of 4), RTT 20 ms, fixed row 50"},
		)
	}
	cs = append(cs, impairLabCase{name: "step-200-to-50-down", dir: netlab.Down, secs: 10, both: []string{"-j"}, kind: impairStep,
		cfg: shapeDir(relayPath(20*time.Millisecond, netlab.Down, netlab.Impairment{}), netlab.Down, 200*M), want: 200, tol: 2,
		about: fmt.Sprintf("tbf 200 Mbit/s down, stepped to %v at %v, RTT 20 ms, -j", stepTo/M, stepAt)})
	return cs
}

// TestImpairLab runs the timing-bound cases through the relay with our
// client and server, and with OB-UDPST's on both ends when UDPST_BIN is
// set, and logs the table of errors side by side (docs/accuracy.md). Ours
// must meet every tolerance; a case that misses runs once more, since a
// busy neighbour shows as skipped Bursts that no impairment explains. A
// run in which the relay did not keep up (RelayStats.Kept) measured the
// relay, not the method: it is run again, and if the second is void too
// the table says so and the case does not fail.
func TestImpairLab(t *testing.T) {
	netlab.LabOnly(t)
	if err := netlab.AvailableFor(netlab.Config{Relay: true, NAT: netlab.Masquerade}); err != nil {
		t.Skip(err)
	}
	takeAllSlots(t)
	impls := []labImpl{{name: "udpstp", bin: udpstpBin, ours: true}}
	if b := optionalUdpstBin(t); b != "" {
		impls = append(impls, labImpl{name: "OB-UDPST", bin: b})
	}
	start := time.Now()
	rows, err := netlab.RelayBaseline([]int64{500e6, 1000e6}, []time.Duration{50 * time.Millisecond}, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	top := float64(netlab.HighestCarried(rows))
	t.Logf("the relay's baseline at RTT 50 ms, for the top rate (%v Mbit/s):\n%s", top/1e6, netlab.BaselineTable(rows))
	var table []string
	for _, c := range impairLabCases(top) {
		t.Run(c.name, func(t *testing.T) {
			var cells []string
			for i, impl := range impls {
				var o impairOutcome
				for attempt := 1; attempt <= 2; attempt++ {
					t.Run(impl.name, func(t *testing.T) { o = runImpairLabCase(t, c, impl) })
					o.retried = attempt > 1
					if len(o.problems) == 0 && o.void == "" && (o.done || !impl.ours) {
						break
					}
					t.Logf("%s: %s %s; running the case again", impl.name, impairCell(c, o), strings.Join(o.problems, "; "))
				}
				switch {
				case i > 0:
				case o.void != "":
					// Not the method's fault: the lab could not carry the
					// case on this machine now (see netlab.RelayStats.Kept).
					t.Logf("udpstp: void, %s; its figures: %s", o.void, strings.Join(o.problems, "; "))
				default:
					if !o.done {
						t.Errorf("udpstp did not complete: %s", o.failed)
					}
					for _, p := range o.problems {
						t.Error(p)
					}
				}
				cells = append(cells, impairCell(c, o))
			}
			if len(cells) == 1 {
				cells = append(cells, "-")
			}
			table = append(table, fmt.Sprintf("| %s | %s | %s | %s |", c.name, c.about, cells[0], cells[1]))
		})
	}
	t.Logf("impairment lab: %d cases in %v\n| case | path | udpstp | OB-UDPST 9.0.0 |\n|---|---|---|---|\n%s",
		len(table), time.Since(start).Round(time.Second), strings.Join(table, "\n"))
}

// impairOutcome is one implementation's run of an impairment-lab case.
type impairOutcome struct {
	done     bool    // ErrorStatus 0 with results
	value    float64 // capacity and step: the maximum's error in %
	detail   string  // the counts, for the table
	failed   string  // why it did not complete
	problems []string
	void     string // the relay did not keep up: the run measured the relay
	retried  bool   // the first run failed; this is the second
}

// impairCell is a case's outcome for the table.
func impairCell(c impairLabCase, o impairOutcome) string {
	if !o.done {
		return "fails: " + o.failed
	}
	v := o.detail
	if c.kind == impairCapacity || c.kind == impairStep {
		v = fmt.Sprintf("%+.2f %%", o.value) + " " + v
	}
	if len(o.problems) > 0 {
		v += " (out of tolerance)"
	}
	if o.void != "" {
		v = "void, " + o.void + ": " + v
	}
	if o.retried {
		v += " (2nd run)"
	}
	return strings.TrimSpace(v)
}

// runImpairLabCase runs c with impl on both ends of a fresh lab.
func runImpairLabCase(t *testing.T, c impairLabCase, impl labImpl) impairOutcome {
	l := netlab.New(t, c.cfg)
	labServer(t, l, impl, c.both...)
	args := append(append([]string{impairDirFlag(c.dir)}, c.both...), c.args...)
	stepErr := make(chan error, 1)
	if c.kind == impairStep {
		go func() {
			time.Sleep(stepAt)
			stepErr <- l.SetRate(c.dir, stepTo)
		}()
	}
	r := labClient(t, l, impl, c.secs, args...)
	var o impairOutcome
	if c.kind == impairStep {
		if err := <-stepErr; err != nil {
			t.Fatal(err)
		}
	}
	if r.ErrorStatus != 0 || r.Output.Status != "Complete" {
		o.failed = fmt.Sprintf("ErrorStatus %d: %s", r.ErrorStatus, strings.TrimSpace(r.ErrorMessage2+" "+r.ErrorMessage))
		return o
	}
	o.done = true
	rs, err := l.RelayStats(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	back, err := l.RelayStats(1 - c.dir)
	if err != nil {
		t.Fatal(err)
	}
	if !rs.Kept() || !back.Kept() {
		o.void = fmt.Sprintf("the relay did not keep up (%d own drops, %d of %d packets %v late or more)",
			rs.OwnDrops()+back.OwnDrops(), rs.LateSlips+back.LateSlips, rs.Read+back.Read, netlab.RelaySlip)
	}
	var subs []string
	for _, s := range r.Output.IncrementalResult {
		subs = append(subs, fmt.Sprintf("%.1f", s.IPLayerCapacity))
	}
	sum := r.Output.Summary
	t.Logf("max L2 %.2f Mbit/s; loss %d, out of order %d, duplicates %d; Sub-Intervals %s; relay %+v",
		r.Output.AtMax.MaxETHCapacityNoFCS, sum.LossCount, sum.ReorderedCount, sum.ReplicatedCount, strings.Join(subs, " "), rs)
	problem := func(format string, a ...any) { o.problems = append(o.problems, fmt.Sprintf(format, a...)) }
	between := func(what string, got uint32, relay int64) {
		if relay == 0 || int64(got) > relay || float64(got) < coverage*float64(relay) {
			problem("%s %d, the relay made %d (want %.0f %% to 100 %% of it counted)", what, got, relay, 100*coverage)
		}
	}
	switch c.kind {
	case impairCapacity, impairStep:
		o.value = 100 * (r.Output.AtMax.MaxETHCapacityNoFCS - c.want) / c.want
		o.detail = fmt.Sprintf("(%.1f)", r.Output.AtMax.MaxETHCapacityNoFCS)
		if math.Abs(o.value) > c.tol {
			problem("maximum at L2 %.2f Mbit/s: %+.2f %% from the tbf rate %.0f, tolerance %.0f %%", r.Output.AtMax.MaxETHCapacityNoFCS, o.value, c.want, c.tol)
		}
		if c.kind == impairStep {
			checkStep(r, problem)
		}
	case impairReorder:
		o.detail = fmt.Sprintf("OoO %d of %d, loss %d", sum.ReorderedCount, rs.Reordered, sum.LossCount)
		between("out of order", sum.ReorderedCount, rs.Reordered)
		// A late datagram cancels the loss its gap counted, in the
		// interval where it lands; one that lands in the next
		// Sub-Interval leaves that loss (2 ms in 1 s: 0.2 %).
		if int64(sum.LossCount) > 2+rs.Reordered/100 || sum.ReplicatedCount != 0 {
			problem("reordering read as %d lost and %d duplicates", sum.LossCount, sum.ReplicatedCount)
		}
	case impairDup:
		o.detail = fmt.Sprintf("dup %d of %d", sum.ReplicatedCount, rs.Duplicated)
		between("duplicates", sum.ReplicatedCount, rs.Duplicated)
		if sum.LossCount != 0 || sum.ReorderedCount != 0 {
			problem("duplication read as %d lost and %d out of order", sum.LossCount, sum.ReorderedCount)
		}
	case impairBurstLoss:
		o.detail = fmt.Sprintf("loss %d of %d", sum.LossCount, rs.Lost)
		between("loss", sum.LossCount, rs.Lost)
		if sum.ReorderedCount != 0 || sum.ReplicatedCount != 0 {
			problem("burst loss read as %d out of order and %d duplicates", sum.ReorderedCount, sum.ReplicatedCount)
		}
	}
	return o
}

// checkStep: from 2 s after the step (Sub-Interval 7 on, the step
// falling about 5 s into the Sub-Intervals) the test stays at or below
// the lower rate, which tbf enforces at L2 (L3 reads lower still). The
// maximum, checked against the higher rate by the caller, can only come
// from before the step.
func checkStep(r labResult, problem func(string, ...any)) {
	subs := r.Output.IncrementalResult
	if len(subs) < 10 {
		problem("%d Sub-Intervals", len(subs))
		return
	}
	for i := 6; i < len(subs); i++ {
		if subs[i].IPLayerCapacity > stepTo/1e6*1.02 {
			problem("Sub-Interval %d at %.1f Mbit/s, %v after a step down to %v Mbit/s", i+1, subs[i].IPLayerCapacity,
				time.Duration(i+1)*time.Second-stepAt, stepTo/1e6)
		}
	}
}
