package dataphase

import (
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/internal/testkit/race"
)

// Unit tests of a client's plausibility rules (plausible.go). The attack on
// real processes is e2e/hostile_client_test.go.

const plStart = clock.Time(1e9)

func plAt(d time.Duration) clock.Time { return plStart + clock.Time(d) }

// plSender is an upstream client's rules after sending rate datagrams a
// second of 1222 bytes for d, in 1 ms plans, as pollLoad and Sent do.
func plSender(d time.Duration, rate int) *plausible {
	p := &plausible{}
	p.init(&Params{TrialInt: 50 * time.Millisecond, SubIntPeriod: time.Second}, plStart)
	perMs := float64(rate) / 1000
	due := 0.0
	for t := time.Duration(0); t < d; t += time.Millisecond {
		p.sample(plAt(t))
		due += perMs
		for ; due >= 1; due-- {
			p.sent(1222)
		}
	}
	return p
}

// genuineStatus is a Status PDU at 3 s of a 500 datagram/s test: its
// Trial Interval and its Sub-Interval (2) as a real server reports them.
func genuineStatus() StatusPDU {
	return StatusPDU{
		SeqNo: 58, SubIntSeqNo: 2,
		SubInt: SubIntervalStats{RxDatagrams: 500, RxBytes: 500 * 1222, DeltaTime: 1_000_123,
			SeqErrLoss: 2, SeqErrOoo: 1, DelayVarCnt: 499, AccumTime: 2001},
		TiDeltaTime: 50_000, TiRxDatagrams: 25, TiRxBytes: 25 * 1222, DelayVarCnt: 25,
	}
}

func TestPlausibleStatus(t *testing.T) {
	const rate = 500
	now := plAt(3 * time.Second)
	cases := []struct {
		name   string
		edit   func(s *StatusPDU)
		newSub bool
		want   implausibility
	}{
		{"genuine", func(*StatusPDU) {}, true, implOK},
		{"genuine, the Sub-Interval already taken", func(*StatusPDU) {}, false, implOK},
		{"old Sub-Interval with garbage, not taken", func(s *StatusPDU) { s.SubInt.RxBytes = 1 << 60 }, false, implOK},
		// The attack found in review: 10,224 Mbit/s in a 5 Mbit/s test.
		{"10,224 Mbit/s", func(s *StatusPDU) { s.SubInt.RxBytes = 1_278_000_000 }, true, implSent},
		{"far-ahead Sub-Interval", func(s *StatusPDU) { s.SubIntSeqNo = 4_000_000_000 }, true, implSubSeq},
		{"Sub-Interval 6 at 3 s", func(s *StatusPDU) { s.SubIntSeqNo = 6 }, true, implSubSeq},
		{"Sub-Interval 5 at 3 s (slack)", func(s *StatusPDU) { s.SubIntSeqNo = 5 }, true, implOK},
		{"far-ahead Status PDU", func(s *StatusPDU) { s.SeqNo = 1 << 31 }, true, implStatusSeq},
		{"Status PDU 63 at 3 s (slack)", func(s *StatusPDU) { s.SeqNo = 62 }, true, implOK},
		{"Sub-Interval of 1 ms", func(s *StatusPDU) { s.SubInt.DeltaTime = 1000 }, true, implSubDuration},
		{"Sub-Interval of 974 ms (shortest)", func(s *StatusPDU) {
			s.SubInt.DeltaTime = 975_000
			s.SubInt.RxDatagrams, s.SubInt.DelayVarCnt, s.SubInt.RxBytes = 480, 479, 480*1222
		}, true, implOK},
		{"Sub-Interval longer than the test", func(s *StatusPDU) { s.SubInt.DeltaTime = 60_000_000 }, true, implSubDuration},
		{"accumulated time beyond the test", func(s *StatusPDU) { s.SubInt.AccumTime = 60_000 }, true, implSubDuration},
		{"more out-of-order than received", func(s *StatusPDU) { s.SubInt.SeqErrOoo = 501 }, true, implCounts},
		{"more delay samples than received", func(s *StatusPDU) { s.SubInt.DelayVarCnt = 501 }, true, implCounts},
		{"loss beyond every number used", func(s *StatusPDU) { s.SubInt.SeqErrLoss = 1 << 30 }, true, implCounts},
		{"more received than sent", func(s *StatusPDU) {
			s.SubInt.RxDatagrams, s.SubInt.RxBytes = rate*3+300, (rate*3+300)*1222
		}, true, implSent},
		// 1 s + plausibleQueue of what was sent: a queue that drained.
		{"everything of the last 3 s", func(s *StatusPDU) { s.SubInt.RxDatagrams, s.SubInt.RxBytes = rate*3, rate*3*1222 }, true, implOK},
		{"a path that duplicated every datagram", func(s *StatusPDU) {
			s.SubInt.RxDatagrams, s.SubInt.SeqErrDup, s.SubInt.RxBytes = 1000, 500, 1000*1222
		}, true, implOK},
		{"more duplicates than datagrams", func(s *StatusPDU) {
			s.SubInt.RxDatagrams, s.SubInt.SeqErrDup, s.SubInt.RxBytes = 100_000, 99_000, 100_000*1222
		}, true, implSent},
		{"larger datagrams than sent", func(s *StatusPDU) { s.SubInt.RxBytes = 500 * 9000 }, true, implSent},
		{"trial: more received than sent", func(s *StatusPDU) { s.TiRxDatagrams, s.TiRxBytes = 2000, 2000*1222 }, true, implSent},
		{"trial: bytes beyond 32 bits of datagrams", func(s *StatusPDU) { s.TiRxBytes = 4_000_000_000 }, true, implSent},
		{"trial: more duplicates than received", func(s *StatusPDU) { s.SeqErrDup = 26 }, true, implCounts},
		{"trial: more delay samples than received", func(s *StatusPDU) { s.DelayVarCnt = 26 }, true, implCounts},
	}
	for _, tc := range cases {
		p := plSender(3*time.Second, rate)
		s := genuineStatus()
		tc.edit(&s)
		if got := p.status(&s, now, tc.newSub, uint32(p.dgrams)); got != tc.want {
			t.Errorf("%s: rule %d (%s), want %d (%s)", tc.name, got, implausibleText[got], tc.want, implausibleText[tc.want])
		}
	}
	// A server checks nothing here (its own defences are elsewhere).
	p := plSender(3*time.Second, rate)
	p.on = false
	s := genuineStatus()
	s.SubInt.RxBytes = 1 << 60
	if got := p.status(&s, now, true, uint32(p.dgrams)); got != implOK {
		t.Errorf("server: rule %d", got)
	}
}

