package control

// The server's Control Phase defences (docs/security.md) on the in-memory
// network: the pending budget and its fair eviction, the binding of a Test
// Activation to its Setup's address, the replay cache, the refusal answer
// budget and the logging of refusals by episode. cmd/udpstp's hostile
// tests attack real processes in network namespaces.

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/memnet"
)

// endpoint binds an in-memory socket at addr on the wire, to send from and
// see what comes back.
func endpoint(w *memnet.Wire, addr string) *memnet.Socket {
	s, err := (&memnet.Net{Wire: w}).Listen(netip.MustParseAddrPort(addr), dataphase.FamilyAny)
	if err != nil {
		panic(err)
	}
	return s
}

// recv waits up to d for a datagram on s.
func recv(s *memnet.Socket, d time.Duration) ([]byte, netip.AddrPort, bool) {
	b := make([]byte, 2048)
	n, from, err := s.RecvFrom(b, time.Now().Add(d))
	if err != nil {
		return nil, netip.AddrPort{}, false
	}
	return b[:n], from, true
}

// setupFrom sends a valid Setup Request from ep and returns the Setup
// Response's test port (0 if refused or unanswered).
func setupFrom(t *testing.T, ep *memnet.Socket, ctl netip.AddrPort) uint16 {
	t.Helper()
	req := (&SetupPDU{ProtocolVer: ProtocolVersion, MCCount: 1, CmdRequest: SetupCmdRequest, ModifierBitmap: SetupJumbo}).Encode(make([]byte, SetupLen))
	ep.SendTo(req, ctl)
	for {
		b, _, ok := recv(ep, 2*time.Second)
		if !ok {
			return 0
		}
		if IsNullPDU(b) {
			continue
		}
		var resp SetupPDU
		if err := resp.Decode(b); err != nil || resp.CmdResponse != SetupAccepted {
			return 0
		}
		return resp.TestPort
	}
}

// TestSetupFloodDoesNotLockOut: Setup Requests from 20 sources that never
// activate reserve every slot over and over; a client from another address
// still gets in at once, because a newer Setup evicts the oldest pending
// Test Connection, and the client's are the youngest. Before, the flood
// held every slot (ErrorStatus 113).
func TestSetupFloodDoesNotLockOut(t *testing.T) {
	cfg := DefaultServerConfig()
	cfg.MaxConnections = 64 // more than the sources, as 254 slots are for 20
	s, cn, w := inMemory(t, cfg, ServerOptions{})
	ctl := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(cfg.Port))
	req := (&SetupPDU{ProtocolVer: ProtocolVersion, MCCount: 1, CmdRequest: SetupCmdRequest, ModifierBitmap: SetupJumbo}).Encode(make([]byte, SetupLen))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for src := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ep := endpoint(w, netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 1, byte(src + 1)}), 5000).String())
			// 1,000 a second in all: each pending Test Connection lives
			// 64 ms before it is the oldest, far longer than the client
			// takes to activate in memory.
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for i := 0; i < 500; i++ { // bounded: 10 s
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				ep.SendTo(req, ctl)
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	await.True(t, "every slot reserved", func() bool { return s.Counters.Load(CountPendingEvicted) > 0 })
	ccfg := testClientConfig()
	if _, err := Activate(context.Background(), cn, &ccfg, ServerAddr{Host: "127.0.0.1", Port: cfg.Port}, 0, 5, func(string) {}); err != nil {
		t.Fatalf("a client from another address during the flood: %v", err)
	}
	if conns, _, _ := s.adm.snapshot(); conns > cfg.MaxConnections {
		t.Errorf("%d Test Connections reserved, %d slots", conns, cfg.MaxConnections)
	}
}

