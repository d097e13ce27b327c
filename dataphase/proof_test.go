package dataphase

import (
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
)

// Unit tests of the proof of receipt (amplification.go): the clock
// check's arithmetic, the pre-proof sizes, the shift's end, the upstream
// secret echo and the pace of the rate adjustment. The attacks on real
// processes are in e2e/hostile_proof_test.go.

// genuineClock is what a genuine Load Receiver reports to a server with
// shift shiftMs: its clock o ms ahead of ours (negative: behind), the Load
// PDUs down ms on the path and its Status PDU up ms. rx is when the Status
// PDU arrives (our wall ns).
func genuineClock(shiftMs, o, down, up int64, rx int64) (cdm int32, spdu int64) {
	cdm = int32(o + down + shiftMs) // OB-UDPST's (int): modulo 2^32
	spdu = rx + (o-up)*1_000_000
	return cdm, spdu
}

func TestClockCheck(t *testing.T) {
	const day = 86_400_000 // ms
	rx := hostileStart.Wall
	for _, c := range []struct {
		name                string
		shift, o, down, up  int64
		wantOK, wantOverflw bool
	}{
		{"same clock, loopback", shiftMin, 0, 0, 0, true, false},
		{"same clock, 1 s round trip", 123_456_789, 0, 600, 400, true, false},
		{"round trip of proofMaxRTT", shiftMax - 1, 0, 1500, 1500, true, false},
		{"round trip above proofMaxRTT", shiftMax - 1, 0, 1500, 1501, false, false},
		{"clock 5 h behind (negative delta)", 77_000_000, -5 * 3_600_000, 10, 10, true, false},
		{"clock 20 days behind", shiftMax - 1, -20 * day, 10, 10, true, false},
		{"clock 6 days ahead, small shift", shiftMin, 6 * day, 10, 10, true, false},
		{"clock 7 days ahead, small shift", shiftMin, 7 * day, 10, 10, true, false},
		{"clock 7 days ahead, large shift: wraps", shiftMax - 1, 7 * day, 10, 10, true, true},
		{"clock 30 days ahead: its true delta wraps too", shiftMax / 2, 30 * day, 10, 10, true, false},
	} {
		cdm, spdu := genuineClock(c.shift, c.o, c.down, c.up, rx)
		ok, over := clockCheck(cdm, spdu, rx, c.shift)
		if ok != c.wantOK || (ok && over != c.wantOverflw) {
			t.Errorf("%s: clockCheck = %v, overflow %v; want %v, %v", c.name, ok, over, c.wantOK, c.wantOverflw)
		}
	}
	// Rounding: the two halves are rounded to ms on each end; the window's
	// lower edge takes a loopback's -1 and more.
	for _, x := range []int64{proofMinRTT, -1, 0, proofMaxRTT} {
		if ok, _ := clockCheck(int32(shiftMin+x), rx, rx, shiftMin); !ok {
			t.Errorf("x = %d ms refused", x)
		}
	}
	for _, x := range []int64{proofMinRTT - 1, proofMaxRTT + 1} {
		if ok, _ := clockCheck(int32(shiftMin+x), rx, rx, shiftMin); ok {
			t.Errorf("x = %d ms taken", x)
		}
	}
	// A forger that does not know the shift: its own clock (a
	// clockDeltaMin of its delay), or none.
	for _, cdm := range []int32{0, 5, -5} {
		if ok, _ := clockCheck(cdm, rx, rx, 999_999); ok {
			t.Errorf("clockDeltaMin %d passed without the shift", cdm)
		}
	}
}

// The shift is drawn from [shiftMin, shiftMax) and differs per seed.
func TestClockShiftDraw(t *testing.T) {
	seen := map[int64]bool{}
	for seed := uint64(1); seed <= 1000; seed++ {
		var a ampGuard
		p := hostileParams(true, false, 1000)
		p.Seed = seed
		a.init(&p, 0)
		if a.shiftMs < shiftMin || a.shiftMs >= shiftMax || a.shiftNs != a.shiftMs*1_000_000 {
			t.Fatalf("seed %d: shift %d ms", seed, a.shiftMs)
		}
		seen[a.shiftMs] = true
	}
	if len(seen) < 999 {
		t.Errorf("%d different shifts in 1000 seeds", len(seen))
	}
}