// TestPlausibleSentSince: the window's base is the newest sample at or
// before its start, the start itself once the ring no longer reaches back.
func TestPlausibleSentSince(t *testing.T) {
	p := plSender(20*time.Second, 1000) // 1 datagram a ms, samples every 100 ms
	d, b := p.sentSince(plAt(19 * time.Second))
	if d != 1000 || b != 1000*1222 {
		t.Errorf("last second: %d datagrams %d bytes, want 1000, %d", d, b, 1000*1222)
	}
	d, _ = p.sentSince(plAt(19*time.Second + 50*time.Millisecond))
	if d != 1000 {
		t.Errorf("from between two samples: %d, want the earlier sample's 1000", d)
	}
	d, _ = p.sentSince(plAt(time.Second)) // before the ring's 12.8 s
	if d != 20000 {
		t.Errorf("beyond the ring: %d, want everything, 20000", d)
	}
}

func TestPlausibleLoad(t *testing.T) {
	wall := int64(1796009000e9)
	mk := func() *plausible {
		p := &plausible{}
		p.init(&Params{TrialInt: 50 * time.Millisecond, SubIntPeriod: time.Second}, plStart)
		for i := range 10 {
			p.statusSent(wall + int64(i)*50e6)
		}
		return p
	}
	cases := []struct {
		name string
		seq  uint32
		echo int64
		want implausibility
	}{
		{"next", 1001, wall + 450e6, implOK},
		{"no echo yet", 1001, 0, implOK},
		{"a loss burst", 1001 + 100_000, wall + 450e6, implOK},
		{"far ahead", 1 << 31, wall + 450e6, implLoadSeq},
		{"late", 900, wall + 400e6, implOK},
		{"an echo never sent", 1001, wall + 449e6, implEcho},
		{"an echo from the future", 1001, wall + 10e9, implEcho},
	}
	for _, tc := range cases {
		p := mk()
		h := LoadHeader{SeqNo: tc.seq}
		h.SpduTimeSec, h.SpduTimeNsec = clock.Split(tc.echo)
		if got := p.load(&h, plAt(time.Second), 1000, wall+400e6); got != tc.want {
			t.Errorf("%s: rule %d (%s), want %d", tc.name, got, implausibleText[got], tc.want)
		}
	}
	// The ring full, an echo older than it proves nothing either way.
	p := mk()
	for i := range echoRingLen {
		p.statusSent(wall + int64(i+10)*50e6)
	}
	h := LoadHeader{SeqNo: 1001}
	h.SpduTimeSec, h.SpduTimeNsec = clock.Split(wall + 1)
	if got := p.load(&h, plAt(time.Second), 1000, 0); got != implOK {
		t.Errorf("an echo older than the ring: rule %d", got)
	}
	// The bound grows with the time since the last advance.
	p = mk()
	h = LoadHeader{SeqNo: 1000 + 7_000_000}
	if got := p.load(&h, plAt(time.Second), 1000, 0); got != implLoadSeq {
		t.Errorf("7 M ahead after 1 s: rule %d", got)
	}
	if got := p.load(&h, plAt(10*time.Second), 1000, 0); got != implOK {
		t.Errorf("7 M ahead after 10 s: rule %d", got)
	}
}

