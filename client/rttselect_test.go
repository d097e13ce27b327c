package client_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/client"
	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/enginenet"
	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/loopserver"
	"github.com/udpstp/udpstp/report"
	"github.com/udpstp/udpstp/report/resultdoc"
)

// relayDelay is how much farther away a relayed server is: its Setup
// Response comes this much later than a server's on loopback.
const relayDelay = 20 * time.Millisecond

// selectRun runs a test against servers with SelectRTT, as a list
// (FailoverList) or, with res, as srv:fleet.test, interrupted once its
// first Test Connection is up, and returns the measurement the observer
// saw, the warnings and the JSON document.
func selectRun(t *testing.T, servers []netip.AddrPort, res client.Options) (*report.Selection, []string, *resultdoc.Test) {
	t.Helper()
	cfg := control.DefaultClientConfig()
	cfg.TestIntTime = control.MinTestIntTime
	cfg.Format = "json"
	cfg.Extensions = true
	for _, s := range servers {
		cfg.Servers = append(cfg.Servers, control.ServerAddr{Host: s.Addr().String(), Port: int(s.Port())})
	}
	if res.Resolver != nil {
		cfg.Servers = []control.ServerAddr{{Host: "srv:fleet.test", Port: control.DefaultControlPort}}
	}
	log := slog.New(slog.DiscardHandler)
	network, closeNet := enginenet.NewClient(enginenet.Options{Log: log})
	defer closeNet()
	ctx, cancel := context.WithTimeout(context.Background(), 2*client.FailoverBudget+30*time.Second)
	defer cancel()
	var sel *report.Selection
	var warnings []string
	var doc bytes.Buffer
	client.Run(ctx, &cfg, client.Options{Network: network, Out: &doc, Stderr: io.Discard, Resolver: res.Resolver,
		Select: client.SelectRTT, FailoverList: true,
		Observe: func(ev client.Event) {
			switch ev.Kind {
			case client.EventSelected:
				if sel != nil {
					t.Error("two EventSelected")
				}
				sel = ev.Selection
			case client.EventStart:
				if sel == nil {
					t.Error("EventStart before EventSelected")
				}
			case client.EventWarning:
				warnings = append(warnings, ev.Text)
			case client.EventConnected:
				cancel() // the choice is made: no need for the whole test
			}
		}})
	test, err := resultdoc.DecodeTest(doc.Bytes())
	if err != nil {
		t.Fatalf("document: %v\n%s", err, doc.Bytes())
	}
	if sel == nil {
		t.Fatalf("no EventSelected; document %s", doc.Bytes())
	}
	for _, c := range sel.Candidates {
		t.Logf("%s %s:%d priority %d: answered %v in %v (%s), chosen %v", c.Host, c.Addr, c.ControlPort, c.Priority, c.Answered, c.RTT, c.Error, c.Chosen)
	}
	return sel, warnings, test
}

// checkRecorded: the document's extension holds the observer's figures,
// in µs, and the server the test ran against is the one chosen.
func checkRecorded(t *testing.T, sel *report.Selection, doc *resultdoc.Test) {
	t.Helper()
	if doc.Udpstp == nil || doc.Udpstp.ServerSelection == nil {
		t.Fatal("no udpstp.ServerSelection in the document")
	}
	got := doc.Udpstp.ServerSelection
	if got.Mode != "rtt" || len(got.Candidates) != len(sel.Candidates) {
		t.Fatalf("ServerSelection %+v, want the %d candidates measured", got, len(sel.Candidates))
	}
	for i, c := range got.Candidates {
		want := sel.Candidates[i]
		if c.HostIPAddress != want.Addr || int(c.ControlPort) != want.ControlPort || (c.Chosen == 1) != want.Chosen {
			t.Errorf("candidate %d: %+v, want %+v", i, c, want)
		}
		switch {
		case want.Answered && (c.SetupRTTMicroseconds == nil || int64(*c.SetupRTTMicroseconds) != want.RTT.Microseconds()):
			t.Errorf("candidate %d: SetupRTTMicroseconds %v, want %d", i, c.SetupRTTMicroseconds, want.RTT.Microseconds())
		case !want.Answered && (c.SetupRTTMicroseconds != nil || c.Error == ""):
			t.Errorf("candidate %d did not answer: %+v", i, c)
		}
	}
	ch := sel.Chosen()
	if ch == nil {
		t.Fatal("no candidate chosen")
	}
	if doc.Input == nil || doc.Input.HostIPAddress != ch.Addr || len(doc.Input.HostList) != 1 || int(doc.Input.HostList[0].ControlPort) != ch.ControlPort {
		t.Errorf("Input %+v: the test did not run against the chosen %+v", doc.Input, ch)
	}
}

