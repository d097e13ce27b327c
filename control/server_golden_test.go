package control

import (
	"bytes"
	"io"
	"log/slog"
	"net/netip"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/golden"
	"github.com/udpstp/udpstp/internal/testkit/memnet"
)

// serverConfigOf builds our server's configuration from a reference run's
// udpst server command line.
func serverConfigOf(t *testing.T, sc golden.Scenario, argv []string) ServerConfig {
	t.Helper()
	o, ok := golden.ParseUdpstArgs(argv)
	if !ok {
		t.Fatalf("%v is not a udpst command", argv)
	}
	cfg := DefaultServerConfig()
	cfg.NoJumbo, cfg.TraditionalMTU, cfg.AllowRandom = o.Has('j'), o.Has('T'), o.Has('X')
	num := func(c byte, dst *int) {
		if v, ok := o.Opts[c]; ok {
			n, err := strconv.ParseInt(v, 0, 32)
			if err != nil {
				t.Fatalf("-%c %q: %v", c, v, err)
			}
			*dst = int(n)
		}
	}
	num('B', &cfg.MaxBandwidth)
	num('t', &cfg.MaxTestTime)
	num('m', &cfg.MaxDSCPECN)
	num('I', &cfg.MaxRateIndex)
	var kf *KeyFile
	if p, ok := o.Opts['K']; ok {
		var err error
		if kf, err = LoadKeyFile(filepath.Join(sc.Path, p)); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := NewServerKeys(o.Opts['a'], kf)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Keys = keys
	return cfg
}

// TestGoldenServerResponses replays every captured Setup Request and Test
// Activation Request to our server, configured as the reference server was,
// with its clock set to the capture's time, and compares our answers with
// OB-UDPST 9.0.0's byte for byte (the test port aside, which the kernel
// chooses, and the digest that covers it).
func TestGoldenServerResponses(t *testing.T) {
	for _, sc := range golden.Scenarios(t) {
		run, ok := sc.RunNamed("text")
		if !ok || len(run.ServerCmds) == 0 {
			continue
		}
		if _, ok := golden.ParseUdpstArgs(run.ServerCmds[0]); !ok {
			continue
		}
		pdus := sc.PDUs(t, "pdus.jsonl")
		if pdus == nil {
			continue
		}
		e, _ := sc.Expect("text")
		t.Run(sc.Name, func(t *testing.T) {
			cfg := serverConfigOf(t, sc, run.ServerCmds[0])
			replaySetup(t, cfg, e, pdus)
		})
	}
}

func replaySetup(t *testing.T, cfg ServerConfig, e golden.Expect, pdus []golden.PDU) {
	n := fakeNet{&memnet.Net{}}
	s, err := NewServer(cfg, n, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctl := n.Sockets()[0]
	// The server's clock, set to each answer's capture time; the server's
	// goroutines read it while the test moves it, hence the atomic.
	var now atomic.Int64
	s.now = func() time.Time { return time.Unix(now.Load(), 0) }
	loop := netip.MustParseAddr("127.0.0.1")
	testSock := map[int]*memnet.Socket{} // client port -> our test socket
	setupReq := map[int][]byte{}
	for i, p := range pdus {
		switch {
		case p.ID == "ace1" && p.Dir == "c2s":
			setupReq[p.SrcPort] = p.Bytes
		case p.ID == "ace1" && p.Dir == "s2c":
			req := setupReq[p.DstPort]
			if req == nil {
				t.Fatalf("pdu %d: response without request", i)
			}
			now.Store(authTimeOr(p.Bytes).Unix())
			before := len(ctl.Sent())
			s.handleSetup(ctl, req, netip.AddrPortFrom(loop, uint16(p.DstPort)), netip.Addr{})
			sent := ctl.Sent()
			if len(sent) != before+1 {
				t.Fatalf("pdu %d: our server sent %d responses", i, len(sent)-before)
			}
			got := sent[len(sent)-1].B
			want := p.Bytes
			if got[9] == SetupAccepted {
				// Ours is on another port: compare the rest, and check our
				// digest covers our own port.
				mask := append([]byte(nil), got...)
				copy(mask[12:14], want[12:14])
				if AuthMode(got) == AuthControl {
					copy(mask[20:52], want[20:52])
				}
				got = mask
				socks := n.Sockets()
				testSock[p.DstPort] = socks[len(socks)-1]
			}
			if !bytes.Equal(got, want) {
				t.Errorf("pdu %d: Setup Response differs\n ours %x\n ref  %x", i, got, want)
			}
		case p.ID == "dead":
			ts := testSock[p.DstPort]
			if ts == nil {
				t.Fatalf("pdu %d: Null PDU for a connection we refused", i)
			}
			sent := ts.Sent()
			if len(sent) == 0 || !bytes.Equal(sent[0].B[:12], p.Bytes[:12]) || sent[0].Addr.Port() != uint16(p.DstPort) {
				t.Errorf("pdu %d: Null PDU differs or went elsewhere: %v", i, sent)
			}
		case p.ID == "ace2" && p.Dir == "c2s":
			ts := testSock[p.SrcPort]
			if ts == nil {
				t.Fatalf("pdu %d: activation for an unknown connection", i)
			}
			ts.Deliver(p.Bytes, netip.AddrPortFrom(loop, uint16(p.SrcPort)))
		case p.ID == "ace2" && p.Dir == "s2c":
			ts := testSock[p.DstPort]
			now.Store(authTimeOr(p.Bytes).Unix())
			got := waitSent(t, ts, 2) // Null first, then the response
			if got == nil {
				t.Fatalf("pdu %d: no Test Activation Response from our server", i)
			}
			if !bytes.Equal(got, p.Bytes) {
				t.Errorf("pdu %d: Test Activation Response differs\n ours %x\n ref  %x", i, got, p.Bytes)
			}
			if e.DSCPECN != 0 && int(ts.TOS()) != e.DSCPECN {
				t.Errorf("pdu %d: socket marked %#x before the response, want %#x", i, ts.TOS(), e.DSCPECN)
			}
		}
	}
	// A request the reference server dropped (bad checksum) gets nothing.
	var answered int
	for _, p := range pdus {
		if p.ID == "ace1" && p.Dir == "s2c" {
			answered++
		}
	}
	if got := len(ctl.Sent()); got != answered {
		t.Errorf("our server answered %d Setup Requests, the reference %d", got, answered)
	}
	s.closeControl()
	s.shutdown(time.Second)
}

// authTimeOr is the PDU's authUnixTime as a clock, or the captures' date.
func authTimeOr(b []byte) time.Time {
	if AuthMode(b) == AuthControl {
		return time.Unix(int64(AuthTime(b)), 0)
	}
	return time.Unix(1796009000, 0)
}

// waitSent waits for the nth datagram sent on a fake socket.
func waitSent(t *testing.T, s *memnet.Socket, nth int) []byte {
	t.Helper()
	for deadline := time.Now().Add(await.Deadline); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if sent := s.Sent(); len(sent) >= nth {
			return sent[nth-1].B
		}
	}
	return nil
}
