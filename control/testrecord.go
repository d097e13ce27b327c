package control

import (
	"net/netip"
	"time"

	"github.com/udpstp/udpstp/dataphase"
)

// TestRecord is what the server knows of one Test Connection it served,
// handed over when its Data Phase has ended (ServerOptions.OnTestEnd): the
// server's archive (docs/fleet.md) writes one record per test from it.
// Nothing in it is gathered per datagram: the Sub-Intervals are the events
// the Data Phase reports anyway (upstream the server's own Load Receiver
// measured them; downstream they are the figures the client's Status PDUs
// carried).
type TestRecord struct {
	Setup     time.Time // the Setup Request accepted (wall clock)
	Start     time.Time // the Data Phase started
	End       time.Time // the Data Phase ended
	Peer      netip.AddrPort
	SetupFrom netip.AddrPort // where the Setup Request came from
	TestPort  int
	Upstream  bool
	IPv6      bool

	// SetupReq is the client's Setup Request (its auth block as sent);
	// Requested and Granted are its Test Activation before and after the
	// server's coercion (control/coerce.go).
	SetupReq           SetupPDU
	Requested, Granted ActivationPDU
	// SubIntervals holds at most MaxRecordSubIntervals entries, each
	// SubIntervalsMerged (0: 1) of them past that (AddSubInterval);
	// SubIntervalCount were reported, Peak is the one of the highest
	// IP-layer rate and RateSum their rates added up.
	SubIntervals       []dataphase.SubIntervalResult
	SubIntervalsMerged int
	SubIntervalCount   int
	Peak               dataphase.SubIntervalResult
	RateSum            float64
	ErrorStatus        int // as the test ends with it (-1's exit status)
	EndReason          dataphase.EndReason
	Warnings           []string // the Data Phase's warnings, at most dataphase.MaxWarnings
	// Implausible counts the client's Status PDUs dropped because their
	// figures cannot be true (dataphase/plausible.go: downstream, more
	// received than the server sent). Non-zero: the client's figures were
	// implausible; the Sub-Intervals above are only those that could be
	// true, and ErrorStatus is dataphase.WarnImplausible's warning (or
	// worse), never 0 (docs/security.md, "A downstream client's report").
	Implausible uint64
}

// testRecorder gathers a TestRecord from a Test Connection's events, on
// its executor's thread, once per Sub-Interval or warning, never per
// datagram.
type testRecorder struct {
	rec TestRecord
}

func newTestRecorder(sc *serverConn, peer netip.AddrPort, req SetupPDU, upstream bool) *testRecorder {
	g := sc.granted
	n := 2
	if p := g.SubIntPeriod; p > 0 {
		n += int(g.TestIntTime) * 1000 / int(p)
	} else if g.SubIntPeriodSec > 0 {
		n += int(g.TestIntTime) / int(g.SubIntPeriodSec)
	}
	return &testRecorder{rec: TestRecord{
		Setup: sc.at, Peer: peer, SetupFrom: sc.peer, TestPort: int(sc.sock.LocalAddr().Port()),
		Upstream: upstream, IPv6: !IsIPv4(peer), SetupReq: req,
		Requested: sc.requested, Granted: g,
		SubIntervals: make([]dataphase.SubIntervalResult, 0, min(n, MaxRecordSubIntervals)),
	}}
}

func (t *testRecorder) event(ev *dataphase.Event) {
	t.rec.Implausible += ev.Counts[dataphase.CountImplausible]
	switch ev.Kind {
	case dataphase.EvSubInterval:
		t.rec.AddSubInterval(&ev.SubInt)
	case dataphase.EvWarning:
		if len(t.rec.Warnings) < dataphase.MaxWarnings {
			t.rec.Warnings = append(t.rec.Warnings, ev.Text)
		}
	}
}