// TestSelectRTT: among a server 20 ms away (a relay), one on loopback
// and one that never answers, listed in that order, the search tests
// against the one on loopback, lists the silent one last, and records
// every figure; as srv:NAME, the same within one SRV priority, a lower
// priority's server last whatever its round trip.
func TestSelectRTT(t *testing.T) {
	as, bs := loopserver.Start(t), loopserver.Start(t)
	a, b := as.Addr, bs.Addr
	slow := loopserver.Relay(t, "127.0.0.1:0", b, relayDelay)
	silent, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	quiet := netip.MustParseAddrPort(silent.LocalAddr().String())

	t.Run("list", func(t *testing.T) {
		sel, _, doc := selectRun(t, []netip.AddrPort{slow, a, quiet}, client.Options{})
		c := sel.Candidates
		if len(c) != 3 || c[0].ControlPort != int(a.Port()) || c[1].ControlPort != int(slow.Port()) || c[2].ControlPort != int(quiet.Port()) {
			t.Fatalf("order %+v, want loopback, relay, silent", c)
		}
		if !c[0].Answered || !c[1].Answered || c[2].Answered || c[0].RTT >= c[1].RTT || !c[0].Chosen ||
			!strings.Contains(c[2].Error, "no answer within") {
			t.Errorf("measured %+v: want the loopback server answered first and chosen", c)
		}
		checkRecorded(t, sel, doc)
		// What the servers are left with: the one chosen ran the test on
		// its measured Setup, no other; the one not chosen released the
		// measured Setup at its timer, as it did loopserver's (1 each).
		checkSetups(t, as, bs, 1, 2)
	})
	t.Run("srv", func(t *testing.T) {
		zone := fakeZone{"slow.test": slow, "fast.test": a, "other.test": b}
		recs := []*net.SRV{{Target: "slow.test.", Port: slow.Port(), Priority: 10, Weight: 100},
			{Target: "fast.test.", Port: a.Port(), Priority: 10}, {Target: "other.test.", Port: b.Port(), Priority: 5}}
		sel, _, doc := selectRun(t, nil, client.Options{Resolver: srvZone{zone, recs}})
		var names []string
		for _, c := range sel.Candidates {
			names = append(names, c.Host)
		}
		if strings.Join(names, " ") != "other.test fast.test slow.test" {
			t.Errorf("order %v, want the priority 5 server, then priority 10's by round trip", names)
		}
		if ch := sel.Chosen(); ch == nil || ch.Host != "other.test" {
			t.Errorf("chosen %+v, want the lowest priority value", ch)
		}
		if c := sel.Candidates; c[1].RTT >= c[2].RTT {
			t.Errorf("priority 10: %v then %v", c[1].RTT, c[2].RTT)
		}
		checkRecorded(t, sel, doc)
	})
}

