package control

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/golden"
	"github.com/udpstp/udpstp/internal/testkit/memnet"
)

// legacyTestPort is where the test port sits in a Setup Response of
// protocol version pver.
func legacyTestPort(pver uint16) int {
	if pver < multiConnProtocolVer {
		return 8
	}
	return 12
}

// TestGoldenLegacyServerResponses replays the Setup and Test Activation
// Requests of OB-UDPST 7.2.0, 7.5.1 and 8.1.0 clients to our server and
// compares its answers with those of the client's own server, byte for byte
// (the test port aside, and the upstream first rate where 7.2.0's row 0
// differs from 7.5.1's).
func TestGoldenLegacyServerResponses(t *testing.T) {
	for _, sc := range golden.LegacyScenarios(t) {
		if !strings.HasSuffix(sc.Name, "_own") {
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			pdus := sc.PDUs(t, "pdus.jsonl")
			pver := golden.ProtocolVersion(pdus)
			n := fakeNet{&memnet.Net{}}
			s, err := NewServer(DefaultServerConfig(), n, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { s.closeControl(); s.shutdown(time.Second) }()
			ctl := n.Sockets()[0]
			loop := netip.MustParseAddr("127.0.0.1")
			var ts *memnet.Socket
			var req []byte
			for i, p := range pdus {
				switch {
				case p.ID == "ace1" && p.Dir == "c2s":
					req = p.Bytes
				case p.ID == "ace1" && p.Dir == "s2c":
					// A copy with room to widen in place, as the control
					// loop's buffer has.
					b := append(make([]byte, 0, 2048), req...)
					s.handleSetup(ctl, b, netip.AddrPortFrom(loop, uint16(p.DstPort)), netip.Addr{})
					sent := ctl.Sent()
					if len(sent) != 1 {
						t.Fatalf("pdu %d: our server sent %d responses", i, len(sent))
					}
					got := append([]byte(nil), sent[0].B...)
					tp := legacyTestPort(pver)
					if len(got) != len(p.Bytes) {
						t.Fatalf("pdu %d: Setup Response of %d bytes, want %d", i, len(got), len(p.Bytes))
					}
					copy(got[tp:tp+2], p.Bytes[tp:tp+2])
					if !bytes.Equal(got, p.Bytes) {
						t.Errorf("pdu %d: Setup Response differs\n ours %x\n ref  %x", i, got, p.Bytes)
					}
					socks := n.Sockets()
					ts = socks[len(socks)-1]
				case p.ID == "ace2" && p.Dir == "c2s":
					ts.Deliver(p.Bytes, netip.AddrPortFrom(loop, uint16(p.SrcPort)))
				case p.ID == "ace2" && p.Dir == "s2c":
					got := waitSent(t, ts, 1) // no Null PDU before protocol 20
					if got == nil {
						t.Fatalf("pdu %d: no Test Activation Response", i)
					}
					want := append([]byte(nil), p.Bytes...)
					if pver == 8 && got[4] == ActivationUpstream {
						// 7.2.0's row 0 has a 35-byte add-on, 7.5.1's (ours
						// for 8 and 9) 48.
						if binary.BigEndian.Uint32(want[52:]) != 35 {
							t.Fatalf("7.2.0's row 0 add-on: %x", want[28:56])
						}
						binary.BigEndian.PutUint32(want[52:], 48)
					}
					if !bytes.Equal(got, want) {
						t.Errorf("pdu %d: Test Activation Response differs\n ours %x\n ref  %x", i, got, want)
					}
				}
			}
			if ts == nil {
				t.Fatal("no Setup exchange in the capture")
			}
		})
	}
}

