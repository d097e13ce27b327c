//go:build !small && linux

package e2e

// A downstream client that lies about what it received, against a real
// server process with --archive (docs/security.md, "A downstream client's
// report"). Downstream the server is the Load Sender and its record of the
// test (the archive, the fleet page) keeps the figures the client's Status
// PDUs report: a client that reported a 0.11 Mbit/s test at 962 Pbit/s
// had it archived so, status ok. The client here is a real Load Receiver
// (dataphase.Conn on the engine, over loopback, after a real Control
// Phase) whose first Status PDU of each new Sub-Interval is rewritten.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/engine"
	"github.com/udpstp/udpstp/internal/enginenet"
)

// forgedSubInterval is the lie: 4 billion datagrams and 120 PB in a
// second's Sub-Interval, 962 Pbit/s.
const (
	forgedDatagrams = 4_000_000_000
	forgedBytes     = 120_250_000_000_000_000
)

// lyingCore is a client's Load Receiver whose first Status PDU reporting
// each new Sub-Interval says forgedSubInterval instead (when lie).
type lyingCore struct {
	*dataphase.Conn
	lie     bool
	lastSub uint32
	forged  int
}

func (l *lyingCore) Poll(now clock.Pair, b *dataphase.SendBuffer) bool {
	ok := l.Conn.Poll(now, b)
	if !ok || !l.lie || b.N != 1 || b.Dgrams[0].HdrLen != dataphase.StatusLen {
		return ok
	}
	pdu := b.Slot(0)
	var s dataphase.StatusPDU
	if s.Decode(pdu, false) != nil || s.SubIntSeqNo <= l.lastSub {
		return ok
	}
	l.lastSub = s.SubIntSeqNo
	s.SubInt.RxDatagrams, s.SubInt.RxBytes = forgedDatagrams, forgedBytes
	sealed := s.Checksum != 0
	s.Checksum = 0
	s.Encode(pdu, false)
	if sealed {
		dataphase.SealStatusChecksum(pdu)
	}
	l.forged++
	return ok
}

// downstreamClient runs one 5 s downstream test at row 5 against the
// server at port, lying or not, and returns the Status PDUs it forged.
func downstreamClient(t *testing.T, port int, lie bool) int {
	t.Helper()
	net, closeNet := enginenet.NewClient(enginenet.Options{Log: nil})
	defer closeNet()
	cfg := control.DefaultClientConfig()
	cfg.TestIntTime, cfg.SRIndex = 5, 5
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cc, err := control.Activate(ctx, net, &cfg, control.ServerAddr{Host: "127.0.0.1", Port: port}, 0,
		uint16(1+rand.IntN(65535)), func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Sock.Close()
	core := &lyingCore{Conn: dataphase.NewConn(cc.Params, cc.Activated), lie: lie}
	ended := make(chan dataphase.EndReason, 1)
	engine.RunConn(cc.Sock.(*engine.Socket), core, func(ev dataphase.Event) {
		if ev.Kind == dataphase.EvEnd {
			ended <- ev.End
		}
	}, nil)
	select {
	case r := <-ended:
		t.Logf("lie %v: the client's Data Phase ended: %v; %d Status PDUs forged", lie, r, core.forged)
	case <-time.After(60 * time.Second):
		t.Fatal("the client's Data Phase did not end within 60 s")
	}
	return core.forged
}

var implausibleMetricRe = regexp.MustCompile(`(?m)^udpstp_\w*implausible_dropped\w*\{direction="downstream"\} (\S+)$`)

// TestHostileDownstreamReport: an honest client's record is "ok" with
// its figures; a lying one's (every new Sub-Interval first reported at
// 962 Pbit/s) is a warning (ErrorStatus 10) whose Sub-Intervals are the
// genuine ones the client sent after each lie (none near the forged
// rate), and the server's implausible_dropped counter counts each lie.
// Before the defence the lying client's record was "ok" with Sub-Intervals
// of 962,000,000,000 Mbit/s.
func TestHostileDownstreamReport(t *testing.T) {
	processTest(t) // 5 Mbit/s tests
	port := freePort(t, "127.0.0.1")
	maddr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	arc := filepath.Join(t.TempDir(), "archive")
	srv := spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "--archive", arc,
		"--metrics-listen", maddr, "127.0.0.1")
	implausible := func() string {
		_, body, _ := httpGet("http://" + maddr + "/metrics")
		if m := implausibleMetricRe.FindSubmatch(body); m != nil {
			return string(m[1])
		}
		return "none"
	}
	downstreamClient(t, port, false)
	if n := implausible(); n != "0" {
		t.Errorf("an honest client: implausible_dropped %s, want 0", n)
	}
	forged := downstreamClient(t, port, true)
	if forged == 0 {
		t.Fatal("the lying client forged nothing")
	}
	waitUntil(t, 30*time.Second, "both tests ended", func() (bool, string) {
		return strings.Count(srv.log(), "test ended") == 2, srv.log()
	})
	if n := implausible(); n != fmt.Sprint(forged) {
		t.Errorf("implausible_dropped %s, want the %d forged", n, forged)
	}
	stopServer(t, srv)
	recs := readArchive(t, arc)
	if len(recs) != 2 {
		t.Fatalf("%d records for two tests:\n%s", len(recs), srv.log())
	}
	honest, liar := recs[0], recs[1]
	if honest.Status != "ok" || honest.ErrorStatus != 0 || len(honest.SubIntervals) < 4 {
		t.Errorf("the honest client's record: %+v", honest)
	}
	if liar.Status == "ok" || liar.ErrorStatus != dataphase.WarnImplausible || len(liar.SubIntervals) < 4 {
		t.Errorf("the lying client's record: status %q, ErrorStatus %d, %d Sub-Intervals; want a warning (%d) and the genuine ones",
			liar.Status, liar.ErrorStatus, len(liar.SubIntervals), dataphase.WarnImplausible)
	}
	for _, r := range []archived{honest, liar} {
		for _, s := range r.SubIntervals {
			if s.Mbps > 50 { // the row: 5 Mbit/s
				t.Errorf("a Sub-Interval archived at %.0f Mbit/s in a 5 Mbit/s test (status %q)", s.Mbps, r.Status)
			}
		}
		if r.Summary.MaxMbps != nil && *r.Summary.MaxMbps > 50 {
			t.Errorf("a maximum of %.0f Mbit/s archived (status %q)", *r.Summary.MaxMbps, r.Status)
		}
	}
}
