package sim

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
)

func totals(subs []dataphase.SubIntervalResult) (dg, loss, ooo, dup uint64) {
	for _, r := range subs {
		dg += uint64(r.Stats.RxDatagrams)
		loss += uint64(r.Stats.SeqErrLoss)
		ooo += uint64(r.Stats.SeqErrOoo)
		dup += uint64(r.Stats.SeqErrDup)
	}
	return
}

// TestLossCounted drops every 100th Load PDU: about 1 % loss is counted as
// loss, never as reordering, and the search still runs (1 % is below the
// sequence error threshold at these rates only at first; we check counts).
func TestLossCounted(t *testing.T) {
	s, rc, _ := newPair(false, 5*time.Second)
	s.Down.Drop = func(i int) bool { return i%100 == 99 }
	s.Run(12 * time.Second)
	dg, loss, ooo, dup := totals(rc.subs)
	if ooo != 0 || dup != 0 {
		t.Errorf("loss misread: ooo %d dup %d", ooo, dup)
	}
	share := float64(loss) / float64(dg+loss)
	if share < 0.0095 || share > 0.0105 {
		t.Errorf("loss share %.4f (%d of %d), want 0.0100", share, loss, dg+loss)
	}
}

// TestReorderCounted swaps a pair of Load PDUs now and then: each swap is
// one out-of-order datagram and no loss.
func TestReorderCounted(t *testing.T) {
	s, rc, _ := newPair(false, 5*time.Second)
	s.Down.Swap = func(i int) bool { return i%1000 == 500 }
	s.Run(12 * time.Second)
	_, loss, ooo, dup := totals(rc.subs)
	if loss != 0 || dup != 0 || ooo == 0 {
		t.Errorf("reordering misread: loss %d ooo %d dup %d", loss, ooo, dup)
	}
}

// TestPartialSendsDeferred refuses part of many plans: refused datagrams
// are sent later with their own sequence numbers, so the receiver sees no
// loss, and the sender's counts show what was deferred.
func TestPartialSendsDeferred(t *testing.T) {
	s, rc, rs := newPair(false, 5*time.Second)
	k := 0
	s.Server.Accept = func(_ time.Duration, n int) int {
		k++
		if k%7 == 0 && n > 1 {
			return n / 2
		}
		return n
	}
	s.Run(12 * time.Second)
	if rc.end != dataphase.EndStopped {
		t.Fatalf("client end %v", rc.end)
	}
	_, loss, ooo, dup := totals(rc.subs)
	if loss != 0 || ooo != 0 || dup != 0 {
		t.Errorf("local backpressure shows at the receiver: loss %d ooo %d dup %d", loss, ooo, dup)
	}
	_ = rs
}

// TestStallSkipsBursts stalls the sending executor for 20 ms: Bursts more
// than the catch-up budget late are skipped and counted (not sent in a
// flood afterwards), the rest are sent late.
func TestStallSkipsBursts(t *testing.T) {
	s, _, rs := newPair(false, 5*time.Second)
	s.Server.Stalls = [][2]time.Duration{{3 * time.Second, 3*time.Second + 20*time.Millisecond}}
	var maxPlan int
	s.Server.OnEvent = func(at time.Duration, ev dataphase.Event) { rs.on(at, ev) }
	inner := s.Server.Core
	s.Server.Core = &planSpy{Core: inner, max: &maxPlan}
	s.Run(12 * time.Second)
	var skipped uint32
	for _, r := range rs.subs {
		skipped += r.SkippedBursts
	}
	// At ~600 Mbps (row 600: transmitter 1 every 100 us, transmitter 2
	// every ms) a 20 ms stall owes ~210 Bursts; all but those within the
	// 1 ms budget are skipped.
	if skipped < 150 || skipped > 230 {
		t.Errorf("skipped %d Bursts over a 20 ms stall", skipped)
	}
	if maxPlan > dataphase.MaxPlan {
		t.Errorf("a plan of %d datagrams", maxPlan)
	}
}

type planSpy struct {
	Core
	max *int
}