// TestPendingVictim: the oldest pending Test Connection of another,
// unproven source goes, whatever the sources hold (a -C 8 client's later
// Setups get in during a flood from many sources, one Setup each: issue
// 22); a source never evicts its own, and a trusted source's are never
// evicted.
func TestPendingVictim(t *testing.T) {
	now := time.Now()
	p := newPendingSet(0, 0)
	var seq uint64
	add := func(src string, age time.Duration) *serverConn {
		seq++
		sc := &serverConn{peer: netip.AddrPortFrom(netip.MustParseAddr(src), 1), seq: seq, at: now.Add(-age)}
		p.add(sc)
		return sc
	}
	a1 := add("192.0.2.1", time.Second)
	add("192.0.2.1", time.Second)
	b := add("192.0.2.2", time.Second)
	if v := p.victim(netip.MustParseAddr("192.0.2.9"), now); v != a1 {
		t.Errorf("victim %v, want the oldest", v)
	}
	if v := p.victim(netip.MustParseAddr("192.0.2.1"), now); v != b {
		t.Errorf("victim %v of a Setup from 192.0.2.1, want the other source's oldest", v)
	}
	p.remove(b, now)
	if v := p.victim(netip.MustParseAddr("192.0.2.1"), now); v != nil {
		t.Errorf("a source evicted its own %v", v)
	}
	trusted := netip.MustParseAddr("192.0.2.20")
	p.get(trusted).until = now.Add(time.Minute)
	add("192.0.2.20", time.Hour)
	if v := p.victim(netip.MustParseAddr("192.0.2.9"), now); v != a1 {
		t.Errorf("victim %v, want the unproven source's oldest, not the trusted one's", v)
	}
	for _, sc := range append([]*serverConn(nil), p.sources[p.key(a1.peer.Addr())].pending...) {
		p.remove(sc, now)
	}
	if v := p.victim(netip.MustParseAddr("192.0.2.9"), now); v != nil {
		t.Errorf("a trusted source's pending Test Connection %v was evicted", v)
	}
}

// TestUnprovenPendingBurst: a source that has not shown it receives
// holds UnprovenPending pending Test Connections, plus a burst bucket up
// to MaxPendingPerSource that refills slowly; once trusted it holds
// MaxPendingPerSource again at once; IPv6 sources count by their /56.
func TestUnprovenPendingBurst(t *testing.T) {
	now := time.Now()
	p := newPendingSet(0, 1000)
	var seq uint64
	fill := func(src string) int {
		n := 0
		for p.admit(netip.MustParseAddr(src), now) == capOK {
			seq++
			p.add(&serverConn{peer: netip.AddrPortFrom(netip.MustParseAddr(src), 1), seq: seq, at: now})
			n++
		}
		return n
	}
	if n := fill("192.0.2.1"); n != MaxPendingPerSource {
		t.Fatalf("first burst: %d admitted, want %d", n, MaxPendingPerSource)
	}
	for _, sc := range append([]*serverConn(nil), p.sources[p.key(netip.MustParseAddr("192.0.2.1"))].pending...) {
		p.remove(sc, now)
	}
	if n := fill("192.0.2.1"); n != UnprovenPending {
		t.Errorf("bucket spent: %d admitted, want %d", n, UnprovenPending)
	}
	p.get(netip.MustParseAddr("192.0.2.1")).validated = 1
	if n := fill("192.0.2.1"); n != MaxPendingPerSource-UnprovenPending {
		t.Errorf("trusted: %d more admitted, want %d", n, MaxPendingPerSource-UnprovenPending)
	}
	fill("2001:db8:0:1::1")
	if p.admit(netip.MustParseAddr("2001:db8:0:ff::1"), now) == capOK {
		t.Errorf("another /64 of the same /56 was admitted past the source's caps")
	}
	if p.admit(netip.MustParseAddr("2001:db8:0:100::1"), now) != capOK {
		t.Errorf("another /56 was refused")
	}
}

// TestPendingPerSourceCap: one source holds at most MaxPendingPerSource
// Test Connections awaiting activation; beyond, it is refused with code 13
// (answered: a refusal is no larger than the request).
func TestPendingPerSourceCap(t *testing.T) {
	s, _, w := inMemory(t, DefaultServerConfig(), ServerOptions{})
	ctl := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(DefaultServerConfig().Port))
	ep := endpoint(w, "127.0.0.9:5000")
	req := (&SetupPDU{ProtocolVer: ProtocolVersion, MCCount: 1, CmdRequest: SetupCmdRequest, ModifierBitmap: SetupJumbo}).Encode(make([]byte, SetupLen))
	for range MaxPendingPerSource + 10 {
		ep.SendTo(req, ctl)
	}
	await.True(t, "every request handled", func() bool { return s.Counters.Load(CountSetupRequests) == MaxPendingPerSource+10 })
	if got := s.Counters.Load(CountSetupAccepted); got != MaxPendingPerSource {
		t.Errorf("%d accepted from one source, want %d", got, MaxPendingPerSource)
	}
	if got := s.Snapshot().Rejected[SetupConnFail]; got != 10 {
		t.Errorf("%d refused with code 13, want 10", got)
	}
}

