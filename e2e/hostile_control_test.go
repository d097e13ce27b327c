package e2e

// Hostile input against the server's Control Phase (the hostile input
// layer of DEVELOPERS.md's tests): a real `udpstp server` in the lab's
// server namespace, attacked from the client namespace with forged
// sources, floods from many addresses and replays; each defence with its
// measured figure (docs/security.md). The figures are checked against what
// the defence guarantees, not against the machine's speed.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/netlab"
)

// hostileLab is a lab whose client namespace holds n further addresses
// (sources and victims), with our server in the server namespace.
func hostileLab(t *testing.T, n int, serverArgs ...string) (*netlab.Lab, []netip.Addr, *proc) {
	t.Helper()
	if testing.Short() {
		t.Skip("hostile input: real processes in network namespaces (skipped with -short)")
	}
	l := netlab.New(t, netlab.Config{})
	extra, err := l.AddClientAddrs(n)
	if err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{"server", "-p", fmt.Sprint(labPort)}, serverArgs...), l.ServerAddr.String())
	p := startServerProc(t, l.Command(l.ServerNS, udpstpBin, args...), true)
	p.stopAtCleanup(t, "udpstp")
	return l, extra, p
}

// hostileSocket opens a UDP socket in the client namespace bound to a.
func hostileSocket(t *testing.T, l *netlab.Lab, a netip.Addr) *net.UDPConn {
	t.Helper()
	c, err := l.ListenUDP(l.ClientNS, netip.AddrPortFrom(a, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ipBytes is what a UDP payload of n bytes costs on an IPv4 link.
func ipBytes(n int) int { return n + 28 }

// countTo installs an nftables counter in the client namespace of what
// arrives for dst, and returns a function that reads its bytes.
func countTo(t *testing.T, l *netlab.Lab, dst netip.Addr) func() int {
	t.Helper()
	rules := fmt.Sprintf("table ip hostile_count {\n chain in {\n  type filter hook input priority 0; policy accept;\n  ip daddr %s counter\n }\n}\n", dst)
	cmd := l.Command(l.ClientNS, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("nftables counter: %v: %s", err, out)
	}
	re := regexp.MustCompile(`counter packets \d+ bytes (\d+)`)
	return func() int {
		out, err := l.Command(l.ClientNS, "nft", "list", "table", "ip", "hostile_count").CombinedOutput()
		if err != nil {
			t.Fatalf("nft list: %v: %s", err, out)
		}
		m := re.FindSubmatch(out)
		if m == nil {
			t.Fatalf("no counter in %s", out)
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
}

func setupRequest() []byte {
	return (&control.SetupPDU{ProtocolVer: control.ProtocolVersion, MCCount: 1, CmdRequest: control.SetupCmdRequest,
		ModifierBitmap: control.SetupJumbo}).Encode(make([]byte, control.SetupLen))
}

// readSetupResponse reads datagrams on c until a Setup Response (the Null
// PDU passed over) and returns its test port, 0 if refused.
func readSetupResponse(t *testing.T, c *net.UDPConn) uint16 {
	t.Helper()
	buf := make([]byte, 2048)
	for {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("no setup response: %v", err)
		}
		if control.IsNullPDU(buf[:n]) {
			continue
		}
		var r control.SetupPDU
		if err := r.Decode(buf[:n]); err != nil {
			t.Fatalf("setup response: %v", err)
		}
		if r.CmdResponse != control.SetupAccepted {
			return 0
		}
		return r.TestPort
	}
}

// TestHostileForgedActivation: the attacker sets up from its own address,
// learns the test port, then sends the Test Activation, asking for a fixed
// 1 Gbit/s row, and Status PDUs every 250 ms, from a victim's address. The
// server used to connect the test socket to the victim and send it the Load
// stream: 345 MB in 3 s for one forged datagram. The activation is bound
// to its Setup's address now: what reaches the victim stays within three
// times what the attacker sent (in fact nothing does).
func TestHostileForgedActivation(t *testing.T) {
	l, extra, p := hostileLab(t, 1)
	victim := extra[0]
	victimBytes := countTo(t, l, victim)
	server := netip.AddrPortFrom(l.ServerAddr, labPort)

	att := hostileSocket(t, l, l.ClientAddr)
	sent := 0
	req := setupRequest()
	if _, err := att.WriteToUDPAddrPort(req, server); err != nil {
		t.Fatal(err)
	}
	sent += ipBytes(len(req))
	port := readSetupResponse(t, att)
	if port == 0 {
		t.Fatal("the attacker's setup was refused")
	}
	testPort := netip.AddrPortFrom(l.ServerAddr, port)

	a := control.ActivationPDU{ProtocolVer: control.ProtocolVersion, CmdRequest: control.ActivationDownstream,
		LowThresh: 30, UpperThresh: 90, TrialInt: 50, TestIntTime: 5, SRIndexConf: 1000, HighSpeedDelta: 10,
		SlowAdjThresh: 3, SeqErrThresh: 10, IgnoreOooDup: 1, SubIntPeriod: 1000}
	ta := a.Encode(make([]byte, control.ActivationLen), false)
	forger := hostileSocket(t, l, victim)
	if _, err := forger.WriteToUDPAddrPort(ta, testPort); err != nil {
		t.Fatal(err)
	}
	sent += ipBytes(len(ta))
	status := make([]byte, 204)
	status[0], status[1] = 0xFE, 0xED
	for range 12 { // 3 s of forged Status PDUs
		time.Sleep(250 * time.Millisecond) // paces them: makes time pass, waits for nothing
		forger.WriteToUDPAddrPort(status, testPort)
		sent += ipBytes(len(status))
	}
	got := victimBytes()
	t.Logf("attacker sent %d bytes; the victim received %d (%.2f times)", sent, got, float64(got)/float64(sent))
	if got > 3*sent {
		t.Errorf("the victim received %d bytes for the attacker's %d: more than 3 times", got, sent)
	}
	if !strings.Contains(p.log(), "not from the setup's address") {
		t.Errorf("the forged activation is not in the server's log:\n%s", p.log())
	}
}

// TestHostileSetupFloodFromManySources: 20 source addresses send Setup
// Requests at 19 a second each (under any per-source rate one would set)
// and never activate. They used to hold all 254 slots, and an OS thread
// each, for as long as they sent; a client from another address got
// ErrorStatus 113. Now a real test completes during the flood, and the
// server's thread count stays flat.
func TestHostileSetupFloodFromManySources(t *testing.T) {
	l, sources, p := hostileLab(t, 20)
	server := netip.AddrPortFrom(l.ServerAddr, labPort)
	threadsBefore := procThreads(t, p.cmd.Process.Pid)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var sent sync.Map
	var total atomic.Int64 // Setup Requests the flood sent so far
	for _, src := range sources {
		c := hostileSocket(t, l, src)
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := setupRequest()
			tick := time.NewTicker(time.Second / 19)
			defer tick.Stop()
			n := 0
			for i := 0; i < 19*30; i++ { // bounded: at most 30 s
				select {
				case <-ctx.Done():
					sent.Store(src, n)
					return
				case <-tick.C:
				}
				c.WriteToUDPAddrPort(req, server)
				n++
				total.Add(1)
			}
			sent.Store(src, n)
		}()
	}
	// The client comes once the flood has sent enough Setups to fill the
	// pending budget (4 x 254) had the server admitted them all.
	await.True(t, "the flood to send 4 x 254 Setup Requests", func() bool { return total.Load() >= 4*254 })
	out, err := runOutput(l.Command(l.ClientNS, udpstpBin, "client", "-d", "-f", "json", "-t", "5", "-I", "20",
		"-p", fmt.Sprint(labPort), l.ServerAddr.String()))
	threadsDuring := procThreads(t, p.cmd.Process.Pid)
	cancel()
	wg.Wait()
	var r labResult
	if jerr := json.Unmarshal(out, &r); jerr != nil || err != nil && r.ErrorStatus == 0 {
		t.Fatalf("client during the flood: %v %v\n%s", err, jerr, out)
	}
	if r.ErrorStatus != 0 {
		t.Errorf("client during the flood: ErrorStatus %d %s %s", r.ErrorStatus, r.ErrorMessage, r.ErrorMessage2)
	}
	t.Logf("server threads: %d before the flood, %d during it", threadsBefore, threadsDuring)
	if threadsDuring > threadsBefore+20 {
		t.Errorf("server threads %d -> %d during the flood: pending Test Connections hold threads", threadsBefore, threadsDuring)
	}
	if c := strings.Count(p.log(), "\n"); c > 60 {
		t.Errorf("%d server log lines during the flood", c)
	}
}

// TestHostileReplayedSetup: an authenticated Setup Request captured on the
// wire and replayed from 20 sources is dropped: it used to be accepted
// again within its 10 s window and fill every slot of a keyed server.
func TestHostileReplayedSetup(t *testing.T) {
	const key = "hostile-replay-key-0123456789"
	l, sources, p := hostileLab(t, 20, "-a", key)
	server := netip.AddrPortFrom(l.ServerAddr, labPort)
	req := setupRequest()
	now := uint32(time.Now().Unix())
	keys := control.DeriveKeys([]byte(key), now)
	control.Sign(req, keys.Client[:], now, 0)
	orig := hostileSocket(t, l, l.ClientAddr)
	orig.WriteToUDPAddrPort(req, server)
	if readSetupResponse(t, orig) == 0 {
		t.Fatal("the original authenticated request was refused")
	}
	// Every replay goes out within the request's time window (a replay
	// after it gets the time refusal, code 8, as OB-UDPST answers).
	socks := make([]*net.UDPConn, len(sources))
	for i, src := range sources {
		socks[i] = hostileSocket(t, l, src)
		for range 5 {
			socks[i].WriteToUDPAddrPort(req, server)
		}
	}
	answered := 0
	for i, c := range socks {
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		b := make([]byte, 512)
		if n, err := c.Read(b); err == nil {
			answered++
			t.Logf("replay from %v answered: %x", sources[i], b[:n])
		}
	}
	if answered > 0 {
		t.Errorf("%d of %d replaying sources were answered", answered, len(sources))
	}
	out, err := runOutput(l.Command(l.ClientNS, udpstpBin, "client", "-d", "-f", "json", "-t", "5", "-I", "20", "-a", key,
		"-p", fmt.Sprint(labPort), l.ServerAddr.String()))
	var r labResult
	if jerr := json.Unmarshal(out, &r); jerr != nil || r.ErrorStatus != 0 {
		t.Errorf("a keyed client after the replays: %v %v status %d %s", err, jerr, r.ErrorStatus, r.ErrorMessage)
	}
	if !strings.Contains(p.log(), "dropped as a replay") {
		t.Errorf("the replays are not in the server's log:\n%s", p.log())
	}
}

// TestHostileRefusalFloodLogsOnce: 20,000 Setup Requests the server
// refuses, from 20 addresses, used to write a log line each (94,000 lines
// in 4 s); they write a line and a summary now, and only the answer
// budget's worth is answered.
func TestHostileRefusalFloodLogsOnce(t *testing.T) {
	l, sources, p := hostileLab(t, 20, "-j") // the requests ask for jumbo sizes: code 3
	server := netip.AddrPortFrom(l.ServerAddr, labPort)
	req := setupRequest()
	answered := 0
	for _, src := range sources {
		c := hostileSocket(t, l, src)
		for i := range 1000 {
			c.WriteToUDPAddrPort(req, server)
			if i%100 == 99 {
				time.Sleep(time.Millisecond) // no loss in the socket buffers
			}
		}
		for {
			c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			if _, err := c.Read(make([]byte, 512)); err != nil {
				break
			}
			answered++
		}
	}
	t.Logf("%d of %d refusals answered", answered, 20*1000)
	if max := 20 * (4*control.MaxConnsPerClient + 20*5); answered > max {
		t.Errorf("%d refusals answered, more than the answer budget allows (%d)", answered, max)
	}
	p.stop(t, os.Interrupt) // Serve writes the episode summaries as it ends
	log := p.log()
	if n := strings.Count(log, "setup request rejected"); n != 1 {
		t.Errorf("%d 'setup request rejected' lines for 20,000 refusals, want 1", n)
	}
	if !strings.Contains(log, "setup requests refused") {
		t.Errorf("no summary of the refusals:\n%s", log)
	}
	if lines := strings.Count(log, "\n"); lines > 30 {
		t.Errorf("%d server log lines for 20,000 refusals:\n%s", lines, log)
	}
}

// TestSameSourceManyClients: ten clients of 8 connections each, from one
// address at the same moment (an office, a lab, a carrier-grade NAT),
// complete with the server's defaults. The old default --setup-rate 20
// (bursts of 48) dropped 4 of 10 silently. OB-UDPST's client is used when
// UDPST_BIN is set, ours otherwise.
func TestSameSourceManyClients(t *testing.T) {
	// Every slot, as a lab does: e2e's own slot and then all of them
	// would wait for a slot it holds itself.
	processTest(t)
	takeAllSlots(t)
	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
	bin, pre := udpstpBin, []string{"client"}
	if b := optionalUdpstBin(t); b != "" {
		bin, pre = b, nil
	}
	const clients = 10
	type res struct {
		r   labResult
		err error
	}
	results := make(chan res, clients)
	for range clients {
		go func() {
			args := append(append([]string{}, pre...), "-d", "-C", "8", "-I", "1", "-t", "5", "-f", "json", "-p", fmt.Sprint(port), "127.0.0.1")
			out, _, err := runClientProc(bin, args...)
			var r labResult
			if err == nil {
				err = json.Unmarshal(out, &r)
			}
			results <- res{r, err}
		}()
	}
	for range clients {
		x := <-results
		if x.err != nil || x.r.ErrorStatus != 0 {
			t.Errorf("%s client: %v, ErrorStatus %d %s %s", bin, x.err, x.r.ErrorStatus, x.r.ErrorMessage, x.r.ErrorMessage2)
		}
	}
}

// procThreads reads a process's OS thread count.
func procThreads(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^Threads:\s+(\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no Threads: in /proc/%d/status", pid)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