// TestLegacySetupLayouts: a Setup PDU of each old layout widens to the
// protocol 11 form and narrows back to its bytes; a length that does not
// match its version stays as it is, which Decode then refuses.
func TestLegacySetupLayouts(t *testing.T) {
	for _, sc := range golden.LegacyScenarios(t) {
		for _, p := range sc.PDUs(t, "pdus.jsonl") {
			if p.ID != "ace1" {
				continue
			}
			in := append([]byte(nil), p.Bytes...)
			w, form := widenSetup(append(make([]byte, 0, SetupLen), in...))
			var req SetupPDU
			if err := req.Decode(w); err != nil {
				t.Fatalf("%s: %v", sc.Name, err)
			}
			if !form.accepts(req.ProtocolVer) || req.MCCount != 1 || req.MCIndex != 0 {
				t.Errorf("%s: %+v in form %d", sc.Name, req, form)
			}
			// Without spare capacity it widens into a new buffer.
			if w2, _ := widenSetup(in[:len(in):len(in)]); !bytes.Equal(w2, w) || !bytes.Equal(in, p.Bytes) {
				t.Errorf("%s: widening without capacity differs or touched its input", sc.Name)
			}
			if got := form.narrow(w); !bytes.Equal(got, in) {
				t.Errorf("%s: narrowed %x, was %x", sc.Name, got, in)
			}
		}
	}
	// A 52-byte PDU of version 9 or a 48-byte PDU of version 10 is no
	// layout: it is dropped, as 7.x and 8.1 drop a PDU of the wrong size.
	for _, c := range []struct {
		n    int
		pver uint16
	}{{SetupV10Len, 11}, {SetupV8Len, 10}, {SetupV8Len, 20}} {
		b := make([]byte, c.n)
		binary.BigEndian.PutUint16(b, SetupPDUID)
		binary.BigEndian.PutUint16(b[2:], c.pver)
		b[4], b[8] = 1, 1
		w, _ := widenSetup(b)
		var req SetupPDU
		if req.Decode(w) == nil {
			t.Errorf("%d bytes, version %d: decoded", c.n, c.pver)
		}
	}
}

// TestLegacyRateTable: protocols 8 and 9 never see a random size bit.
func TestLegacyRateTable(t *testing.T) {
	table := dataphase.BuildRateTable(dataphase.TableOptions{})
	for _, pver := range []uint16{8, 9} {
		for i, r := range tableForProto(table, pver) {
			if (r.UDPPayload1|r.UDPPayload2|r.UDPAddon2)&dataphase.RandomSize != 0 {
				t.Fatalf("protocol %d, row %d: %+v", pver, i, r)
			}
		}
	}
	if got := tableForProto(table, 10); &got[0] != &table[0] {
		t.Error("protocol 10 knows the random bit: the table should be the server's own")
	}
}

// legacySeeds adds the captured control PDUs of protocols 8..10 with
// identifier id as seeds.
func legacySeeds(f *testing.F, id string) {
	for _, sc := range golden.LegacyScenarios(f) {
		for _, p := range sc.PDUs(f, "pdus.jsonl") {
			if p.ID == id {
				f.Add(p.Bytes)
			}
		}
	}
}

// FuzzSetupPDULegacy: widening never panics; what decodes after widening
// from an old layout narrows back to the bytes it came from.
func FuzzSetupPDULegacy(f *testing.F) {
	legacySeeds(f, "ace1")
	f.Fuzz(func(t *testing.T, in []byte) {
		orig := append([]byte(nil), in...)
		w, form := widenSetup(append(make([]byte, 0, len(in)+SetupLen), in...))
		var req SetupPDU
		if req.Decode(w) != nil || form == setupCurrent {
			return
		}
		if form == setupV8 && (req.MCCount != 1 || req.MCIndex != 0) || req.ProtocolVer > multiConnProtocolVer {
			t.Fatalf("widened %+v from %x", req, orig)
		}
		got := form.narrow(w)
		// Protocol 8's reserved field reads as no bandwidth.
		if form == setupV8 && req.ProtocolVer < bandwidthProtocolVer {
			orig[6], orig[7] = 0, 0
		}
		if !bytes.Equal(got, orig) {
			t.Fatalf("narrowed %x, was %x", got, orig)
		}
	})
}

