package control

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/memnet"
	"github.com/udpstp/udpstp/internal/testkit/race"
)

func testClientConfig() ClientConfig {
	c := DefaultClientConfig()
	c.TestIntTime = 5
	return c
}

// TestControlPhaseInMemory runs our client's Control Phase against our
// server's, with and without a key, and checks what both ends agree on.
func TestControlPhaseInMemory(t *testing.T) {
	for _, key := range []string{"", "in-memory-key"} {
		cfg := DefaultServerConfig()
		ccfg := testClientConfig()
		ccfg.Upstream = true
		ccfg.SRIndex, ccfg.StartIndex = 100, true
		if key != "" {
			keys, _ := NewServerKeys(key, nil)
			cfg.Keys = keys
			ccfg.Key, ccfg.KeyID = []byte(key), 3
		}
		s, cn, _ := inMemory(t, cfg, ServerOptions{})
		cc, err := Activate(context.Background(), cn, &ccfg, ServerAddr{Host: "127.0.0.1", Port: cfg.Port}, 0, 77, func(string) {})
		if err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
		if !cc.Params.Upstream || cc.Params.SRIndexConf != 100 || !cc.Params.StartIndex || cc.Params.InitialRate != s.table[100] {
			t.Errorf("key %q: client params %+v", key, cc.Params)
		}
		if cc.Params.TestIntTime != 5*time.Second || cc.Params.TrialInt != 50*time.Millisecond {
			t.Errorf("key %q: durations %v %v", key, cc.Params.TestIntTime, cc.Params.TrialInt)
		}
		cc.Sock.Close()
	}
}

// junk returns assorted datagrams that are no valid PDU for anyone.
func junk(r *rand.Rand) [][]byte {
	out := [][]byte{nil, {0xac}, make([]byte, 55), make([]byte, 57), make([]byte, 104), make([]byte, 2000)}
	b := make([]byte, SetupLen)
	copy(b, []byte{0xac, 0xe1, 0, 20, 0, 1, 0, 1, 3}) // cmdRequest 3
	out = append(out, b)
	b = (&SetupPDU{ProtocolVer: 20, MCCount: 1, CmdRequest: 1, ModifierBitmap: SetupJumbo}).Encode(make([]byte, SetupLen))
	b[54], b[55] = 0xbe, 0xef // a checksum that does not verify
	out = append(out, b)
	for i := 0; i < 20; i++ {
		b := make([]byte, r.IntN(300))
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		out = append(out, b)
	}
	return out
}

// TestServerDropsJunk floods the control socket and a new test socket with
// datagrams that are no valid request: the server answers none of them,
// counts them, and still serves the real client.
func TestServerDropsJunk(t *testing.T) {
	cfg := DefaultServerConfig()
	s, cn, w := inMemory(t, cfg, ServerOptions{})
	r := rand.New(rand.NewPCG(1, 2))
	attacker := netip.MustParseAddrPort("127.0.0.1:666")
	ctl := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(cfg.Port))
	for _, b := range junk(r) {
		w.Send(b, attacker, ctl)
	}
	// Junk aimed at the test socket the real client is about to use.
	var injected atomic.Bool
	w.SetTap(func(b []byte, from, to netip.AddrPort) bool {
		if from == ctl && len(b) == SetupLen && b[9] == SetupAccepted && !injected.Swap(true) {
			var resp SetupPDU
			resp.Decode(b)
			tp := netip.AddrPortFrom(ctl.Addr(), resp.TestPort)
			go func() {
				for _, j := range junk(r) {
					w.Send(j, attacker, tp)
				}
			}()
		}
		return true
	})
	ccfg := testClientConfig()
	cc, err := Activate(context.Background(), cn, &ccfg, ServerAddr{Host: "127.0.0.1", Port: cfg.Port}, 0, 9, func(string) {})
	if err != nil {
		t.Fatalf("the real client was not served: %v", err)
	}
	cc.Sock.Close()
	if n := s.Counters.Load(CountSetupInvalid); n < 20 {
		t.Errorf("%d invalid Setup Requests counted", n)
	}
	for _, d := range s.ctl[0].(*memnet.Socket).Sent() {
		if d.Addr == attacker {
			t.Errorf("the server answered junk: %x", d.B)
		}
	}
}