// TestActivationBoundToSetupAddress: a Test Activation from another address
// than its Setup's is dropped and counted, so a forged source cannot aim
// the Load stream at a third party; one from another port of the same
// address (a NAT mapping by destination) is taken.
func TestActivationBoundToSetupAddress(t *testing.T) {
	s, _, w := inMemory(t, DefaultServerConfig(), ServerOptions{})
	ctl := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(DefaultServerConfig().Port))
	client := endpoint(w, "127.0.0.2:5000")
	port := setupFrom(t, client, ctl)
	if port == 0 {
		t.Fatal("setup refused")
	}
	testPort := netip.AddrPortFrom(ctl.Addr(), port)
	ccfg := testClientConfig()
	tap := activationRequest(&ccfg)
	ta := tap.Encode(make([]byte, ActivationLen), false)

	victim := endpoint(w, "127.0.0.3:5000")
	victim.SendTo(ta, testPort)
	await.True(t, "the forged activation counted", func() bool { return s.Counters.Load(CountActivationForeign) == 1 })
	if b, _, ok := recv(victim, 100*time.Millisecond); ok {
		t.Fatalf("the forged source got %d bytes", len(b))
	}

	natted := endpoint(w, "127.0.0.2:6000")
	natted.SendTo(ta, testPort)
	b, from, ok := recv(natted, 5*time.Second)
	if !ok || from != testPort || len(b) != ActivationLen {
		t.Fatalf("activation from another port of the setup's address: got %d bytes from %v, %v", len(b), from, ok)
	}
}

// TestShortActivationAnswered: a protocol 20 connection takes a Test
// Activation Request of 60..103 bytes, as OB-UDPST's server does, and
// answers with the same length.
func TestShortActivationAnswered(t *testing.T) {
	_, _, w := inMemory(t, DefaultServerConfig(), ServerOptions{})
	ctl := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(DefaultServerConfig().Port))
	for i, n := range []int{ActivationLegacyLen, 80, ActivationLen - 1} {
		client := endpoint(w, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), uint16(7000+i)).String())
		port := setupFrom(t, client, ctl)
		ccfg := testClientConfig()
		tap := activationRequest(&ccfg)
		ta := tap.Encode(make([]byte, ActivationLen), false)[:n]
		client.SendTo(ta, netip.AddrPortFrom(ctl.Addr(), port))
		b, _, ok := recv(client, 5*time.Second)
		for ok && IsNullPDU(b) {
			b, _, ok = recv(client, 5*time.Second)
		}
		if !ok || len(b) != n || binary.BigEndian.Uint16(b) != ActivationPDUID || b[5] != ActivationAccepted {
			t.Errorf("%d-byte request: answer of %d bytes (%v)", n, len(b), ok)
		}
	}
}

// TestSetupRequestCarryingAckDropped: a request whose cmdResponse says
// ACKOK is not echoed back as "accepted" with no test port.
func TestSetupRequestCarryingAckDropped(t *testing.T) {
	s, _, w := inMemory(t, DefaultServerConfig(), ServerOptions{})
	ctl := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(DefaultServerConfig().Port))
	ep := endpoint(w, "127.0.0.4:5000")
	req := (&SetupPDU{ProtocolVer: ProtocolVersion, MCCount: 1, CmdRequest: SetupCmdRequest, ModifierBitmap: SetupJumbo}).Encode(make([]byte, SetupLen))
	req[9] = SetupAccepted
	ep.SendTo(req, ctl)
	await.True(t, "the request counted", func() bool { return s.Counters.Load(CountSetupRequests) == 1 })
	if b, _, ok := recv(ep, 100*time.Millisecond); ok {
		t.Fatalf("answered with %x", b)
	}
	if s.Counters.Load(CountSetupInvalid) != 1 {
		t.Errorf("SetupInvalid %d, want 1", s.Counters.Load(CountSetupInvalid))
	}
}