// FuzzActivationPDUV8: the 56-byte Test Activation of protocols 8..10
// decodes when its identifier and request are valid, and encodes back to
// its bytes (protocol 8's reserved fields as read).
func FuzzActivationPDUV8(f *testing.F) {
	legacySeeds(f, "ace2")
	f.Fuzz(func(t *testing.T, in []byte) {
		w, ok := widenActivation(in)
		if !ok {
			if len(in) == ActivationV8Len {
				t.Fatal("56 bytes refused")
			}
			return
		}
		var ta ActivationPDU
		if ta.Decode(w, true) != nil {
			return
		}
		out := ta.Encode(make([]byte, ActivationLen), true)[:ActivationV8Len]
		if !bytes.Equal(out, in) {
			t.Fatalf("re-encoded %x, was %x", out, in)
		}
	})
}

// TestWriteLegacyFuzzCorpus writes the committed seeds of the two fuzz
// targets above from the legacy captures.
//
//	UDPSTP_WRITE_CORPUS=1 go test -run '^TestWriteLegacyFuzzCorpus$' ./control
func TestWriteLegacyFuzzCorpus(t *testing.T) {
	golden.RequireCorpusWrite(t)
	for name, id := range map[string]string{"FuzzSetupPDULegacy": "ace1", "FuzzActivationPDUV8": "ace2"} {
		var in [][]byte
		for _, sc := range golden.LegacyScenarios(t) {
			for _, p := range sc.PDUs(t, "pdus.jsonl") {
				if p.ID == id {
					in = append(in, p.Bytes)
				}
			}
		}
		golden.WriteCorpusInputs(t, name, in)
	}
}

// TestLegacyAuth: a protocol 8 or 10 Setup Request signed as OB-UDPST 7.x
// and 8.1 sign it (HMAC-SHA256 with the raw key over the request as sent,
// digest zeroed) is accepted by a keyed server, with the response's digest
// cleared; a wrong key gets AUTHFAIL, a time 6 s off AUTHTIME (their
// window is 150 s; ours stays the 5 s the replay cache covers), 5 s passes.
func TestLegacyAuth(t *testing.T) {
	const key = "legacy-key-0123"
	now := time.Unix(1796200000, 0)
	for _, pver := range []uint16{8, 10} {
		for _, c := range []struct {
			name string
			key  string
			skew int64
			want uint8
		}{
			{"good", key, 0, SetupAccepted},
			{"5 s late", key, -5, SetupAccepted},
			{"wrong key", "another-key", 0, SetupAuthFail},
			{"6 s late", key, -6, SetupAuthTime},
			{"6 s early", key, 6, SetupAuthTime},
			{"149 s late", key, -149, SetupAuthTime},
		} {
			t.Run(fmt.Sprintf("%d/%s", pver, c.name), func(t *testing.T) {
				cfg := DefaultServerConfig()
				keys, err := NewServerKeys(key, nil)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Keys = keys
				n := fakeNet{&memnet.Net{}}
				s, err := NewServer(cfg, n, slog.New(slog.DiscardHandler))
				if err != nil {
					t.Fatal(err)
				}
				defer func() { s.closeControl(); s.shutdown(time.Second) }()
				s.now = func() time.Time { return now }
				req := SetupPDU{ProtocolVer: pver, MCCount: 1, CmdRequest: SetupCmdRequest, ModifierBitmap: SetupJumbo}
				req.AuthMode, req.AuthUnixTime = AuthControl, uint32(now.Unix()+c.skew)
				b := encodeSetupProto(&req, make([]byte, SetupLen))
				mac := hmac.New(sha256.New, []byte(c.key))
				mac.Write(b)
				copy(b[len(b)-32:], mac.Sum(nil))
				ctl := n.Sockets()[0]
				s.handleSetup(ctl, append(make([]byte, 0, 2048), b...), netip.MustParseAddrPort("127.0.0.1:4000"), netip.Addr{})
				sent := ctl.Sent()
				if len(sent) != 1 || len(sent[0].B) != len(b) {
					t.Fatalf("responses %v", sent)
				}
				r := sent[0].B
				code := r[5]
				if pver >= multiConnProtocolVer {
					code = r[9]
				}
				if code != c.want {
					t.Errorf("code %d, want %d", code, c.want)
				}
				if !bytes.Equal(r[len(r)-32:], make([]byte, 32)) {
					t.Errorf("response digest not cleared: %x", r)
				}
				if c.want == SetupAccepted {
					// The same signed request again, from elsewhere: a
					// replay, dropped unanswered.
					s.handleSetup(ctl, append(make([]byte, 0, 2048), b...), netip.MustParseAddrPort("127.0.0.1:4001"), netip.Addr{})
					if got := len(ctl.Sent()); got != 1 {
						t.Errorf("a replayed request was answered (%d responses)", got)
					}
				}
			})
		}
	}
}