// TestPlausibleWarnings: a flood of impossible PDUs makes a handful of
// lines, each with its count.
func TestPlausibleWarnings(t *testing.T) {
	var p plausible
	var lines []uint64
	for range 100_000 {
		if p.discard() {
			lines = append(lines, p.discarded)
		}
	}
	if len(lines) != 4 || lines[0] != 1 || lines[3] != 1000 || !p.unsaid() {
		t.Errorf("lines at %v, unsaid %v", lines, p.unsaid())
	}
}

// TestPlausibleForgedStatusConn is the attack on a client's core:
// an upstream test at row 5 whose server reports what it really got, and at
// 2.5 s one forged Status PDU reporting 10,224 Mbit/s in Sub-Interval
// 4,000,000,000. The forged one is dropped, counted and said once; every
// real Sub-Interval after it is taken, none above what was sent.
func TestPlausibleForgedStatusConn(t *testing.T) {
	p := hostileParams(false, true, 0)
	table := BuildRateTable(TableOptions{})
	p.InitialRate = table[5]
	r := newRun(NewConn(p, hostileStart))
	var seq, sub uint32
	var subSent, subStartDgrams, subBytes, subStartBytes int // the fake server's last Sub-Interval: what we sent in it
	forged := false
	r.advance(5*time.Second, time.Millisecond, func(at time.Duration, b *RecvBatch) {
		if at%(50*time.Millisecond) != 0 || at == 0 {
			return
		}
		seq++
		if at%time.Second == 0 {
			sub++
			subSent, subStartDgrams = r.dgrams-subStartDgrams, r.dgrams
			subBytes, subStartBytes = r.bytes-subStartBytes, r.bytes
		}
		s := StatusPDU{SeqNo: seq, Rate: table[5], SubIntSeqNo: sub, RTTMinimum: NoDelay, RTTVarSample: NoDelay, DelayVarMin: NoDelay,
			SubInt: SubIntervalStats{RxDatagrams: uint32(subSent), RxBytes: uint64(subBytes), DeltaTime: 1_000_000,
				AccumTime: sub * 1000, RTTVarMin: NoDelay, DelayVarMin: NoDelay},
			TiDeltaTime: 50_000}
		if at == 2500*time.Millisecond && !forged {
			forged = true
			f := s
			f.SeqNo, f.SubIntSeqNo = seq, 4_000_000_000
			f.SubInt.RxBytes, f.SubInt.RxDatagrams = 1_278_000_000, 1_000_000
			n := f.Encode(b.Buf(b.N), false)
			b.Dgrams[b.N] = InDatagram{Len: n, Time: r.now.Mono}
			b.N++
		}
		n := s.Encode(b.Buf(b.N), false)
		b.Dgrams[b.N] = InDatagram{Len: n, Time: r.now.Mono}
		b.N++
	})
	var subs []SubIntervalResult
	warnings := 0
	for _, ev := range r.events {
		switch {
		case ev.Kind == EvSubInterval:
			subs = append(subs, ev.SubInt)
		case ev.Kind == EvWarning && ev.Code == WarnImplausible:
			warnings++
			// The rule said in words (implausibility's String).
			if want := "WARNING: 1 Status PDUs dropped so far as forged: their figures cannot be true (the last: its "; !strings.HasPrefix(ev.Text, want) {
				t.Errorf("warning %q, want it to begin %q", ev.Text, want)
			}
		}
	}
	if len(subs) != 4 {
		t.Fatalf("%d Sub-Intervals taken, want 4 (1..4): %+v", len(subs), subs)
	}
	for i, s := range subs {
		mbps := float64(s.Stats.RxBytes*8) / float64(s.Stats.DeltaTime)
		if s.Seq != uint32(i+1) || mbps > 10 {
			t.Errorf("Sub-Interval %d: number %d, %.2f Mbit/s", i+1, s.Seq, mbps)
		}
	}
	if k := r.counts(); k[CountImplausible] != 1 || warnings != 1 {
		t.Errorf("%d dropped, %d warnings: want 1 and 1", k[CountImplausible], warnings)
	}
}