func (p *planSpy) Poll(now clock.Pair, b *dataphase.SendBuffer) bool {
	ok := p.Core.Poll(now, b)
	*p.max = max(*p.max, b.N)
	return ok
}

// TestOverRatePoliced makes an upstream client ignore the rows the server
// assigns and send row 300: the server stops it after 3 Trial Intervals
// above 1.5x, and says why.
func TestOverRatePoliced(t *testing.T) {
	s, rc, rs := newPair(true, 5*time.Second)
	row := dataphase.BuildRateTable(dataphase.TableOptions{})[300]
	s.Client.Core = &rowRewriter{Core: s.Client.Core, row: row}
	s.Run(12 * time.Second)
	if rs.end != dataphase.EndOverRate {
		t.Fatalf("server end %v, want over-rate", rs.end)
	}
	if rs.endAt > 1500*time.Millisecond {
		t.Errorf("policed only at %v", rs.endAt)
	}
	if len(rs.warns) == 0 {
		t.Errorf("no reason reported")
	}
	_ = rc
}

// rowRewriter rewrites the sending rate in every Status PDU the client
// receives, as a misbehaving client would ignore it.
type rowRewriter struct {
	Core
	row dataphase.SendingRate
}

func (r *rowRewriter) Receive(b *dataphase.RecvBatch) {
	for i := 0; i < b.N; i++ {
		d := b.Buf(i)
		if binary.BigEndian.Uint16(d) == dataphase.StatusPDUID {
			r.row.Put(d[8:])
		}
	}
	r.Core.Receive(b)
}

// TestClientStop interrupts the client mid-test: it tells the server with
// testAction 1, and the server ends at once instead of waiting for its
// watchdog, saying the peer stopped it (not "end time reached").
func TestClientStop(t *testing.T) {
	for _, up := range []bool{false, true} {
		s, rc, rs := newPair(up, 5*time.Second)
		s.Run(2 * time.Second)
		s.Client.Core.Stop()
		s.Run(10 * time.Second)
		if rc.end != dataphase.EndLocalStop {
			t.Errorf("up=%v: client end %v", up, rc.end)
		}
		if rs.end != dataphase.EndPeerStop || rs.endAt > 2200*time.Millisecond {
			t.Errorf("up=%v: server end %v at %v", up, rs.end, rs.endAt)
		}
	}
}

// TestServerStop ends a test early from the server (shutdown): the client
// completes the stop handshake, keeps its results and warns that the
// server ended the test early; the server ends saying it stopped it.
func TestServerStop(t *testing.T) {
	for _, up := range []bool{false, true} {
		s, rc, rs := newPair(up, 10*time.Second)
		s.Run(2 * time.Second)
		s.Server.Core.Stop()
		s.Run(10 * time.Second)
		if rc.end != dataphase.EndStopped || rs.end != dataphase.EndLocalStop {
			t.Errorf("up=%v: ends client %v server %v", up, rc.end, rs.end)
		}
		var early []string
		for _, w := range rc.warns {
			if w.Code == dataphase.WarnEndedEarly {
				early = append(early, w.Text)
			}
		}
		if len(early) != 1 || !strings.Contains(early[0], "ended early by the server after 2.") || !strings.HasSuffix(early[0], " of 10 s") {
			t.Errorf("up=%v: the client's early-end warnings %q", up, early)
		}
		if rc.endAt > 2300*time.Millisecond {
			t.Errorf("up=%v: client ended at %v", up, rc.endAt)
		}
	}
}

// TestWatchdog cuts the path for good: both ends warn that traffic stopped
// after a second and end after three.
func TestWatchdog(t *testing.T) {
	s, rc, rs := newPair(false, 10*time.Second)
	s.Down.Drop = func(i int) bool { return i > 2000 }
	s.Up.Drop = func(i int) bool { return i > 20 }
	s.Run(20 * time.Second)
	if rc.end != dataphase.EndWatchdog || rs.end != dataphase.EndWatchdog {
		t.Fatalf("ends client %v server %v", rc.end, rs.end)
	}
	found := false
	for _, w := range rc.warns {
		if w.Code == dataphase.WarnLocalTrafficStop {
			found = true
		}
	}
	if !found {
		t.Errorf("client warnings %+v, want LOCAL traffic stopped (4)", rc.warns)
	}
}