// TestGoldenLegacyClientRequests: with the defaults, `udpstp client
// --protocol 9` and `--protocol 10` send the Setup and Test Activation
// Requests OB-UDPST 7.5.1's and 8.1.0's clients sent with theirs, byte for
// byte (mcIdent aside, which is random). 7.2.0's defaults differ (seqErr
// threshold 0, out-of-order counted), so its requests are not ours.
func TestGoldenLegacyClientRequests(t *testing.T) {
	n := 0
	for _, sc := range golden.LegacyScenarios(t) {
		pdus := sc.PDUs(t, "pdus.jsonl")
		pver := golden.ProtocolVersion(pdus)
		if pver < 9 || !strings.HasSuffix(sc.Name, "_own") {
			continue
		}
		cfg := DefaultClientConfig()
		cfg.Protocol, cfg.TestIntTime = int(pver), 5
		cfg.Upstream = strings.Contains(sc.Name, "_us_")
		for _, p := range pdus {
			if p.Dir != "c2s" {
				continue
			}
			var got []byte
			switch p.ID {
			case "ace1":
				var ident uint16
				if pver >= multiConnProtocolVer {
					ident = binary.BigEndian.Uint16(p.Bytes[6:])
				}
				req := setupRequest(&cfg, 0, ident)
				got = encodeSetupProto(&req, make([]byte, SetupLen))
			case "ace2":
				ta := activationRequest(&cfg)
				got = encodeActivationProto(&ta, pver)
			default:
				continue
			}
			n++
			if !bytes.Equal(got, p.Bytes) {
				t.Errorf("%s: our %s request differs\n ours %x\n ref  %x", sc.Name, p.ID, got, p.Bytes)
			}
		}
	}
	if n != 8 {
		t.Errorf("%d requests compared, want 8", n)
	}
}

// TestControlPhaseLegacyInMemory runs our client's Control Phase in each
// old protocol against our server's: both ends agree, in the right forms.
func TestControlPhaseLegacyInMemory(t *testing.T) {
	for _, pver := range []int{8, 9, 10, 11} {
		cfg := DefaultServerConfig()
		ccfg := testClientConfig()
		ccfg.Upstream = pver%2 == 0
		ccfg.Protocol = pver
		s, cn, _ := inMemory(t, cfg, ServerOptions{})
		cc, err := Activate(context.Background(), cn, &ccfg, ServerAddr{Host: "127.0.0.1", Port: cfg.Port}, 0, 77, func(string) {})
		if err != nil {
			t.Fatalf("protocol %d: %v", pver, err)
		}
		p := cc.Params
		wantProto := uint16(0)
		if pver < 11 {
			wantProto = uint16(pver)
		}
		if !p.Legacy || p.Proto != wantProto || p.SubIntPeriod != time.Second || cc.Granted.SubIntPeriod != 1000 {
			t.Errorf("protocol %d: params %+v, granted %+v", pver, p, cc.Granted)
		}
		if ccfg.Upstream && (p.InitialRate != tableForProto(s.table, uint16(pver))[0] || p.InitialRate.UDPAddon2&dataphase.RandomSize != 0 && pver < 10) {
			t.Errorf("protocol %d: first rate %+v", pver, p.InitialRate)
		}
		cc.Sock.Close()
	}
}