// Before the proof no Load PDU's size is forced: two go out from the
// initial budget, each drawn uniformly from [lo, preProofMax]. (Before: the
// third was always the smallest, and "1 datagram of 52 bytes" always
// proved receipt.)
func TestPreProofSizes(t *testing.T) {
	for _, ipv6 := range []bool{false, true} {
		lo := uint32(MinPayloadIPv4)
		if ipv6 {
			lo = MinPayloadIPv6
		}
		values := int(preProofMax - lo + 1)
		const seeds = 4000
		var freq [2]map[int]int
		freq[0], freq[1] = map[int]int{}, map[int]int{}
		for seed := uint64(1); seed <= seeds; seed++ {
			p := hostileParams(true, false, 1000)
			p.Seed, p.IPv6 = seed, ipv6
			r := newRun(NewConn(p, hostileStart))
			r.advance(500*time.Millisecond, 500*time.Microsecond, nil)
			if len(r.sizes) != 2 {
				t.Fatalf("ipv6 %v, seed %d: %d Load PDUs before any Status PDU %v, want 2", ipv6, seed, len(r.sizes), r.sizes)
			}
			for i, l := range r.sizes {
				if l < int(lo) || l > preProofMax {
					t.Fatalf("ipv6 %v, seed %d: size %d outside [%d, %d]", ipv6, seed, l, lo, preProofMax)
				}
				freq[i][l]++
			}
		}
		// Uniform: every value drawn, none much more often than 1 in
		// values (the test's bound is 2x, far outside sampling noise).
		for i := range freq {
			top := 0
			for _, n := range freq[i] {
				top = max(top, n)
			}
			if len(freq[i]) != values || top > 2*seeds/values {
				t.Errorf("ipv6 %v, Load PDU %d: %d sizes drawn of %d, the most frequent %d times in %d", ipv6, i+1, len(freq[i]), values, top, seeds)
			}
		}
	}
}

// A genuine peer validates; the first Load PDU after it carries the true
// time again, unless the peer's clockDeltaMin wrapped (its clock days
// ahead), where the shift stays for the whole test.
func TestClockShiftEnds(t *testing.T) {
	for _, o := range []int64{0, 7 * 86_400_000} {
		p := hostileParams(true, false, 1000)
		for seed := uint64(7); ; seed++ { // a shift large enough to wrap at +7 days
			p.Seed = seed
			var a ampGuard
			a.init(&p, 0)
			if o == 0 || a.shiftMs > 1<<31-o+1000 {
				break
			}
		}
		c := NewConn(p, hostileStart)
		r := newRun(c)
		r.advance(60*time.Millisecond, 100*time.Microsecond, nil)
		if r.dgrams == 0 {
			t.Fatal("no Load PDU in 60 ms")
		}
		var b RecvBatch
		b.Pair = r.now
		cdm, spdu := genuineClock(c.amp.shiftMs, o, 0, 0, r.now.Wall)
		statusClockIn(&b, 1, 1, uint32(r.sizes[0]), cdm, spdu, r.now.Mono)
		c.Receive(&b)
		if c.amp.on {
			t.Fatalf("clock %d ms ahead: not validated", o)
		}
		var sb SendBuffer
		now := r.now
		now.Mono += clock.Time(time.Millisecond)
		now.Wall += int64(time.Millisecond)
		if !c.Poll(now, &sb) || sb.N == 0 {
			t.Fatal("no Load PDU after validation")
		}
		var h LoadHeader
		if err := h.Decode(sb.Slot(0)); err != nil {
			t.Fatal(err)
		}
		got := clock.Join(h.LpduTimeSec, h.LpduTimeNsec)
		want := now.Wall
		if o != 0 {
			want -= c.amp.shiftNs
		}
		if got != want {
			t.Errorf("clock %d ms ahead: lpduTime %d after validation, want %d (shift %d ms)", o, got, want, c.amp.shiftMs)
		}
	}
}