// TestClientIgnoresJunk puts junk in front of the server's answers: the
// client alerts on what is not a Null PDU, ignores Null PDUs of any length,
// and completes its activation.
func TestClientIgnoresJunk(t *testing.T) {
	cfg := DefaultServerConfig()
	_, cn, w := inMemory(t, cfg, ServerOptions{})
	r := rand.New(rand.NewPCG(3, 4))
	ctl := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(cfg.Port))
	w.SetTap(func(b []byte, from, to netip.AddrPort) bool {
		if from == ctl {
			w.Socket(to).Deliver([]byte{0xde, 0xad, 1}, ctl) // a short "Null PDU": ignored
			for _, j := range junk(r)[:8] {
				w.Socket(to).Deliver(j, ctl)
			}
		}
		return true
	})
	var alerts atomic.Int32
	ccfg := testClientConfig()
	cc, err := Activate(context.Background(), cn, &ccfg, ServerAddr{Host: "127.0.0.1", Port: cfg.Port}, 0, 9,
		func(string) { alerts.Add(1) })
	if err != nil {
		t.Fatalf("activation failed: %v", err)
	}
	cc.Sock.Close()
	if alerts.Load() < 7 {
		t.Errorf("%d alerts for 8 junk datagrams", alerts.Load())
	}
}

// TestActivationTimeoutReleases: a Setup Request that is never followed by
// a Test Activation holds a Test Connection and its bandwidth for OB-UDPST's
// 3 s, then releases both.
func TestActivationTimeoutReleases(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the 3 s setup timeout")
	}
	cfg := DefaultServerConfig()
	cfg.MaxBandwidth = 100
	s, cn, _ := inMemory(t, cfg, ServerOptions{})
	sock, _ := cn.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
	req := (&SetupPDU{ProtocolVer: 20, MCCount: 1, CmdRequest: 1, ModifierBitmap: SetupJumbo, MaxBandwidth: 60}).Encode(make([]byte, SetupLen))
	sock.SendTo(req, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(cfg.Port)))
	await.True(t, "the setup to hold a Test Connection and 60 Mbps", func() bool {
		conns, down, _ := s.Active()
		return conns == 1 && down == 60
	})
	await.True(t, "the unactivated Test Connection to be released", func() bool {
		conns, down, _ := s.Active()
		return conns == 0 && down == 0
	})
	if s.Counters.Load(CountActivationWait) != 1 {
		t.Errorf("timeout not counted")
	}
}

// TestLegacyClient plays an OB-UDPST 8.2.0 client (protocol 11) against our
// server: a 56-byte Setup Request answered without a Null PDU, a 60-byte
// Test Activation answered in the same length with the Sub-Interval in
// seconds at offset 14 and the checksum slot at 58, and a legacy Data
// Phase.
func TestLegacyClient(t *testing.T) {
	cfg := DefaultServerConfig()
	_, cn, _ := inMemory(t, cfg, ServerOptions{})
	sock, _ := cn.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
	fs := sock.(*memnet.Socket)
	ctl := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(cfg.Port))
	req := (&SetupPDU{ProtocolVer: 11, MCCount: 1, MCIdent: 5, CmdRequest: 1, ModifierBitmap: SetupJumbo}).Encode(make([]byte, SetupLen))
	sock.SendTo(req, ctl)
	buf := make([]byte, 2048)
	n, _, err := sock.RecvFrom(buf, time.Now().Add(await.Deadline))
	if err != nil {
		t.Fatal(err)
	}
	var resp SetupPDU
	if err := resp.Decode(buf[:n]); err != nil || resp.CmdResponse != SetupAccepted || resp.ProtocolVer != 11 {
		t.Fatalf("setup response %+v, %v", resp, err)
	}
	ta := ActivationPDU{ProtocolVer: 11, CmdRequest: ActivationUpstream, LowThresh: 30, UpperThresh: 90, TrialInt: 50,
		TestIntTime: 5, SubIntPeriodSec: 1, SRIndexConf: 0xFFFF, HighSpeedDelta: 10, SlowAdjThresh: 3, SeqErrThresh: 10, IgnoreOooDup: 1}
	testPort := netip.AddrPortFrom(ctl.Addr(), resp.TestPort)
	sock.Connect(testPort)
	// With the optional checksum: the answer must not echo it, since the
	// coerced values would no longer verify against it.
	taOut := ta.Encode(make([]byte, ActivationLen), true)
	SealControlChecksum(taOut)
	sock.Send(taOut)
	n, _, err = sock.RecvFrom(buf, time.Now().Add(await.Deadline))
	if err != nil {
		t.Fatalf("no activation response: %v (sent %d datagrams)", err, len(fs.Sent()))
	}
	if IsNullPDU(buf[:n]) {
		t.Fatal("a Null PDU for a protocol 11 client")
	}
	if n != ActivationLegacyLen {
		t.Fatalf("activation response of %d bytes, want 60", n)
	}
	var got ActivationPDU
	if err := got.Decode(buf[:n], true); err != nil || got.CmdResponse != ActivationAccepted || got.SubIntPeriodSec != 1 {
		t.Fatalf("activation response %+v, %v", got, err)
	}
	if got.Rate.TxInterval2 != 50000 {
		t.Errorf("upstream response without row 0: %+v", got.Rate)
	}
}

