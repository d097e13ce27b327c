//go:build !portable

package engine

import (
	"net/netip"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/race"
)

// The kernel receive timestamp is the arrival, not the read: a datagram
// read 30 ms after it arrived carries a time 30 ms before the batch's pair.
// The kernel stamps CLOCK_REALTIME, so the send is bracketed by that clock
// (clock.Pair.Wall), never by the raw one: the two drift apart.
func TestKernelTimestamp(t *testing.T) {
	a, b := openPair(t, "127.0.0.1:0", SocketOptions{})
	// Enabling SO_TIMESTAMPNS turns on the kernel's receive timestamps
	// through a deferred static key; until that work runs, an skb is
	// stamped when it is read, not when it arrives. Give it time first.
	time.Sleep(50 * time.Millisecond)
	var sb dataphase.SendBuffer
	var rb dataphase.RecvBatch
	fillPlan(&sb, 1, 0, 100, 100)
	before := clock.Now()
	if _, err := a.SendBatch(&sb); err != nil {
		t.Fatal(err)
	}
	after := clock.Now()
	time.Sleep(30 * time.Millisecond) // makes the read late: the age below
	if err := b.RecvBatch(&rb, dataphase.MaxRecv); err != nil {
		t.Fatal(err)
	}
	if rb.N != 2 {
		t.Fatalf("read %d", rb.N)
	}
	for i := 0; i < rb.N; i++ {
		d := rb.Dgrams[i]
		// The kernel's CLOCK_REALTIME stamp back out of the Test Time
		// Base (RecvBatch converted it with rb.Pair: WallAt undoes
		// MonoAt exactly).
		wall := rb.Pair.WallAt(d.Time)
		// Loopback delivers within the sendmmsg call; the pairs are a
		// few µs wide each.
		const slack = int64(100 * time.Microsecond)
		if wall < before.Wall-slack || wall > after.Wall+slack {
			t.Fatalf("datagram %d: kernel time %d not within the send [%d, %d] (CLOCK_REALTIME)", i, wall, before.Wall, after.Wall)
		}
		if age := time.Duration(rb.Pair.Wall - wall); age < 29*time.Millisecond {
			t.Fatalf("datagram %d: age %v at read, want >= 30 ms", i, age)
		}
	}
}

func TestRecvTOS(t *testing.T) {
	type tc struct {
		name           string
		server, client string
		so             SocketOptions
		ipv4           bool
	}
	cases := []tc{
		{"IPv4", "127.0.0.1:0", "127.0.0.1:0", SocketOptions{}, true},
		{"IPv6", "[::1]:0", "[::1]:0", SocketOptions{Family: 6}, false},
		// The dual-stack cases: an AF_INET6 socket talking to an
		// IPv4-mapped peer must mark with IP_TOS and read IP_TOS cmsgs.
		{"dual-stack server, IPv4 client", "", "127.0.0.1:0", SocketOptions{}, true},
		{"dual-stack both ends, IPv4 path", "", "", SocketOptions{}, true},
		{"dual-stack server, IPv6 client", "", "[::1]:0", SocketOptions{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !c.ipv4 && !hasIPv6(t) {
				t.Skip("no IPv6")
			}
			var sa, ca netip.AddrPort
			if c.server != "" {
				sa = netip.MustParseAddrPort(c.server)
			}
			if c.client != "" {
				ca = netip.MustParseAddrPort(c.client)
			}
			srv := mustOpen(t, sa, c.so)
			cli := mustOpen(t, ca, c.so)
			lo := func(s *Socket) netip.AddrPort {
				if c.ipv4 {
					return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), s.LocalAddr().Port())
				}
				return loopbackOf(s)
			}
			mustConnect(t, srv, lo(cli))
			mustConnect(t, cli, lo(srv))
			if IsIPv4Peer(srv.Peer()) != c.ipv4 {
				t.Fatalf("peer %v", srv.Peer())
			}
			// Both directions: the server marks Load PDUs, the client
			// marks Status PDUs.
			for _, dir := range []struct {
				from, to *Socket
				tos      uint8
			}{{srv, cli, 0xb8}, {cli, srv, 0x2a}} {
				if err := dir.from.SetTOS(dir.tos, c.ipv4); err != nil {
					t.Fatal(err)
				}
				if err := dir.to.EnableRecvTOS(c.ipv4); err != nil {
					t.Fatal(err)
				}
				var sb dataphase.SendBuffer
				var rb dataphase.RecvBatch
				fillPlan(&sb, 2, 0, lens(3, 1000)...)
				if _, err := dir.from.SendBatch(&sb); err != nil {
					t.Fatal(err)
				}
				got := recvAll(t, dir.to, &rb, 3, func(rb *dataphase.RecvBatch) {
					for i := 0; i < rb.N; i++ {
						if d := rb.Dgrams[i]; !d.HasTOS || d.TOS != dir.tos {
							t.Fatalf("datagram %d: TOS %#x (has %v), want %#x", i, d.TOS, d.HasTOS, dir.tos)
						}
					}
				})
				if got != 3 {
					t.Fatalf("received %d", got)
				}
			}
		})
	}
}

