package control

// The server as a service: the per-source limit on Setup Requests, key
// reloads while tests run, the counters and snapshot behind the -G file and
// the service status, and the per-Test-Connection cap on log lines.

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/memnet"
)

// TestSetupFloodFromOneSource: a source that sends Setup Requests faster
// than its rate gets its burst handled and the rest dropped unanswered and
// counted; a client from another address still gets in. The rate is one
// request per 100 s, so that how long a busy machine takes over the flood
// adds no token.
func TestSetupFloodFromOneSource(t *testing.T) {
	cfg := DefaultServerConfig()
	s, cn, w := inMemory(t, cfg, ServerOptions{SetupRate: 0.01, SetupBurst: 10})
	ctl := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(cfg.Port))
	flooder := netip.MustParseAddrPort("127.0.0.2:4000")
	// Valid requests the server refuses (jumbo flag off): each answered one
	// costs a response, none holds a Test Connection.
	req := (&SetupPDU{ProtocolVer: 20, MCCount: 1, CmdRequest: SetupCmdRequest}).Encode(make([]byte, SetupLen))
	const flood = 200
	for i := 0; i < flood; i++ {
		from := netip.AddrPortFrom(flooder.Addr(), uint16(4000+i)) // any port: the address is what is limited
		w.Send(req, from, ctl)
	}
	answers := func() int {
		n := 0
		for _, d := range s.ctl[0].(*memnet.Socket).Sent() {
			if d.Addr.Addr() == flooder.Addr() {
				n++
			}
		}
		return n
	}
	// Each request is counted as received first, then as dropped or
	// refused, then answered: wait until the last one is through, not
	// only received (under qemu-arm the last was still in between).
	var n ServerSnapshot
	answered := 0
	await.Within(await.Deadline, func() bool {
		n, answered = s.Snapshot(), answers()
		return n.Counts[CountSetupRequests] >= flood &&
			n.Rejected[SetupJumboMismatch]+n.Counts[CountSetupRateLimited] >= flood &&
			uint64(answered) >= n.Rejected[SetupJumboMismatch]
	})
	if n.Counts[CountSetupRateLimited] < flood-11 || n.Counts[CountSetupRateLimited] > flood-10 {
		t.Errorf("%d of %d requests dropped over the rate, want about %d", n.Counts[CountSetupRateLimited], flood, flood-10)
	}
	if got := n.Rejected[SetupJumboMismatch]; got+n.Counts[CountSetupRateLimited] != flood {
		t.Errorf("%d refused + %d dropped != %d received", got, n.Counts[CountSetupRateLimited], flood)
	}
	if answered != int(n.Rejected[SetupJumboMismatch]) {
		t.Errorf("%d answers to the flooder, %d refusals counted", answered, n.Rejected[SetupJumboMismatch])
	}
	ccfg := testClientConfig()
	cc, err := Activate(context.Background(), cn, &ccfg, ServerAddr{Host: "127.0.0.1", Port: cfg.Port}, 0, 5, func(string) {})
	if err != nil {
		t.Fatalf("a client from another address was not served: %v", err)
	}
	cc.Sock.Close()
}

func TestSourceLimiter(t *testing.T) {
	l := newSourceLimiter(10, 3)
	t0 := time.Unix(1000, 0)
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for i := 0; i < 3; i++ {
		if ok, _ := l.allow(a, t0); !ok {
			t.Fatalf("request %d of the burst refused", i)
		}
	}
	ok, first := l.allow(a, t0)
	if ok || !first {
		t.Errorf("over the burst: ok %v first %v, want refused, first", ok, first)
	}
	if _, first := l.allow(a, t0); first {
		t.Error("the second refusal is reported as the first")
	}
	if ok, _ := l.allow(b, t0); !ok {
		t.Error("another source was refused")
	}
	if ok, _ := l.allow(a, t0.Add(100*time.Millisecond)); !ok {
		t.Error("no token after 100 ms at 10/s")
	}
	// An IPv6 source is limited by its /64.
	x, y := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::ffff:2")
	for i := 0; i < 3; i++ {
		l.allow(x, t0)
	}
	if ok, _ := l.allow(y, t0); ok {
		t.Error("another address of the same /64 got its own bucket")
	}
	// The table stays bounded; full buckets are forgotten first.
	for i := 0; i < maxLimitedSources+10; i++ {
		l.allow(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), t0.Add(time.Hour))
	}
	if len(l.buckets) > maxLimitedSources {
		t.Errorf("%d sources kept, limit %d", len(l.buckets), maxLimitedSources)
	}
	if ok, _ := newSourceLimiter(0, 0).allow(a, t0); !ok {
		t.Error("a limiter with rate 0 refused")
	}
}