// TestPlausibleShortPeriod: with a Trial Interval longer than the period
// (250 ms, 100 ms), a Sub-Interval closes on every Status PDU, so their
// numbers are bounded by the Status PDUs'; loss may reach every sequence
// number used, sent or not (-n).
func TestPlausibleShortPeriod(t *testing.T) {
	p := &plausible{}
	p.init(&Params{TrialInt: 250 * time.Millisecond, SubIntPeriod: 100 * time.Millisecond}, plStart)
	for i := range 3000 {
		p.sample(plAt(time.Duration(i) * time.Millisecond))
		p.sent(1222)
	}
	now := plAt(3 * time.Second)
	s := StatusPDU{SeqNo: 12, SubIntSeqNo: 14, TiDeltaTime: 250_000,
		SubInt: SubIntervalStats{RxDatagrams: 250, RxBytes: 250 * 1222, DeltaTime: 250_000, SeqErrLoss: 5000}}
	if got := p.status(&s, now, true, 9000); got != implOK {
		t.Errorf("Sub-Interval 14 at 3 s, loss of 5000 of 9000 numbers used: rule %d (%s)", got, implausibleText[got])
	}
	s.SubIntSeqNo = 15
	if got := p.status(&s, now, true, 9000); got != implSubSeq {
		t.Errorf("Sub-Interval 15 at 3 s: rule %d, want %d", got, implSubSeq)
	}
	s.SubIntSeqNo = 14
	if got := p.status(&s, now, true, 3000); got != implCounts {
		t.Errorf("a loss of 5000 of 3000 numbers used: rule %d, want %d", got, implCounts)
	}
}

// TestPlausibleTotal: Sub-Intervals that each fit what was sent in their
// span and plausibleQueue before it cannot add up to more than the whole
// test sent: at 4 s of 500 datagrams a second, a first Sub-Interval of
// 1,500 (all of the last 3 s) is taken, a second of 1,500 is not; one of
// 500 is, and duplicates and late ones count apart.
func TestPlausibleTotal(t *testing.T) {
	const rate = 500
	p := plSender(4*time.Second, rate)
	s := genuineStatus()
	s.SeqNo, s.SubIntSeqNo, s.SubInt.AccumTime = 78, 3, 3001
	s.SubInt.RxDatagrams, s.SubInt.RxBytes, s.SubInt.SeqErrOoo, s.SubInt.DelayVarCnt = rate*3, rate*3*1222, 0, 0
	now := plAt(4 * time.Second)
	if got := p.status(&s, now, true, uint32(p.dgrams)); got != implOK {
		t.Fatalf("the first Sub-Interval of 3 s of datagrams: %s", got)
	}
	p.took(&s.SubInt)
	s.SubIntSeqNo++
	if got := p.status(&s, now, true, uint32(p.dgrams)); got != implTotal {
		t.Errorf("a second one: rule %d (%s), want %s", got, got, implTotal)
	}
	s.SubInt.RxDatagrams, s.SubInt.RxBytes = rate, rate*1222
	if got := p.status(&s, now, true, uint32(p.dgrams)); got != implOK {
		t.Errorf("a second one of the rest: %s", got)
	}
	// Every one duplicated: the copies are not distinct datagrams sent.
	s.SubInt.RxDatagrams, s.SubInt.SeqErrDup, s.SubInt.RxBytes = 2*rate, rate, 2*rate*1222
	if got := p.status(&s, now, true, uint32(p.dgrams)); got != implOK {
		t.Errorf("the rest, each twice: %s", got)
	}
}