// IPV6_TCLASS alone does not mark IPv4 packets sent from an AF_INET6
// socket: that is why SetTOS uses IP_TOS for IPv4 peers.
func TestTOSDualStackNeedsIPTOS(t *testing.T) {
	srv := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
	cli := mustOpen(t, netip.AddrPort{}, SocketOptions{})
	mustConnect(t, cli, srv.LocalAddr())
	mustConnect(t, srv, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), cli.LocalAddr().Port()))
	if err := srv.EnableRecvTOS(true); err != nil {
		t.Fatal(err)
	}
	if err := cli.SetTOS(0xb8, false); err != nil { // IPV6_TCLASS
		t.Fatal(err)
	}
	var sb dataphase.SendBuffer
	var rb dataphase.RecvBatch
	fillPlan(&sb, 3, 0, 100)
	if _, err := cli.SendBatch(&sb); err != nil {
		t.Fatal(err)
	}
	recvAll(t, srv, &rb, 1, func(rb *dataphase.RecvBatch) {
		if d := rb.Dgrams[0]; d.TOS == 0xb8 {
			t.Logf("this kernel marks IPv4-mapped traffic from IPV6_TCLASS too")
		} else {
			t.Logf("IPV6_TCLASS on a dual-stack socket leaves IPv4 TOS at %#x, as expected", d.TOS)
		}
	})
}

func TestGSORefusalFallsBack(t *testing.T) {
	a, b := openPair(t, "127.0.0.1:0", SocketOptions{SockBuf: 4 << 20})
	if !a.GSOEnabled() {
		t.Skip("no GSO")
	}
	var msgs []string
	a.OnGSODisabled = func(m string) { msgs = append(msgs, m) }
	// Lift the planner's total-payload limit above the kernel's: the
	// kernel refuses 60 x 1,100 = 66,000 bytes (EMSGSIZE).
	a.sys.gsoMaxBytes = 70000
	var sb dataphase.SendBuffer
	var rb dataphase.RecvBatch
	for round := 0; round < 2; round++ {
		fillPlan(&sb, 4, 0, lens(60, 1100)...)
		sent, err := a.SendBatch(&sb)
		if err != nil {
			t.Fatal(err)
		}
		if sent != 60 {
			t.Fatalf("round %d: sent %d", round, sent)
		}
		if got := recvAll(t, b, &rb, 60, func(*dataphase.RecvBatch) {}); got != 60 {
			t.Fatalf("round %d: received %d", round, got)
		}
	}
	st := a.Stats()
	if a.GSOEnabled() || st.GSO || st.Counts[CountGSORefusals] != 1 {
		t.Fatalf("after a refusal: GSOEnabled %v, stats %+v", a.GSOEnabled(), st)
	}
	if len(msgs) != 1 || !strings.Contains(msgs[0], "GSO turned off") {
		t.Fatalf("hook messages %q", msgs)
	}
	t.Log(msgs[0])
}

