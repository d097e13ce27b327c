package control

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/memnet"
)

// TestOnTestEnd: a Test Connection's Data Phase that reports two
// Sub-Intervals, a warning and the stop handshake hands exactly one
// record to OnTestEnd, after its end: the direction, the client, the
// parameters asked and granted (the server's -t limit applied), both
// Sub-Intervals, the warning's ErrorStatus, the end reason and the Status
// PDUs dropped as implausible, added up from the events' counts.
func TestOnTestEnd(t *testing.T) {
	sub := func(n uint32) dataphase.Event {
		return dataphase.Event{Kind: dataphase.EvSubInterval, SubInt: dataphase.SubIntervalResult{Seq: n,
			Stats: dataphase.SubIntervalStats{RxDatagrams: 100 * n, DeltaTime: 1e6}}}
	}
	var dropped dataphase.Counts // Status PDUs dropped as implausible, in two events
	dropped[dataphase.CountImplausible] = 2
	events := []dataphase.Event{sub(1), sub(2), {Kind: dataphase.EvTrial, Counts: dropped},
		{Kind: dataphase.EvWarning, Code: 2, Text: "LOCAL WARNING: Incoming status feedback messages lost (3)"},
		{Kind: dataphase.EvEnd, End: dataphase.EndStopped, Counts: dropped}}
	w := memnet.NewWire()
	cfg := DefaultServerConfig()
	cfg.BindAddrs = []string{"127.0.0.1"}
	cfg.MaxTestTime = 5
	var mu sync.Mutex
	var recs []*TestRecord
	s, err := NewServerWith(cfg, fakeNet{&memnet.Net{Wire: w, Events: events}}, slog.New(slog.DiscardHandler),
		ServerOptions{OnTestEnd: func(r *TestRecord) { mu.Lock(); recs = append(recs, r); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	ccfg := testClientConfig()
	ccfg.TestIntTime, ccfg.Upstream = 10, true
	cc, err := Activate(context.Background(), fakeNet{&memnet.Net{Wire: w, NextPort: 50000}}, &ccfg,
		ServerAddr{Host: "127.0.0.1", Port: cfg.Port}, 0, 77, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Sock.Close()
	await.True(t, "the test's record", func() bool { mu.Lock(); defer mu.Unlock(); return len(recs) > 0 })
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(recs) != 1 {
		t.Fatalf("%d records for one test", len(recs))
	}
	r := recs[0]
	if !r.Upstream || r.Peer.Addr().String() != "127.0.0.1" || r.Peer != r.SetupFrom || r.SetupReq.MCIdent != 77 || r.ErrorStatus != 2 || r.EndReason != dataphase.EndStopped {
		t.Errorf("record %+v", r)
	}
	if r.Requested.TestIntTime != 10 || r.Granted.TestIntTime != 5 {
		t.Errorf("test time asked %d, granted %d; want 10, 5", r.Requested.TestIntTime, r.Granted.TestIntTime)
	}
	if len(r.SubIntervals) != 2 || r.SubIntervals[1].Stats.RxDatagrams != 200 || len(r.Warnings) != 1 {
		t.Errorf("Sub-Intervals %+v, warnings %q", r.SubIntervals, r.Warnings)
	}
	if r.Implausible != 4 {
		t.Errorf("%d Status PDUs dropped as implausible recorded, want 4", r.Implausible)
	}
	if r.Setup.IsZero() || r.Start.Before(r.Setup) || r.End.Before(r.Start) || time.Since(r.End) < 0 {
		t.Errorf("times: setup %v, start %v, end %v", r.Setup, r.Start, r.End)
	}
}