// TestSelectRTTBidirectional: a bidirectional test's halves search
// once and test the same server. Each half searching on its own measured
// every candidate twice and could choose two servers when their round
// trips are close.
func TestSelectRTTBidirectional(t *testing.T) {
	as, bs := loopserver.Start(t), loopserver.Start(t)
	slow := loopserver.Relay(t, "127.0.0.1:0", bs.Addr, relayDelay)
	cfg := control.DefaultClientConfig()
	cfg.TestIntTime = control.MinTestIntTime
	cfg.Format = "json"
	cfg.Extensions = true
	for _, s := range []netip.AddrPort{slow, as.Addr} {
		cfg.Servers = append(cfg.Servers, control.ServerAddr{Host: s.Addr().String(), Port: int(s.Port())})
	}
	network, closeNet := enginenet.NewClient(enginenet.Options{Log: slog.New(slog.DiscardHandler)})
	defer closeNet()
	ctx, cancel := context.WithTimeout(context.Background(), 2*client.FailoverBudget+30*time.Second)
	defer cancel()
	var selected, connected int
	var servers []string
	client.Run(ctx, &cfg, client.Options{Network: network, Out: io.Discard, Stderr: io.Discard,
		Select: client.SelectRTT, FailoverList: true, Plan: client.Plan{Bidirectional: true},
		Observe: func(ev client.Event) {
			switch ev.Kind {
			case client.EventSelected:
				selected++
			case client.EventConnected:
				connected++
				servers = append(servers, fmt.Sprintf("%s:%d", ev.Server.Host, ev.Server.Port))
				if connected == 2 {
					cancel() // both halves are up: no need for the whole test
				}
			}
		}})
	if selected != 1 || connected != 2 {
		t.Fatalf("%d EventSelected and %d EventConnected, want 1 and 2 (one search, one connection a half)", selected, connected)
	}
	if servers[0] != servers[1] {
		t.Errorf("the halves tested %s and %s, want one server", servers[0], servers[1])
	}
	// The chosen one: both halves' Test Connections, one of them on its
	// measured Setup; the other: its one measured Setup released at its
	// timer, besides loopserver's own.
	checkSetups(t, as, bs, 2, 2)
}

// checkSetups waits for both servers to be idle and checks what they
// were left with: the chosen one activated activated Test Connections
// and released loopserver's own Setup at its timer (loopserver.Start
// leaves one); the other activated none and released notChosenReleased.
func checkSetups(t *testing.T, chosen, other loopserver.Server, activated, notChosenReleased uint64) {
	t.Helper()
	await.True(t, "both servers idle", func() bool {
		ca, _, _ := chosen.Active()
		cb, _, _ := other.Active()
		return ca == 0 && cb == 0
	})
	for _, s := range []struct {
		name                string
		srv                 loopserver.Server
		activated, timedOut uint64
	}{{"chosen", chosen, activated, 1}, {"not chosen", other, 0, notChosenReleased}} {
		if n, w := s.srv.Counters.Load(control.CountActivated), s.srv.Counters.Load(control.CountActivationWait); n != s.activated || w != s.timedOut {
			t.Errorf("%s server: %d activated, %d activation timeouts; want %d, %d", s.name, n, w, s.activated, s.timedOut)
		}
	}
}

// TestSelectRTTFallback: the fastest server answers its Setup but its
// Test Activation reaches nothing (a relay on another loopback address
// than its server); the search moves on, as failover does, to the next
// in round-trip order, and records that one as chosen.
func TestSelectRTTFallback(t *testing.T) {
	a, b := loopserver.Start(t), loopserver.Start(t)
	fast := loopserver.Relay(t, "127.0.0.2:0", a.Addr, 0)
	slow := loopserver.Relay(t, "127.0.0.1:0", b.Addr, relayDelay)
	sel, warnings, doc := selectRun(t, []netip.AddrPort{slow, fast}, client.Options{})
	c := sel.Candidates
	if len(c) != 2 || c[0].Addr != "127.0.0.2" || c[0].RTT >= c[1].RTT {
		t.Fatalf("measured %+v: want the relay on 127.0.0.2 first", c)
	}
	if c[0].Chosen || !c[1].Chosen {
		t.Errorf("chosen %+v, want the slower one after the faster failed", c)
	}
	if len(warnings) == 0 || !strings.Contains(warnings[0], "server skipped: 127.0.0.2") {
		t.Errorf("warnings %q: want the fast one skipped", warnings)
	}
	checkRecorded(t, sel, doc)
}

// fakeZone is a resolver's addresses by name.
type fakeZone map[string]netip.AddrPort

// srvZone answers _udpst._udp.fleet.test with recs and each target's
// address from zone.
type srvZone struct {
	zone fakeZone
	recs []*net.SRV
}

func (z srvZone) LookupSRV(_ context.Context, _, _, name string) (string, []*net.SRV, error) {
	return name, z.recs, nil
}

func (z srvZone) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if ap, ok := z.zone[host]; ok {
		return []netip.Addr{ap.Addr()}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}