// TestSetKeysWhileServing: new keys take effect for the next Setup
// Request; a client with the old key is then refused, one with the new key
// gets in.
func TestSetKeysWhileServing(t *testing.T) {
	cfg := DefaultServerConfig()
	old, _ := ParseKeyFile(strings.NewReader("1,old-key\n"))
	cfg.Keys, _ = NewServerKeys("", old)
	s, cn, _ := inMemory(t, cfg, ServerOptions{})
	srv := ServerAddr{Host: "127.0.0.1", Port: cfg.Port}
	activate := func(key string, id uint8) error {
		c := testClientConfig()
		c.Key, c.KeyID = []byte(key), id
		cc, err := Activate(context.Background(), cn, &c, srv, 0, 1, func(string) {})
		if err == nil {
			cc.Sock.Close()
		}
		return err
	}
	if err := activate("old-key", 1); err != nil {
		t.Fatalf("old key before the reload: %v", err)
	}
	nf, _ := ParseKeyFile(strings.NewReader("2,new-key\n"))
	nk, _ := NewServerKeys("", nf)
	s.SetKeys(nk)
	if s.Keys() != nk {
		t.Error("Keys does not return the keys set")
	}
	if err := activate("new-key", 2); err != nil {
		t.Errorf("new key after the reload: %v", err)
	}
	var se *SetupError
	if err := activate("old-key", 1); !errors.As(err, &se) || se.Status != 107 {
		t.Errorf("old key after the reload: %v, want ErrorStatus 107", err)
	}
	if n := s.Snapshot(); n.Counts[CountAuthFailure] != 1 || n.Rejected[SetupAuthFail] != 1 {
		t.Errorf("authentication failures %d, code 7 refusals %d; want 1, 1", n.Counts[CountAuthFailure], n.Rejected[SetupAuthFail])
	}
}

// TestPeaksAndInvalidCounts: the -G maxima are the most reserved at once in
// a period; invalid control PDUs are counted by what failed.
func TestPeaksAndInvalidCounts(t *testing.T) {
	cfg := DefaultServerConfig()
	cfg.MaxBandwidth = 1000
	s, cn, w := inMemory(t, cfg, ServerOptions{})
	ctl := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(cfg.Port))
	src := netip.MustParseAddrPort("127.0.0.3:999")
	w.Send(make([]byte, 10), src, ctl) // size
	bad := (&SetupPDU{ProtocolVer: 20, MCCount: 1, CmdRequest: SetupCmdRequest, ModifierBitmap: SetupJumbo}).Encode(make([]byte, SetupLen))
	bad[0] = 0x12 // identifier: format
	w.Send(bad, src, ctl)
	bad = (&SetupPDU{ProtocolVer: 20, MCCount: 1, CmdRequest: SetupCmdRequest, ModifierBitmap: SetupJumbo}).Encode(make([]byte, SetupLen))
	bad[SetupLen-1] = 1 // a checksum that does not verify
	w.Send(bad, src, ctl)
	var ccs []*ClientConn
	for i, bw := range []int{300, 200} {
		c := testClientConfig()
		c.MaxBandwidth = bw
		c.Upstream = i == 1
		cc, err := Activate(context.Background(), cn, &c, ServerAddr{Host: "127.0.0.1", Port: cfg.Port}, 0, uint16(i), func(string) {})
		if err != nil {
			t.Fatal(err)
		}
		ccs = append(ccs, cc)
	}
	await.Within(await.Deadline, func() bool { return s.Counters.Load(CountInvalidChecksum) != 0 })
	// fakeNet's Data Phases end at once: the reservations go, the peaks
	// remain.
	await.Within(await.Deadline, func() bool { c, _, _ := s.Active(); return c == 0 })
	// (The two connections may or may not have overlapped.)
	if c, d, u := s.Peaks(); c < 1 || c > 2 || d != 300 || u != 200 {
		t.Errorf("peaks %d connections, %d/%d Mbps down/up; want 1 or 2, 300/200", c, d, u)
	}
	if c, d, u := s.Peaks(); c != 0 || d != 0 || u != 0 {
		t.Errorf("peaks of the next period %d, %d/%d; want 0", c, d, u)
	}
	n := s.Snapshot()
	if n.Counts[CountInvalidSize] != 1 || n.Counts[CountInvalidFormat] != 1 || n.Counts[CountInvalidChecksum] != 1 || n.Counts[CountSetupInvalid] != 3 {
		t.Errorf("invalid size/format/checksum %d/%d/%d (total %d), want 1/1/1 (3)", n.Counts[CountInvalidSize], n.Counts[CountInvalidFormat], n.Counts[CountInvalidChecksum], n.Counts[CountSetupInvalid])
	}
	if n.Counts[CountSetupAccepted] != 2 || n.Counts[CountActivationRequests] != 2 || n.Counts[CountActivated] != 2 {
		t.Errorf("accepted %d, activation requests %d, activated %d; want 2, 2, 2", n.Counts[CountSetupAccepted], n.Counts[CountActivationRequests], n.Counts[CountActivated])
	}
	for _, cc := range ccs {
		cc.Sock.Close()
	}
}