// TestJunkIsCheap keeps the server's drop of a flood cheap: neither a
// datagram that is no Setup Request (of any kind of fault) nor a request
// over its source's rate costs an allocation, and each fault is counted
// under its own counter.
func TestJunkIsCheap(t *testing.T) {
	cfg := DefaultServerConfig()
	cfg.BindAddrs = []string{"127.0.0.1"}
	s, err := NewServerWith(cfg, fakeNet{&memnet.Net{}}, slog.New(slog.DiscardHandler), ServerOptions{SetupRate: 0.001, SetupBurst: 1})
	if err != nil {
		t.Fatal(err)
	}
	from := netip.MustParseAddrPort("192.0.2.1:5")
	limited := (&SetupPDU{ProtocolVer: 20, MCCount: 1, CmdRequest: 1}).Encode(make([]byte, SetupLen))
	s.handleSetup(s.ctl[0], limited, from, netip.Addr{}) // the source's one token
	badChecksum := append([]byte(nil), limited...)
	SealControlChecksum(badChecksum)
	badChecksum[10] ^= 0xff
	badCmd := append([]byte(nil), limited...)
	badCmd[8] = 7
	ackOK := (&SetupPDU{ProtocolVer: 20, MCCount: 1, CmdRequest: 1, CmdResponse: SetupAccepted}).Encode(make([]byte, SetupLen))
	for _, c := range []struct {
		name string
		b    []byte
		max  float64
	}{
		{"wrong identifier", make([]byte, SetupLen), 0},
		{"too short", limited[:20], 0},
		{"too long", append(append([]byte(nil), limited...), 0), 0},
		{"bad checksum", badChecksum, 0},
		{"bad cmdRequest", badCmd, 0},
		{"ACKOK in a request", ackOK, 0},
		{"over the rate", limited, 0},
	} {
		if n := race.AllocsPerRun(100, func() { s.handleSetup(s.ctl[0], c.b, from, netip.Addr{}) }); n > c.max {
			t.Errorf("%s: %v allocations per datagram, want at most %v", c.name, n, c.max)
		}
	}
	for _, c := range []struct {
		counter ServerCounter
		min     uint64
	}{{CountInvalidSize, 2}, {CountInvalidChecksum, 1}, {CountInvalidFormat, 3}} {
		if got := s.Counters.Load(c.counter); got < c.min {
			t.Errorf("counter %v = %d, want at least %d runs' worth", c.counter, got, c.min)
		}
	}
	// A protocol 8 or 10 request over the rate is widened in the receive
	// buffer (legacy.go): no allocation either. Each run gets the request
	// afresh in the same buffer, as the control loop's reads do.
	for _, pver := range []uint16{8, 10} {
		req := encodeSetupProto(&SetupPDU{ProtocolVer: pver, MCCount: 1, CmdRequest: 1}, make([]byte, SetupLen))
		buf := make([]byte, 2048)
		if n := race.AllocsPerRun(100, func() {
			copy(buf, req)
			s.handleSetup(s.ctl[0], buf[:len(req)], from, netip.Addr{})
		}); n > 0 {
			t.Errorf("protocol %d over the rate: %v allocations per datagram, want 0", pver, n)
		}
	}
}