// Upstream, the Status PDUs before the proof carry their true second and
// secret nanoseconds: an echo of the true time proves nothing, an echo of
// what was sent does, and the round-trip time is the true one.
func TestUpstreamSecretEcho(t *testing.T) {
	c := NewConn(hostileParams(true, true, AutoRateIndex), hostileStart)
	r := newRun(c)
	var seq uint32
	feed := func(spdu func() int64) func(time.Duration, *RecvBatch) {
		return func(at time.Duration, b *RecvBatch) {
			if at%(5*time.Millisecond) == 0 {
				seq++
				loadIn(b, seq, 1222, 1222, spdu(), r.now.Mono)
			}
		}
	}
	// Echo the true send time of the last Status PDU, as a forger who
	// knows when it went out (to the ns) would.
	r.advance(300*time.Millisecond, 500*time.Microsecond, feed(func() int64 { return c.statusWall }))
	if c.amp.nEcho == 0 || !c.amp.on {
		t.Fatalf("%d Status PDUs sent; validated by echoes of their true times: %v", c.amp.nEcho, !c.amp.on)
	}
	for i := range min(c.amp.nEcho, statusEchoes) {
		w, tr := c.amp.echoes[i], c.amp.trueTimes[i]
		if w/1e9 != tr/1e9 || w == tr {
			t.Errorf("Status PDU %d carried %d for %d: want the same second, other nanoseconds", i, w, tr)
		}
	}
	// A genuine client echoes what the last one carried, here 20 ms after
	// it went out.
	c = NewConn(hostileParams(true, true, AutoRateIndex), hostileStart)
	r = newRun(c)
	seq = 0
	r.advance(60*time.Millisecond, 500*time.Microsecond, feed(func() int64 { return 0 }))
	var lastWire, lastTrue int64
	r.advance(200*time.Millisecond, 500*time.Microsecond, func(at time.Duration, b *RecvBatch) {
		if c.statusWire != lastWire {
			lastWire, lastTrue = c.statusWire, c.statusWall
		}
		if lastWire != 0 && r.now.Wall-lastTrue == int64(20*time.Millisecond) {
			seq++
			loadIn(b, seq, 1222, 1222, lastWire, r.now.Mono)
		}
	})
	if c.amp.on {
		t.Fatal("not validated by the echo of a Status PDU's spduTime")
	}
	if c.rcv.rttMinimum != 20 {
		t.Errorf("rttMinimum %d ms, want the true 20", c.rcv.rttMinimum)
	}
}

// Status PDUs from a validated peer move the rate at most once per Trial
// Interval after a burst of adjustBurst, however fast they come.
func TestAdjustPace(t *testing.T) {
	p := hostileParams(true, false, AutoRateIndex)
	c, r := validatedDownstream(t, AutoRateIndex)
	// The pace alone: plausible.go drops this flood before it (its
	// numbers run ahead of the test time: TestServerPlausibility).
	c.pl.on = false
	var b RecvBatch
	r.events = nil
	// A Status PDU every ms for a second, reporting no loss: 1000 of them.
	seq := uint32(1)
	const d = time.Second
	r.advance(d, 100*time.Microsecond, func(at time.Duration, b *RecvBatch) {
		if at%time.Millisecond == 0 {
			seq++
			goodStatusIn(b, seq, r.now.Mono)
		}
	})
	a := r.counts()
	got, held := a[CountStatusReceived], a[CountStatusRateHeld]
	moved := got - held
	limit := uint64(adjustBurst + d/p.TrialInt + 1)
	if got < 900 || moved > limit {
		t.Errorf("%d Status PDUs, %d moved the rate (at most %d allowed), %d held", got, moved, limit, held)
	}
	fast := c.Index()
	t.Logf("%d Status PDUs in %v: %d moved the rate, %d held; row %d", got, d, moved, held, fast)

	// One per Trial Interval, late and bunched by up to 3: none held.
	c = NewConn(p, hostileStart)
	r = newRun(c)
	r.advance(60*time.Millisecond, 100*time.Microsecond, nil)
	b.N, b.Pair = 0, r.now
	genuineStatusIn(&b, c, 1, 1, uint32(r.sizes[0]), r.now)
	c.Receive(&b)
	r.events = nil
	seq = 1
	r.advance(d, 100*time.Microsecond, func(at time.Duration, b *RecvBatch) {
		// Three Status PDUs at once every 150 ms, the next three 1 ms apart.
		if k := at % (150 * time.Millisecond); k == 0 || k == time.Millisecond || k == 2*time.Millisecond {
			seq++
			goodStatusIn(b, seq, r.now.Mono)
		}
	})
	if a := r.counts(); a[CountStatusRateHeld] != 0 {
		t.Errorf("a genuine pace, bunched: %d of %d Status PDUs held", a[CountStatusRateHeld], a[CountStatusReceived])
	}
	// The forged flood got at most its burst's steps ahead of a real
	// client's search.
	if fast > c.Index()+adjustBurst*int(p.HighSpeedDelta) || c.Index() == 0 {
		t.Errorf("row %d after a second of forged feedback, %d at a real client's pace", fast, c.Index())
	}
	t.Logf("a real client's pace: row %d", c.Index())
}

// goodStatusIn appends a Status PDU reporting 20 datagrams, no loss and a
// round trip at its minimum: the rate goes up.
func goodStatusIn(b *RecvBatch, seq uint32, t clock.Time) {
	s := StatusPDU{SeqNo: seq, TiRxDatagrams: 20, TiRxBytes: 20 * 1222, RTTMinimum: 1, RTTVarSample: 0, DelayVarMin: NoDelay}
	n := s.Encode(b.Buf(b.N), false)
	b.Dgrams[b.N] = InDatagram{Len: n, Time: t}
	b.N++
}