// TestDataPhaseEventsCounted: the data counters add up what the Data
// Phases counted and carried in their events; warnings are shown, not
// counted.
func TestDataPhaseEventsCounted(t *testing.T) {
	s := &Server{}
	var a, b dataphase.Counts
	a[dataphase.CountStatusSent], a[dataphase.CountRxIPBytes], a[dataphase.CountLocalStatusLoss] = 1, 1280, 3+65535
	b[dataphase.CountStatusSent], b[dataphase.CountLoadInvalidSize], b[dataphase.CountStatusInvalidChecksum] = 2, 1, 4
	for i, ev := range []dataphase.Event{
		{Kind: dataphase.EvTrial, Counts: a},
		{Kind: dataphase.EvEnd, Counts: b},
		{Kind: dataphase.EvWarning, Code: 2, Text: "LOCAL WARNING: Incoming status feedback messages lost (3)"},
	} {
		s.countEvent(&ev, i == 0) // the first of a Load Sender (downstream)
	}
	var want dataphase.Counts
	want[dataphase.CountStatusSent] = 3
	want[dataphase.CountRxIPBytes] = 1280
	want[dataphase.CountLocalStatusLoss] = 3 + 65535
	want[dataphase.CountLoadInvalidSize] = 1
	want[dataphase.CountStatusInvalidChecksum] = 4
	n := s.Snapshot()
	if n.Data != want {
		t.Errorf("data totals\n got %v\nwant %v", n.Data, want)
	}
	if n.DataDir[dirDown] != a || n.DataDir[dirUp] != b {
		t.Errorf("by direction: downstream %v (want %v), upstream %v (want %v)", n.DataDir[dirDown], a, n.DataDir[dirUp], b)
	}
}