// junkCore puts datagrams that are no valid PDU into every batch its core
// receives, as a path or an attacker behind the peer's address could.
type junkCore struct {
	Core
	n int
}

var junkDatagrams = [][]byte{
	{},
	{0xbe, 0xef},
	{0xbe, 0xef, 3, 0, 0, 0, 0, 1, 0, 100, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, // testAction 3
	{0xfe, 0xed, 0, 2},
	{0xac, 0xe2, 0, 20},
	{0xde, 0xad, 0, 20, 1, 0, 0, 0},
}

func (j *junkCore) Receive(b *dataphase.RecvBatch) {
	if b.N < dataphase.MaxRecv {
		d := junkDatagrams[j.n%len(junkDatagrams)]
		j.n++
		copy(b.Buf(b.N), d)
		b.Dgrams[b.N] = dataphase.InDatagram{Len: len(d), Time: b.Pair.Mono}
		b.N++
	}
	j.Core.Receive(b)
}

// TestJunkInDataPhase feeds invalid datagrams to both ends throughout a
// test: they are dropped and counted (OB-UDPST's warning 6, at most 10 per
// Test Connection), and the test still completes, with its statistics
// untouched.
func TestJunkInDataPhase(t *testing.T) {
	for _, up := range []bool{false, true} {
		s, rc, rs := newPair(up, 5*time.Second)
		cj, sj := &junkCore{Core: s.Client.Core}, &junkCore{Core: s.Server.Core}
		s.Client.Core, s.Server.Core = cj, sj
		s.Run(12 * time.Second)
		if rc.end != dataphase.EndStopped || rs.end != dataphase.EndStopped {
			t.Fatalf("up=%v: ends client %v server %v", up, rc.end, rs.end)
		}
		if cj.n < 100 || sj.n < 100 {
			t.Fatalf("up=%v: only %d/%d junk datagrams delivered", up, cj.n, sj.n)
		}
		for _, r := range []*record{rc, rs} {
			if len(r.warns) != dataphase.MaxWarnings {
				t.Errorf("up=%v: %d warnings, want the cap of %d", up, len(r.warns), dataphase.MaxWarnings)
			}
			for _, w := range r.warns {
				if w.Code != dataphase.WarnInvalidPDU {
					t.Errorf("up=%v: warning %d %q", up, w.Code, w.Text)
				}
			}
		}
		_, loss, ooo, dup := totals(rc.subs)
		if len(rc.subs) != 5 || loss+ooo+dup != 0 {
			t.Errorf("up=%v: %d Sub-Intervals, loss/ooo/dup %d/%d/%d", up, len(rc.subs), loss, ooo, dup)
		}
	}
}

// TestLegacyDataPhase runs a whole test with protocol 11 framing (168-byte
// Status PDUs with the padded Sub-Interval block) each way.
func TestLegacyDataPhase(t *testing.T) {
	for _, up := range []bool{false, true} {
		s, rc, rs := newPair(up, 5*time.Second)
		cp, sp := params(up, false, 5*time.Second), params(up, true, 5*time.Second)
		cp.Legacy, sp.Legacy = true, true
		pair := clock.Pair{Mono: Start, Wall: WallBase}
		s.Client.Core, s.Server.Core = dataphase.NewConn(cp, pair), dataphase.NewConn(sp, pair)
		s.Run(12 * time.Second)
		if rc.end != dataphase.EndStopped || rs.end != dataphase.EndStopped || len(rc.subs) != 5 {
			t.Errorf("up=%v: ends %v/%v, %d Sub-Intervals", up, rc.end, rs.end, len(rc.subs))
		}
	}
}

// TestECN: with a CE threshold set, Load PDUs arriving Not-ECT raise the
// bleaching warnings (LOCAL at the Load Receiver, REMOTE at the sender),
// and CE-marked ones are counted and make every Trial Interval bad, so the
// search cannot climb.
func TestECN(t *testing.T) {
	run := func(tos uint8) (*record, *record) {
		cp, sp := params(false, false, 5*time.Second), params(false, true, 5*time.Second)
		cp.ECNCEThresh, sp.ECNCEThresh = 1, 1
		pair := clock.Pair{Mono: Start, Wall: WallBase}
		var rc, rs record
		s := &Sim{
			Client: &Endpoint{Core: dataphase.NewConn(cp, pair), OnEvent: rc.on},
			Server: &Endpoint{Core: dataphase.NewConn(sp, pair), OnEvent: rs.on},
			Up:     Link{Delay: time.Millisecond},
			Down:   Link{Delay: time.Millisecond, TOS: tos, HasTOS: true},
		}
		s.Run(12 * time.Second)
		return &rc, &rs
	}
	rc, rs := run(0x00) // Not-ECT: bleached on the way
	if !hasWarning(rc, 7) || !hasWarning(rs, 8) {
		t.Errorf("bleaching: client warnings %+v, server %+v", rc.warns, rs.warns)
	}
	if len(rc.subs) == 0 || !rc.subs[len(rc.subs)-1].Bleached {
		t.Errorf("Sub-Intervals do not say bleached")
	}
	rc, _ = run(0x03) // every Load PDU CE-marked
	var ce uint32
	best := 0.0
	for _, r := range rc.subs {
		ce += r.CECount
		best = max(best, mbps(r))
	}
	if ce == 0 || best > 1 {
		t.Errorf("all CE: %d CE counted, maximum %.2f Mbps (the search must not climb)", ce, best)
	}
	rc, rs = run(0x02) // ECT(0) all the way: nothing to report
	if len(rc.warns)+len(rs.warns) != 0 {
		t.Errorf("ECT(0) path: warnings %+v %+v", rc.warns, rs.warns)
	}
}

func hasWarning(r *record, code uint8) bool {
	for _, w := range r.warns {
		if w.Code == code {
			return true
		}
	}
	return false
}

// TestCompliantSenderNotPoliced: an upstream client that follows its rows
// on a congested upload link with a deep queue and a long path is still
// receiving traffic sent under a higher row well after each rate cut; the
// server must not take that for a client running over its rate.
func TestCompliantSenderNotPoliced(t *testing.T) {
	for _, c := range []struct {
		rate  float64
		queue int
		delay time.Duration
	}{
		{20e6, 1 << 20, 10 * time.Millisecond},
		{20e6, 125_000, 300 * time.Millisecond},
	} {
		s, rc, rs := newPair(true, 10*time.Second)
		s.Up = Link{Delay: c.delay, RateBps: c.rate, QueueBytes: c.queue, Overhead: 28}
		s.Down.Delay = c.delay
		s.Run(30 * time.Second)
		if rs.end == dataphase.EndOverRate || rc.end != dataphase.EndStopped {
			t.Errorf("%.0f Mbit/s, %d-byte queue, %v: server %v, client %v; warnings %+v",
				c.rate/1e6, c.queue, c.delay, rs.end, rc.end, rs.warns)
		}
	}
}

// TestReorderedStatusNoRepeat: a Status PDU that arrives after a newer one
// does not make the client report a Sub-Interval again.
func TestReorderedStatusNoRepeat(t *testing.T) {
	s, rc, _ := newPair(true, 5*time.Second)
	s.Client.Core = &holdBack{Core: s.Client.Core}
	s.Run(12 * time.Second)
	var last uint32
	for _, r := range rc.subs {
		if r.Seq <= last {
			t.Fatalf("Sub-Interval %d reported after %d", r.Seq, last)
		}
		last = r.Seq
	}
	if len(rc.subs) < 4 {
		t.Errorf("only %d Sub-Intervals", len(rc.subs))
	}
}

// holdBack replays, right after each Status PDU that starts reporting a
// new Sub-Interval, the Status PDU before it: that one arrives late,
// reordered across the Sub-Interval's first report.
type holdBack struct {
	Core
	prev    []byte
	prevSub uint32
}

func (h *holdBack) Receive(b *dataphase.RecvBatch) {
	n := b.N
	for i := 0; i < n; i++ {
		d := b.Data(i)
		if len(d) < dataphase.StatusLen || binary.BigEndian.Uint16(d) != dataphase.StatusPDUID {
			continue
		}
		sub := binary.BigEndian.Uint32(d[36:])
		if sub > h.prevSub && h.prev != nil && b.N < dataphase.MaxRecv {
			copy(b.Buf(b.N), h.prev)
			b.Dgrams[b.N] = dataphase.InDatagram{Len: len(h.prev), Time: b.Pair.Mono}
			b.N++
		}
		h.prev, h.prevSub = append(h.prev[:0], d...), sub
	}
	h.Core.Receive(b)
}

// TestCountsAddUp: what a server's Data Phase counts (its events' Counts,
// the -G and metrics totals) agrees with what the other end measured,
// each way: the Load Receiver's Status PDUs reach the Load Sender (all but
// the last one or two, sent as the test ends), and what they report
// received and lost is what the Load Receiver counted itself, covering at
// least its Sub-Intervals (the Status PDUs go on through the stop
// handshake), with 28 bytes of IP and UDP header per datagram.
func TestCountsAddUp(t *testing.T) {
	for _, up := range []bool{false, true} {
		s, rc, rs := newPair(up, 5*time.Second)
		drop := func(i int) bool { return i%100 == 99 }
		snd, rcv := &rs.counts, &rc.counts // downstream: the server sends the load
		tx, rx := dataphase.CountTxDatagrams, dataphase.CountRxDatagrams
		if up {
			s.Up.Drop = drop
		} else {
			s.Down.Drop = drop
		}
		s.Run(12 * time.Second)
		subs := rc.subs
		if up {
			snd, rcv, subs = &rc.counts, &rs.counts, rs.subs
		}
		if rc.end != dataphase.EndStopped || rs.end != dataphase.EndStopped {
			t.Fatalf("up=%v: ends: client %v server %v", up, rc.end, rs.end)
		}
		t.Logf("up=%v:\nload sender   %v\nload receiver %v", up, snd, rcv)
		if sent, got := rcv[dataphase.CountStatusSent], snd[dataphase.CountStatusReceived]; got == 0 || got > sent || got+2 < sent {
			t.Errorf("up=%v: %d Status PDUs sent, %d received", up, sent, got)
		}
		for _, k := range []struct{ snd, rcv dataphase.Counter }{
			{dataphase.CountTxDatagrams, dataphase.CountRxDatagrams},
			{dataphase.CountTxIPBytes, dataphase.CountRxIPBytes},
			{dataphase.CountTxLoss, dataphase.CountRxLoss},
		} {
			if a, b := snd[k.snd], rcv[k.rcv]; a == 0 || a > b || a < b*98/100 {
				t.Errorf("up=%v: load sender's %v %d, load receiver's %v %d", up, k.snd, a, k.rcv, b)
			}
		}
		dg, loss, _, _ := totals(subs)
		var bytes uint64
		for _, r := range subs {
			bytes += r.Stats.RxBytes + 28*uint64(r.Stats.RxDatagrams)
		}
		for _, k := range []struct {
			c   dataphase.Counter
			sub uint64
		}{{rx, dg}, {dataphase.CountRxLoss, loss}, {dataphase.CountRxIPBytes, bytes}} {
			if got := rcv[k.c]; got < k.sub || got > k.sub*115/100 {
				t.Errorf("up=%v: %v %d, the Sub-Intervals' %d", up, k.c, got, k.sub)
			}
		}
		if share := float64(rcv[dataphase.CountRxLoss]) / float64(rcv[rx]+rcv[dataphase.CountRxLoss]); share < 0.0095 || share > 0.0105 {
			t.Errorf("up=%v: loss share %.4f, want 0.0100", up, share)
		}
		for _, k := range []dataphase.Counter{rx, dataphase.CountStatusSent, dataphase.CountLoadInvalidSize, dataphase.CountLocalStatusLoss} {
			if snd[k] != 0 {
				t.Errorf("up=%v: load sender's %v = %d, want 0", up, k, snd[k])
			}
		}
		if rcv[tx] != 0 {
			t.Errorf("up=%v: load receiver's %v = %d, want 0", up, tx, rcv[tx])
		}
	}
}