// sendToClosedPort returns a socket connected to a loopback port nobody
// listens on, and the port, after sending it one 100-byte datagram tagged
// tag: the ICMP port unreachable for it is on its way.
func sendToClosedPort(t *testing.T, tag byte) (*Socket, netip.AddrPort) {
	t.Helper()
	a := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
	tmp := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
	port := tmp.LocalAddr()
	tmp.Close()
	mustConnect(t, a, port)
	var sb dataphase.SendBuffer
	fillPlan(&sb, tag, 0, 100)
	if _, err := a.SendBatch(&sb); err != nil {
		t.Fatal(err)
	}
	return a, port
}

// waitPollErr waits (up to 2 s) until a wait on a reports POLLERR: the
// ICMP error for an earlier datagram arrived.
func waitPollErr(t *testing.T, a *Socket) {
	t.Helper()
	fds := []waitFD{{sock: a}}
	end := time.Now().Add(await.Deadline)
	for !fds[0].errored && time.Now().Before(end) {
		if err := wait(fds, nil, clock.Mono().Add(100*time.Millisecond), clock.Mono()); err != nil {
			t.Fatal(err)
		}
	}
	if !fds[0].errored {
		t.Fatal("no POLLERR after the ICMP error")
	}
}

// ECONNREFUSED from an earlier ICMP port unreachable: the send that reports
// it did not go out, and the retry does.
func TestConnRefusedRetry(t *testing.T) {
	a, port := sendToClosedPort(t, 5)
	var sb dataphase.SendBuffer
	// The ICMP error sets the socket's error; POLLERR says so.
	waitPollErr(t, a)
	// Now someone listens there, and the next plan must arrive whole.
	l := mustOpen(t, port, SocketOptions{})
	fillPlan(&sb, 5, 10, 100, 100, 100)
	sent, err := a.SendBatch(&sb)
	if err != nil || sent != 3 {
		t.Fatalf("sent %d, %v", sent, err)
	}
	var rb dataphase.RecvBatch
	if got := recvAll(t, l, &rb, 3, func(*dataphase.RecvBatch) {}); got != 3 {
		t.Fatalf("received %d of 3", got)
	}
	if st := a.Stats(); st.Counts[CountConnRefused] != 1 || st.Counts.PathErrors() != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// A pending socket error raises POLLERR until it is read; clearError reads
// it, so the executor does not spin.
func TestPollErrCleared(t *testing.T) {
	a, _ := sendToClosedPort(t, 6)
	fds := []waitFD{{sock: a}}
	for n := 0; !fds[0].errored; n++ { // a signal may end a wait early
		if n > maxEarlyReturns {
			t.Fatal("no POLLERR")
		}
		if err := wait(fds, nil, clock.Mono().Add(await.Deadline), clock.Mono()); err != nil {
			t.Fatal(err)
		}
	}
	a.clearError()
	waitQuiet(t, fds, nil, clock.Mono().Add(20*time.Millisecond))
	if st := a.Stats(); st.Counts[CountSocketErrors] != 1 || st.Counts[CountConnRefused] != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestPathMTU(t *testing.T) {
	a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
	if m := a.PathMTU(); m < 1500 {
		t.Fatalf("loopback path MTU %d", m)
	}
	srv := mustOpen(t, netip.AddrPort{}, SocketOptions{})
	mustConnect(t, srv, netip.MustParseAddrPort("127.0.0.1:9"))
	if m := srv.PathMTU(); m < 1500 {
		t.Fatalf("dual-stack socket, IPv4 peer: path MTU %d", m)
	}
}

// Datagrams longer than a receive slot are cut, and their real length is
// reported (MSG_TRUNC); the largest IPv4 UDP payload goes without GSO.
func TestTruncatedLength(t *testing.T) {
	a, b := openPair(t, "127.0.0.1:0", SocketOptions{SockBuf: 4 << 20})
	var sb dataphase.SendBuffer
	var rb dataphase.RecvBatch
	fillPlan(&sb, 7, 0, maxIPv4Payload, maxIPv4Payload, 9000)
	if sent, err := a.SendBatch(&sb); err != nil || sent != 3 {
		t.Fatalf("sent %d, %v", sent, err)
	}
	var got []int
	recvAll(t, b, &rb, 3, func(rb *dataphase.RecvBatch) {
		for i := 0; i < rb.N; i++ {
			got = append(got, rb.Dgrams[i].Len)
			if len(rb.Data(i)) != dataphase.RecvSlotLen {
				t.Fatalf("kept %d", len(rb.Data(i)))
			}
		}
	})
	if len(got) != 3 || got[0] != maxIPv4Payload || got[2] != 9000 {
		t.Fatalf("lengths %v", got)
	}
}

// fakeSend plays a script of sendmmsg results and records what was asked.
type fakeSend struct {
	script []fakeResult // consumed in order; when empty, accept everything
	calls  []fakeCall
}

type fakeResult struct {
	accept int // messages to accept (when e is 0)
	e      unix.Errno
}

type fakeCall struct {
	msgs    int
	gsoSegs []int // per message: UDP_SEGMENT size, 0 if none
}

func (f *fakeSend) send(fd int, msgs []unix.Mmsghdr) (int, unix.Errno) {
	c := fakeCall{msgs: len(msgs)}
	for i := range msgs {
		seg := 0
		if msgs[i].Hdr.Controllen > 0 {
			ctl := unsafe.Slice(msgs[i].Hdr.Control, msgs[i].Hdr.Controllen)
			seg = int(*(*uint16)(unsafe.Pointer(&ctl[cmsgHdrLen])))
		}
		c.gsoSegs = append(c.gsoSegs, seg)
	}
	f.calls = append(f.calls, c)
	if len(f.script) == 0 {
		return len(msgs), 0
	}
	r := f.script[0]
	f.script = f.script[1:]
	if r.e != 0 {
		return 0, r.e
	}
	return min(r.accept, len(msgs)), 0
}

func TestSendErrnos(t *testing.T) {
	plan := append(lens(10, 1000, 500), repeat(3, 1000)...) // runs: 11 + 3, both GSO
	type want struct {
		sent      int  // returned to the core
		err       bool // a failure
		bp, block bool // backpressure, EAGAIN
		gso       bool // GSO still on
		refused   uint64
		path      SocketCounts // the path counters only
		kernel    uint64       // SentDatagrams: what the kernel took
		gsoRef    uint64
		calls     int
	}
	cases := []struct {
		name   string
		script []fakeResult
		want   want
	}{
		{"all accepted", nil, want{sent: 14, gso: true, kernel: 14, calls: 1}},
		{"EAGAIN after the first message", []fakeResult{{accept: 1}, {e: unix.EAGAIN}},
			want{sent: 11, bp: true, block: true, gso: true, refused: 3, kernel: 11, calls: 2}},
		{"ENOBUFS at once", []fakeResult{{e: unix.ENOBUFS}}, want{bp: true, gso: true, refused: 14, calls: 1}},
		{"EPERM (netfilter)", []fakeResult{{e: unix.EPERM}}, want{bp: true, gso: true, refused: 14, calls: 1}},
		{"EIO on GSO: resent without GSO", []fakeResult{{e: unix.EIO}}, want{sent: 14, kernel: 14, gsoRef: 1, calls: 2}},
		{"EINVAL on GSO after one message", []fakeResult{{accept: 1}, {e: unix.EINVAL}},
			want{sent: 14, kernel: 14, gsoRef: 1, calls: 3}},
		{"ECONNREFUSED once: retried", []fakeResult{{e: unix.ECONNREFUSED}},
			want{sent: 14, gso: true, path: SocketCounts{CountConnRefused: 1}, kernel: 14, calls: 2}},
		{"ECONNREFUSED twice: the message is given up", []fakeResult{{e: unix.ECONNREFUSED}, {e: unix.ECONNREFUSED}},
			want{sent: 14, gso: true, path: SocketCounts{CountConnRefused: 2, CountGivenUp: 11}, kernel: 3, calls: 3}},
		{"four path errors: the plan is given up", repeatResult(4, unix.ECONNREFUSED),
			want{sent: 14, gso: true, path: SocketCounts{CountConnRefused: 4, CountGivenUp: 14}, calls: 4}},
		{"EHOSTUNREACH once (admin prohibited)", []fakeResult{{e: unix.EHOSTUNREACH}},
			want{sent: 14, gso: true, path: SocketCounts{CountHostUnreachable: 1}, kernel: 14, calls: 2}},
		{"EHOSTDOWN once", []fakeResult{{e: unix.EHOSTDOWN}},
			want{sent: 14, gso: true, path: SocketCounts{CountHostUnreachable: 1}, kernel: 14, calls: 2}},
		{"ENETUNREACH once", []fakeResult{{accept: 1}, {e: unix.ENETUNREACH}},
			want{sent: 14, gso: true, path: SocketCounts{CountNetUnreachable: 1}, kernel: 14, calls: 3}},
		{"EACCES once (ICMPv6 prohibited)", []fakeResult{{e: unix.EACCES}},
			want{sent: 14, gso: true, path: SocketCounts{CountProhibited: 1}, kernel: 14, calls: 2}},
		{"EPROTO once (parameter problem)", []fakeResult{{e: unix.EPROTO}},
			want{sent: 14, gso: true, path: SocketCounts{CountOtherPathErrors: 1}, kernel: 14, calls: 2}},
		// A pending EMSGSIZE (fragmentation needed) on a GSO message:
		// the retry goes out, and GSO stays on.
		{"EMSGSIZE once on GSO: pending, GSO kept", []fakeResult{{e: unix.EMSGSIZE}},
			want{sent: 14, gso: true, path: SocketCounts{CountMessageTooBig: 1}, kernel: 14, calls: 2}},
		{"EMSGSIZE once on the second GSO message", []fakeResult{{accept: 1}, {e: unix.EMSGSIZE}},
			want{sent: 14, gso: true, path: SocketCounts{CountMessageTooBig: 1}, kernel: 14, calls: 3}},
		// The kernel refusing the message itself: the retry meets it too.
		{"EMSGSIZE twice on GSO: refused, GSO off", []fakeResult{{e: unix.EMSGSIZE}, {e: unix.EMSGSIZE}},
			want{sent: 14, kernel: 14, gsoRef: 1, calls: 3}},
		{"EINTR: retried", []fakeResult{{e: unix.EINTR}}, want{sent: 14, gso: true, kernel: 14, calls: 2}},
		{"other error", []fakeResult{{accept: 1}, {e: unix.EBADF}}, want{sent: 11, err: true, gso: true, kernel: 11, calls: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
			// The fake send call never asks the kernel: GSO is on here on
			// every machine, whatever this kernel offers.
			a.gso.Store(true)
			hooks := 0
			a.OnGSODisabled = func(string) { hooks++ }
			f := &fakeSend{script: tc.script}
			a.sys.sendFn = f.send
			var sb dataphase.SendBuffer
			fillPlan(&sb, 9, 0, plan...)
			sent, err := a.SendBatch(&sb)
			st := a.Stats()
			w := tc.want
			if sent != w.sent || (err != nil) != w.err {
				t.Fatalf("sent %d, err %v; want %d, err %v", sent, err, w.sent, w.err)
			}
			if a.sys.lastSendBackpressure() != w.bp || a.sys.lastSendWouldBlock() != w.block {
				t.Fatalf("backpressure %v/%v", a.sys.lastSendBackpressure(), a.sys.lastSendWouldBlock())
			}
			if a.GSOEnabled() != w.gso || (hooks == 1) == w.gso {
				t.Fatalf("GSO %v, hook called %d times", a.GSOEnabled(), hooks)
			}
			if st.Counts[CountRefusedDatagrams] != w.refused || pathCounts(st.Counts) != w.path || st.Counts[CountSentDatagrams] != w.kernel || st.Counts[CountGSORefusals] != w.gsoRef {
				t.Fatalf("stats %+v", st)
			}
			if w.bp != (st.Counts[CountBackpressure] == 1) {
				t.Fatalf("stats %+v", st)
			}
			if len(f.calls) != w.calls {
				t.Fatalf("%d calls %+v, want %d", len(f.calls), f.calls, w.calls)
			}
			if f.calls[0].msgs != 2 || f.calls[0].gsoSegs[0] != 1000 || f.calls[0].gsoSegs[1] != 1000 {
				t.Fatalf("first call %+v: want two GSO messages of 1000-byte segments", f.calls[0])
			}
			if !w.gso {
				last := f.calls[len(f.calls)-1]
				for _, s := range last.gsoSegs {
					if s != 0 {
						t.Fatalf("resend still uses GSO: %+v", last)
					}
				}
				// Resent from the refused message on: what was accepted
				// is not sent twice.
				want := 14
				if tc.script[0].accept > 0 {
					want = 3
				}
				if last.msgs != want {
					t.Fatalf("resend of %d messages, want %d", last.msgs, want)
				}
			} else if w.gsoRef == 0 && !w.bp && !w.err {
				// A path error changes nothing of the plan: the retry is
				// the same GSO messages from the one that met it.
				for _, c := range f.calls {
					for _, s := range c.gsoSegs {
						if s != 1000 {
							t.Fatalf("calls %+v: a retry without GSO", f.calls)
						}
					}
				}
			}
		})
	}
}

// pathCounts keeps the path counters of c (and the datagrams given up or
// discarded), zeroing the rest.
func pathCounts(c SocketCounts) SocketCounts {
	var p SocketCounts
	for k := CountConnRefused; k <= CountPreConnect; k++ {
		p[k] = c[k]
	}
	return p
}

func repeatResult(n int, e unix.Errno) []fakeResult {
	r := make([]fakeResult, n)
	for i := range r {
		r[i].e = e
	}
	return r
}

// Connect discards what was queued before it: those datagrams passed no
// source filter. After it, only the peer's arrive.
func TestConnectDiscardsQueued(t *testing.T) {
	s := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
	other := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
	peer := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
	for i := 0; i < 5; i++ {
		if err := other.SendTo([]byte("forged status"), s.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(10 * time.Millisecond) // loopback delivers at once; be generous
	mustConnect(t, s, peer.LocalAddr())
	if err := other.SendTo([]byte("forged after"), s.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if err := peer.SendTo([]byte("peer"), s.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	var rb dataphase.RecvBatch
	got := recvAll(t, s, &rb, 1, func(rb *dataphase.RecvBatch) {
		for i := 0; i < rb.N; i++ {
			if string(rb.Data(i)) != "peer" {
				t.Fatalf("read %q", rb.Data(i))
			}
		}
	})
	if got != 1 {
		t.Fatalf("read %d", got)
	}
	if st := s.Stats(); st.Counts[CountPreConnect] != 5 {
		t.Fatalf("discarded %d, want 5", st.Counts[CountPreConnect])
	}
}

// With IP_RECVERR on (the engine does not set it; a socket handed over
// might have it), ICMP errors also queue on the error queue, which keeps
// POLLERR raised until drained: clearError drains it.
func TestErrQueueDrained(t *testing.T) {
	a := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
	if err := unix.SetsockoptInt(a.Fd(), unix.IPPROTO_IP, unix.IP_RECVERR, 1); err != nil {
		t.Skip(err)
	}
	tmp := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
	port := tmp.LocalAddr()
	tmp.Close()
	mustConnect(t, a, port)
	var sb dataphase.SendBuffer
	fds := []waitFD{{sock: a}}
	for i := 0; i < 3; i++ {
		fillPlan(&sb, 8, uint32(i), 100)
		a.SendBatch(&sb) // a pending error may refuse one: counted, retried
		fds[0].errored = false
		end := time.Now().Add(time.Second)
		for !fds[0].errored && time.Now().Before(end) {
			if err := wait(fds, nil, clock.Mono().Add(100*time.Millisecond), clock.Mono()); err != nil {
				t.Fatal(err)
			}
		}
	}
	a.clearError()
	start := clock.Mono()
	fds[0].errored = false
	if err := wait(fds, nil, start.Add(20*time.Millisecond), start); err != nil {
		t.Fatal(err)
	}
	if fds[0].errored {
		t.Fatal("POLLERR still raised after clearError")
	}
	st := a.Stats()
	if st.Counts[CountSocketErrors] == 0 || st.Counts[CountConnRefused] == 0 {
		t.Fatalf("stats %+v", st)
	}
	t.Logf("error queue and pending errors: socket_errors %d, port unreachable %d", st.Counts[CountSocketErrors], st.Counts[CountConnRefused])
}

// A router answers every packet too big with an ICMP error, so after the
// first EMSGSIZE more may be pending: they are taken (and counted) before
// the retry, which then goes out, and GSO stays on. Here the first error
// is played by sendFn and a real one (a port unreachable) is pending
// behind it.
func TestPendingTakenBeforeRetry(t *testing.T) {
	a, _ := sendToClosedPort(t, 11)
	if !a.GSOEnabled() {
		t.Skip("no GSO")
	}
	waitPollErr(t, a)
	f := &fakeSend{script: []fakeResult{{e: unix.EMSGSIZE}}}
	a.sys.sendFn = f.send
	var sb dataphase.SendBuffer
	fillPlan(&sb, 11, 0, lens(10, 1000)...)
	sent, err := a.SendBatch(&sb)
	st := a.Stats()
	if sent != 10 || err != nil || !a.GSOEnabled() || st.Counts[CountGSORefusals] != 0 {
		t.Fatalf("sent %d, %v, GSO %v, stats %+v", sent, err, a.GSOEnabled(), st)
	}
	if st.Counts[CountMessageTooBig] != 1 || st.Counts[CountConnRefused] != 1 || len(f.calls) != 2 {
		t.Fatalf("stats %+v, %d calls", st, len(f.calls))
	}
}

// The batched send and receive allocate nothing. Linux's only: the
// fallback socket (socket_other.go, the portable build) goes through
// net.UDPConn and syscall.Recvfrom, which allocate.
func TestBatchAllocs(t *testing.T) {
	a, b := openPair(t, "127.0.0.1:0", SocketOptions{SockBuf: 4 << 20})
	var sb dataphase.SendBuffer
	var rb dataphase.RecvBatch
	fillPlan(&sb, 1, 0, lens(20, 1222, 100)...)
	for _, random := range []bool{false, true} {
		sb.RandomFill = random
		allocs := race.AllocsPerRun(200, func() {
			if _, err := a.SendBatch(&sb); err != nil {
				t.Fatal(err)
			}
			for {
				if err := b.RecvBatch(&rb, dataphase.MaxRecv); err != nil {
					t.Fatal(err)
				}
				if rb.N == 0 {
					break
				}
			}
		})
		if allocs != 0 {
			t.Fatalf("random=%v: SendBatch+RecvBatch allocate %v times per call", random, allocs)
		}
	}
}