// TestSnapshotEach: Each lists every counter of the snapshot once, with
// a unique snake_case name and help text, and the value counted.
func TestSnapshotEach(t *testing.T) {
	s := &Server{}
	s.adm.maxBW, s.adm.maxConns = 1000, 7
	s.adm.used = [2]int{300, 0}
	s.Counters.Add(CountAuthTime)
	s.Counters.reject(SetupCapExceeded)
	s.Counters.end(false, dataphase.EndWatchdog)
	s.Counters.end(true, dataphase.EndStopped)
	s.Counters.end(true, dataphase.EndStopped)
	s.countEvent(&dataphase.Event{Kind: dataphase.EvEnd, Counts: dataphase.Counts{dataphase.CountTxLoss: 7}}, true)
	s.Counters.runningUp.Add(1)
	n := s.Snapshot()
	values := map[string]uint64{}
	var infos []dataphase.CounterInfo // each name once
	count := 0
	n.Each(func(m Metric) {
		count++
		key := m.Name + "{" + m.Direction + "," + m.Label + "=" + m.LabelValue + "}"
		if _, dup := values[key]; dup {
			t.Errorf("%s listed twice", key)
		}
		values[key] = m.Value
		if len(infos) == 0 || infos[len(infos)-1].Name != m.Name {
			infos = append(infos, m.CounterInfo)
		}
	})
	if err := dataphase.CheckCounterInfo(infos); err != nil {
		t.Error(err)
	}
	labelled := int(numSetupCodes-SetupBadVersion) + numDirs*int(dataphase.NumEndReasons-dataphase.EndStopped)
	if want := 8 + int(NumServerCounters) + labelled + numDirs*int(dataphase.NumCounters); count != want {
		t.Errorf("%d values listed, want %d", count, want)
	}
	for _, c := range []struct {
		key  string
		want uint64
	}{
		{"auth_time_failures{,=}", 1},
		{"setup_rejected{,code=10}", 1},
		{"setup_rejected{,code=2}", 0},
		{"tests_ended{upstream,reason=watchdog}", 1},
		{"tests_ended{downstream,reason=watchdog}", 0},
		{"tests_ended{downstream,reason=stopped}", 2},
		{"tx_loss{downstream,=}", 7},
		{"tx_loss{upstream,=}", 0},
		{"running_connections{upstream,=}", 1},
		{"running_connections{downstream,=}", 0},
		{"max_connections{,=}", 7},
		{"reserved_bandwidth_bytes_per_second{downstream,=}", 300 * 125000},
		{"bandwidth_limit_bytes_per_second{upstream,=}", 1000 * 125000},
	} {
		if got, ok := values[c.key]; !ok || got != c.want {
			t.Errorf("%s = %d (listed %v), want %d", c.key, got, ok, c.want)
		}
	}
}

// TestConnLogLimit: a Test Connection writes at most MaxWarnings warning
// lines, then one saying the rest is suppressed.
func TestConnLogLimit(t *testing.T) {
	var buf bytes.Buffer
	l := connLog{log: slog.New(slog.NewTextHandler(&buf, nil))}
	for i := 0; i < 3*dataphase.MaxWarnings; i++ {
		l.warn("test activation request failed authentication", "n", i)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != dataphase.MaxWarnings+1 || !strings.Contains(lines[len(lines)-1], "suppressed") {
		t.Errorf("%d lines, the last %q; want %d and a suppression line", len(lines), lines[len(lines)-1], dataphase.MaxWarnings+1)
	}
}

// TestOneTestStatus: a -1 server ends after its first Test Connection
// with that connection's ErrorStatus, kept as OB-UDPST keeps endTimeStatus.
func TestOneTestStatus(t *testing.T) {
	warn := dataphase.Event{Kind: dataphase.EvWarning, Code: 2, Text: "LOCAL WARNING: Incoming status feedback messages lost (3)"}
	end := func(r dataphase.EndReason) dataphase.Event { return dataphase.Event{Kind: dataphase.EvEnd, End: r} }
	for _, tc := range []struct {
		name   string
		events []dataphase.Event
		want   int
	}{
		{"stop handshake", []dataphase.Event{end(dataphase.EndStopped)}, 0},
		{"warned, then stopped", []dataphase.Event{warn, end(dataphase.EndStopped)}, 2},
		{"watchdog", []dataphase.Event{end(dataphase.EndWatchdog)}, 255},
		{"warned, then watchdog", []dataphase.Event{warn, end(dataphase.EndWatchdog)}, 2},
		{"socket failure", []dataphase.Event{end(dataphase.EndFailure)}, 255},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := memnet.NewWire()
			cfg := DefaultServerConfig()
			cfg.BindAddrs = []string{"127.0.0.1"}
			cfg.OneTest = true
			s, err := NewServer(cfg, fakeNet{&memnet.Net{Wire: w, Events: tc.events}}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { s.Serve(context.Background()); close(done) }()
			ccfg := testClientConfig()
			cc, err := Activate(context.Background(), fakeNet{&memnet.Net{Wire: w, NextPort: 50000}}, &ccfg,
				ServerAddr{Host: "127.0.0.1", Port: cfg.Port}, 0, 77, func(string) {})
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Sock.Close()
			select {
			case <-done:
			case <-time.After(await.Deadline):
				t.Fatal("a -1 server still serves after its Test Connection ended")
			}
			if got := s.OneTestStatus(); got != tc.want {
				t.Errorf("OneTestStatus = %d, want %d", got, tc.want)
			}
		})
	}
}