// TestReplayedSetupDropped: a captured authenticated Setup Request sent
// again within the time window, from anywhere, is dropped unanswered.
func TestReplayedSetupDropped(t *testing.T) {
	cfg := DefaultServerConfig()
	key := []byte("a key long enough for this test")
	cfg.Keys = &ServerKeys{Single: key}
	s, _, w := inMemory(t, cfg, ServerOptions{})
	ctl := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(cfg.Port))
	req := (&SetupPDU{ProtocolVer: ProtocolVersion, MCCount: 1, CmdRequest: SetupCmdRequest, ModifierBitmap: SetupJumbo}).Encode(make([]byte, SetupLen))
	now := uint32(time.Now().Unix())
	keys := DeriveKeys(key, now)
	Sign(req, keys.Client[:], now, 0)
	req[len(req)-authModeBack] = AuthControl
	first := endpoint(w, "127.0.0.5:5000")
	first.SendTo(req, ctl)
	if b, _, ok := recv(first, 5*time.Second); !ok || b[9] != SetupAccepted {
		t.Fatalf("the original request: %x, %v", b, ok)
	}
	for i := range 20 {
		replayer := endpoint(w, netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 2, byte(i + 1)}), 5000).String())
		replayer.SendTo(req, ctl)
		if b, _, ok := recv(replayer, 50*time.Millisecond); ok {
			t.Fatalf("replay %d answered: %x", i, b)
		}
	}
	if got := s.Counters.Load(CountSetupReplayed); got != 20 {
		t.Errorf("SetupReplayed %d, want 20", got)
	}
	if got := s.Counters.Load(CountSetupAccepted); got != 1 {
		t.Errorf("accepted %d, want 1", got)
	}
}

// TestRefusalsLoggedByEpisode: a flood of refused requests writes one line
// at its start and one summary with the count, not a line each; the
// answers stop at the source's answer budget.
func TestRefusalsLoggedByEpisode(t *testing.T) {
	var logBuf syncBuffer
	cfg := DefaultServerConfig()
	w := memnet.NewWire()
	cfg.BindAddrs = []string{"127.0.0.1"}
	s, err := NewServerWith(cfg, fakeNet{&memnet.Net{Wire: w}}, slog.New(slog.NewTextHandler(&logBuf, nil)), ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(ctx); close(done) }()
	ctl := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(cfg.Port))
	ep := endpoint(w, "127.0.0.6:5000")
	bad := (&SetupPDU{ProtocolVer: ProtocolVersion, MCCount: 1, CmdRequest: SetupCmdRequest}).Encode(make([]byte, SetupLen)) // jumbo mismatch
	const flood = 1000
	for range flood {
		ep.SendTo(bad, ctl)
	}
	await.True(t, "every request handled", func() bool { return s.Counters.Load(CountSetupRequests) == flood })
	cancel()
	<-done // Serve flushes the episodes as it ends
	log := logBuf.String()
	if n := strings.Count(log, "setup request rejected"); n != 1 {
		t.Errorf("%d 'setup request rejected' lines for %d refusals, want 1:\n%s", n, flood, log)
	}
	if !strings.Contains(log, "msg=\"setup requests refused\" more=999") {
		t.Errorf("no summary of the other 999 refusals:\n%s", log)
	}
	if lines := strings.Count(log, "\n"); lines > 6 {
		t.Errorf("%d log lines for a flood of %d:\n%s", lines, flood, log)
	}
	answered := s.Snapshot().Rejected[SetupJumboMismatch] - s.Counters.Load(CountRefusalUnanswered)
	if answered > refusalAnswerBurst+refusalAnswerRate*10 || answered < refusalAnswerBurst {
		t.Errorf("%d refusals answered, want about the answer burst %d", answered, refusalAnswerBurst)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestClientTakesSetupResponseOnlyFromTheServerAsked: a response from any
// other address (here one naming a test port of its own, accepted) is not
// taken; the client times out saying where the stray response came from.
// OB-UDPST's client takes it and tests against its source.
func TestClientTakesSetupResponseOnlyFromTheServerAsked(t *testing.T) {
	w := memnet.NewWire()
	asked := endpoint(w, "127.0.0.1:24601") // a server that never answers
	rogue := endpoint(w, "127.0.0.7:24601")
	w.SetTap(func(b []byte, from, to netip.AddrPort) bool {
		if to == asked.LocalAddr() && len(b) == SetupLen {
			resp := append([]byte(nil), b...)
			resp[8], resp[9] = SetupCmdResponse, SetupAccepted
			binary.BigEndian.PutUint16(resp[12:], 40404)
			go rogue.SendTo(resp, from)
		}
		return true
	})
	ccfg := testClientConfig()
	_, err := Activate(context.Background(), fakeNet{&memnet.Net{Wire: w, NextPort: 50000}}, &ccfg,
		ServerAddr{Host: "127.0.0.1", Port: 24601}, 0, 5, func(string) {})
	se, ok := err.(*SetupError)
	if !ok || se.Status != 1 || !strings.Contains(se.Msg, "127.0.0.7:24601") {
		t.Fatalf("a Setup Response from another address: %v", err)
	}
}