// TestServerPlausibility: a server sending downstream at row 0 after the
// proof of receipt takes a genuine Sub-Interval and drops one that
// reports 962 Pbit/s (the attack: a 0.11 Mbit/s test archived at that
// rate, status ok), counting it as implausible and warning (code 10,
// which makes the test's ErrorStatus, and so its record, not "ok"); the
// forged figures reach no event. An upstream server keeps no such rules:
// its own Load Receiver measures.
func TestServerPlausibility(t *testing.T) {
	c, r := validatedDownstream(t, 0)
	if !c.pl.on || len(c.pl.ring) != serverSentRingLen || c.pl.echo != nil {
		t.Fatalf("a downstream server's rules: on %v, ring %d, echo %d", c.pl.on, len(c.pl.ring), len(c.pl.echo))
	}
	var b RecvBatch
	seq := uint32(1)
	statusEvery := func(at time.Duration, b *RecvBatch) {
		if at%(50*time.Millisecond) == 0 {
			seq++
			statusClockIn(b, seq, 0, 0, 0, r.now.Wall, r.now.Mono)
		}
	}
	r.advance(1100*time.Millisecond, 100*time.Microsecond, statusEvery)
	sub := func(n, dgrams uint32, bytes uint64) {
		seq++
		s := StatusPDU{SeqNo: seq, SubIntSeqNo: n, RTTMinimum: NoDelay, RTTVarSample: NoDelay, DelayVarMin: NoDelay,
			SubInt: SubIntervalStats{RxDatagrams: dgrams, RxBytes: bytes, DeltaTime: 1_000_000, AccumTime: 1000 * n,
				DelayVarMin: NoDelay, RTTVarMin: NoDelay}}
		b.N, b.Pair = 0, r.now
		nb := s.Encode(b.Buf(0), false)
		b.Dgrams[0], b.N = InDatagram{Len: nb, Time: r.now.Mono}, 1
		c.Receive(&b)
		r.advance(time.Millisecond, 100*time.Microsecond, nil)
	}
	sent, sentBytes := uint32(r.dgrams), uint64(r.bytes)
	// 962 Pbit/s for a second: 120 PB.
	sub(1, 4_000_000_000, 120_250_000_000_000_000)
	sub(1, sent, sentBytes) // everything sent so far: genuine
	var subs []SubIntervalResult
	var warned []string
	for _, ev := range r.events {
		switch {
		case ev.Kind == EvSubInterval:
			subs = append(subs, ev.SubInt)
		case ev.Kind == EvWarning && ev.Code == WarnImplausible:
			warned = append(warned, ev.Text)
		}
	}
	r.c.Stop()
	r.advance(5*time.Second, time.Millisecond, statusEvery)
	if n := r.counts()[CountImplausible]; n != 1 {
		t.Errorf("%d counted as implausible, want 1", n)
	}
	if len(subs) != 1 || subs[0].Stats.RxDatagrams != sent || subs[0].Stats.RxBytes != sentBytes {
		t.Errorf("Sub-Intervals taken %+v, want the genuine one only (%d datagrams, %d bytes)", subs, sent, sentBytes)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "1 Status PDUs dropped") || !strings.Contains(warned[0], implSent.String()) {
		t.Errorf("warnings %q", warned)
	}
	if up := NewConn(hostileParams(true, true, 0), hostileStart); up.pl.on || up.pl.ring != nil {
		t.Errorf("an upstream server keeps the rules: on %v, ring %d", up.pl.on, len(up.pl.ring))
	}
}

// TestServerPlausibilityAllocatesNothing: a downstream server's sends,
// which now add to the rules' totals and sample them, allocate nothing.
func TestServerPlausibilityAllocatesNothing(t *testing.T) {
	c, r := validatedDownstream(t, 0)
	c.Events()
	var sb SendBuffer
	now, sent := r.now, 0
	a := race.AllocsPerRun(2000, func() {
		now.Mono += clock.Time(100 * time.Microsecond)
		now.Wall += int64(100 * time.Microsecond)
		for c.Poll(now, &sb) {
			sent += sb.N
			c.Sent(sb.N)
		}
	})
	if a != 0 || sent == 0 || c.pl.dgrams == 0 || c.pl.ringN == 0 {
		t.Errorf("%.2f allocations a turn; %d sent, the rules' total %d, %d samples", a, sent, c.pl.dgrams, c.pl.ringN)
	}
}

// validatedDownstream is a downstream server's Test Connection at row,
// validated by a genuine first Status PDU 60 ms in, and its run.
func validatedDownstream(t *testing.T, row uint16) (*Conn, *run) {
	t.Helper()
	c := NewConn(hostileParams(true, false, row), hostileStart)
	r := newRun(c)
	r.advance(60*time.Millisecond, 100*time.Microsecond, nil)
	var b RecvBatch
	b.Pair = r.now
	genuineStatusIn(&b, c, 1, 1, uint32(r.sizes[0]), r.now)
	c.Receive(&b)
	if c.amp.on {
		t.Fatal("not validated")
	}
	return c, r
}
