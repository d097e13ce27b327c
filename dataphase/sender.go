package dataphase

import (
	"github.com/udpstp/udpstp/clock"
)

// The Load Sender: two transmitters driven by the current sending rate row
// (ratetable.go), scheduled on an absolute timeline with bounded
// catch-up.
//
// OB-UDPST reschedules each transmitter from the time it happened to run and
// never catches up, so every late timer silently lowers the rate it offers.
// We keep each transmitter's due times on a fixed grid: a Burst that comes
// due late is sent late (stamped at departure), and a Burst more than the
// catch-up budget late is a Skipped Burst, counted and reported so the
// shortfall is visible and deducted from the sender's rate instead of being
// hidden. Unbounded catch-up was rejected: it would put more than planned
// into single Sub-Intervals and inflate the maximum.

// The grid. Every transmitter's due times are multiples of its period on
// the Test Time Base. The periods of the sending rate table (100 us, 1 ms,
// 50 ms) are each a multiple of the one before, so the Bursts of every
// Test Connection of a machine fall due at the same instants, whatever
// their rows and whenever they started. An Engine Thread of the pool then
// wakes once for all the Bursts due at an instant instead of once for
// each: a wake-up costs 20-50 us of CPU on a VM, and with free phases 40
// Test Connections made 16,000 wake-ups a second, four times OB-UDPST's
// overhead. Each Test Connection's schedule is as regular as before (its
// Bursts are one period apart); only where on the timeline it sits
// changed. OB-UDPST draws a transmitter's first Burst 5 to 50 ms after
// activation; ours is that draw rounded up to the grid.

// An Engine Thread serving many Test Connections moves some of their grids
// by a phase (SetGridPhase; the engine's gridphase.go chooses it): the
// Bursts of one instant would otherwise all wait in one turn, the last of
// N for the N-1 sends before it (166 µs of send lag p99 at 120 Test
// Connections on one thread). Those of one phase still share their
// wake-ups.

// onGrid is the first multiple of iv at or after t (t itself when iv is 0).
func onGrid(t, iv clock.Time) clock.Time {
	if iv <= 0 {
		return t
	}
	r := t % iv
	switch {
	case r == 0:
		return t
	case r < 0:
		return t - r
	}
	return t + iv - r
}

// onGridAt is the first point of the grid of iv moved by phase at or after
// t: phase plus a multiple of iv.
func onGridAt(t, iv, phase clock.Time) clock.Time {
	return onGrid(t-phase, iv) + phase
}

// transmitter is one of the two periodic senders of a row.
type transmitter struct {
	armed bool
	due   clock.Time
}

// burst is one transmitter firing's worth of datagrams.
type burst struct {
	n       int    // datagrams of size payload
	payload uint16 // UDP payload of each
	addon   uint16 // size of one extra datagram (0: none)
}

// pendingDgram is a datagram of the plan in the SendBuffer, remembered so
// the unsent tail can be deferred.
type pendingDgram struct {
	seq   uint32
	len   uint16
	older bool // belongs to the earlier (deferred) Burst of the plan
}

// sender is the Load Sender side of a Test Connection.
type sender struct {
	tx      [2]transmitter
	row     SendingRate
	ipv6    bool
	random  bool
	budget  clock.Time
	noRoll  bool
	nextSeq uint32
	rng     xorshift
	// sizeCap, when non-zero, is the largest size a datagram may be given:
	// the anti-amplification budget before validation (amplification.go).
	sizeCap uint32

	// The plan last written into the SendBuffer, and its unsent tail.
	plan     [MaxPlan]pendingDgram
	planN    int
	deferred [MaxPlan]pendingDgram
	deferN   int

	// Counters of the current Sub-Interval (reported with each result).
	skippedBursts  uint32
	skippedDgrams  uint32
	withheldDgrams uint32
	planned        uint64
	delivered      uint64

	// IP fragmentation of what the kernel accepted (frag.go), counted only
	// when the path MTU is known: running totals, and the totals when the
	// last Status PDU arrived and when the receiver's current Sub-Interval
	// began (as far as this end can tell).
	frag       fragPlan
	fragOn     bool
	fragOpen   bool // a Status PDU arrived: the receiver's Sub-Intervals began
	fragTotal  fragTally
	fragStatus fragTally
	fragStart  fragTally
}

// fragTally is a running count of accepted datagrams and their
// fragmentation.
type fragTally struct {
	dgrams uint64
	frag   fragCounts
}

func (s *sender) init(row SendingRate, start clock.Time, budget clock.Time, seed uint64) {
	s.row = row
	s.budget = budget
	s.rng = newXorshift(seed)
	s.nextSeq = 1
	for t := range s.tx {
		if s.interval(t) > 0 {
			off := s.rng.between(int64(StartOffsetMin), int64(StartOffsetMax))
			s.tx[t] = transmitter{armed: true, due: onGrid(start+clock.Time(off), s.interval(t))}
		}
	}
}

// setPhase moves the grid by phase: each armed transmitter's next Burst to
// the first point of its moved grid at or after its due time. The phase
// itself is the Conn's (Conn.phase), passed again to setRow.
func (s *sender) setPhase(phase clock.Time) {
	for t := range s.tx {
		if s.tx[t].armed {
			s.tx[t].due = onGridAt(s.tx[t].due, s.interval(t), phase)
		}
	}
}

// interval returns transmitter t's period in the current row.
func (s *sender) interval(t int) clock.Time {
	if t == 0 {
		return clock.Time(s.row.TxInterval1) * 1000
	}
	return clock.Time(s.row.TxInterval2) * 1000
}

// setRow adopts a new row. It takes effect at once: a transmitter that
// becomes active starts at the next point of its grid (within one period
// from now), one whose period shrank fires no later than that, one that
// stops is disarmed.
// (OB-UDPST waits for the next expiry of either transmitter; with row 0's
// 50 ms timer that delays the first real rate by up to 50 ms.)
func (s *sender) setRow(r SendingRate, now, phase clock.Time) {
	if r == s.row {
		return
	}
	s.row = r
	for t := range s.tx {
		iv := s.interval(t)
		next := onGridAt(now+1, iv, phase)
		switch {
		case iv == 0:
			s.tx[t].armed = false
		case !s.tx[t].armed:
			s.tx[t] = transmitter{armed: true, due: next}
		case s.tx[t].due > next:
			s.tx[t].due = next
		}
	}
}

// nextDue returns the earliest due time of an armed transmitter.
func (s *sender) nextDue() clock.Time {
	d := clock.Never
	for t := range s.tx {
		if s.tx[t].armed && s.tx[t].due < d {
			d = s.tx[t].due
		}
	}
	return d
}

// fire takes the Burst of the earliest transmitter due at or before now, if
// any. Bursts that fell more than the catch-up budget behind are skipped
// and counted; the latest missed one is always sent.
func (s *sender) fire(now clock.Time, stopping bool) (burst, bool) {
	t := -1
	for i := range s.tx {
		if s.tx[i].armed && s.tx[i].due <= now && (t < 0 || s.tx[i].due < s.tx[t].due) {
			t = i
		}
	}
	if t < 0 {
		return burst{}, false
	}
	iv := s.interval(t)
	tx := &s.tx[t]
	// (An armed transmitter has a period: init and setRow disarm one whose
	// row sets none.)
	if late := now - tx.due; late > s.budget {
		// Bursts due before now-budget are skipped, but never the most
		// recent one (the one due within the last period), which late/iv
		// Bursts precede.
		skip := min((late-s.budget+iv-1)/iv, late/iv)
		if skip > 0 {
			s.skippedBursts += uint32(skip)
			s.skippedDgrams += uint32(skip) * uint32(s.burstCount(t))
			tx.due += skip * iv
		}
	}
	b := s.burstOf(t, stopping)
	tx.due += iv
	return b, true
}

// burstOf returns transmitter t's Burst in the current row: sizes reduced
// by 20 bytes for an IPv6 peer, random sizes drawn once per firing, a single
// datagram while stopping.
func (s *sender) burstOf(t int, stopping bool) burst {
	var b burst
	payload, n, addon := s.fields(t)
	n = min(n, MaxBurst)
	if stopping {
		n = min(n, 1)
	}
	if n > 0 && payload != 0 {
		b.n = int(n)
		b.payload = s.size(payload)
	}
	if addon != 0 {
		b.addon = s.size(addon)
	}
	return b
}

// fields returns transmitter t's payload, burst size and add-on fields in
// the current row (transmitter 1 has no add-on).
func (s *sender) fields(t int) (payload, n, addon uint32) {
	if t == 0 {
		return s.row.UDPPayload1, s.row.BurstSize1, 0
	}
	return s.row.UDPPayload2, s.row.BurstSize2, s.row.UDPAddon2
}

// burstCount is how many datagrams transmitter t's Burst has in the current
// row, without drawing its random sizes (skipped Bursts are only counted).
func (s *sender) burstCount(t int) int {
	payload, n, addon := s.fields(t)
	c := 0
	if payload != 0 {
		c = int(min(n, MaxBurst))
	}
	if addon != 0 {
		c++
	}
	return c
}

func (b burst) count() int {
	if b.addon != 0 {
		return b.n + 1
	}
	return b.n
}

// size turns a row's payload field into the size of this firing. Sizes are
// kept between the Load PDU header and the largest jumbo payload: a client
// sends whatever rows its server gives it, and a row outside the table must
// not make it build datagrams it cannot hold.
func (s *sender) size(field uint32) uint16 {
	lo, hi := PayloadRange(field, s.ipv6)
	if s.sizeCap > 0 {
		hi = min(hi, s.sizeCap)
		lo = min(lo, hi)
	}
	v := hi
	if field&RandomSize != 0 && hi > lo {
		v = uint32(s.rng.between(int64(lo), int64(hi)))
	}
	return uint16(min(max(v, LoadHeaderLen), MaxJumboPayload))
}

// write puts the deferred datagrams (with fresh timestamps) and then the new
// Burst into buf, and remembers the plan. h carries what every Load PDU of
// the plan shares; write sets each one's SeqNo and UDPPayload. It returns
// the number written.
func (s *sender) write(buf *SendBuffer, b burst, h *LoadHeader) int {
	n := 0
	for i := 0; i < s.deferN; i++ {
		d := s.deferred[i]
		s.put(buf, n, d.seq, d.len, h)
		s.plan[n] = pendingDgram{seq: d.seq, len: d.len, older: true}
		n++
	}
	s.deferN = 0
	for i, cnt := 0, b.count(); i < cnt && n < MaxPlan; i++ {
		l := b.payload
		if i == b.n {
			l = b.addon
		}
		seq := s.nextSeq
		s.nextSeq++
		s.put(buf, n, seq, l, h)
		s.plan[n] = pendingDgram{seq: seq, len: l}
		n++
		s.planned++
	}
	s.planN = n
	buf.N = n
	buf.RandomFill = s.random
	return n
}

func (s *sender) put(buf *SendBuffer, i int, seq uint32, l uint16, h *LoadHeader) {
	h.SeqNo, h.UDPPayload = seq, l
	h.Encode(buf.slot(i))
	buf.Dgrams[i] = OutDatagram{HdrLen: LoadHeaderLen, Len: l}
}

// deferredBytes returns the UDP payload bytes waiting to be sent again.
func (s *sender) deferredBytes() int64 {
	var b int64
	for i := 0; i < s.deferN; i++ {
		b += int64(s.deferred[i].len)
	}
	return b
}

// sent records how many datagrams of the last plan the kernel accepted.
// The unsent tail is deferred to the next plan with its sequence numbers,
// so local backpressure never shows as loss at the receiver. A plan holds at
// most one earlier Burst's deferred datagrams: if some of those are still
// unsent, they are withheld and the newer Burst's datagrams take over their
// numbers (none of them left the host, so no number is reused on the wire).
// With -n (noRoll) the unsent datagrams are dropped and their numbers stay
// consumed, as OB-UDPST 8 did.
func (s *sender) sent(n int) {
	n = max(0, min(n, s.planN))
	s.delivered += uint64(n)
	if s.fragOn {
		s.fragTotal.dgrams += uint64(n)
		for i := range n {
			s.fragTotal.frag.add(&s.frag, uint32(s.plan[i].len))
		}
	}
	rest := s.plan[n:s.planN]
	s.planN = 0
	if len(rest) == 0 {
		return
	}
	if s.noRoll {
		s.withheldDgrams += uint32(len(rest))
		return
	}
	first := rest[0].seq
	olderUnsent := 0
	for _, d := range rest {
		if d.older {
			olderUnsent++
		}
	}
	if olderUnsent > 0 && olderUnsent < len(rest) {
		s.withheldDgrams += uint32(olderUnsent)
		rest = rest[olderUnsent:]
	}
	for i, d := range rest {
		s.deferred[i] = pendingDgram{seq: first + uint32(i), len: d.len}
	}
	s.deferN = len(rest)
	s.nextSeq = first + uint32(len(rest))
}

// takeCounters returns and resets the Sub-Interval's sender counters, gives
// the current row, and
// estimates the received datagrams' fragmentation from what was sent in
// the window (frag.go).
func (s *sender) takeCounters(r *SubIntervalResult) {
	r.SkippedBursts, r.SkippedDgrams, r.WithheldDgrams = s.skippedBursts, s.skippedDgrams, s.withheldDgrams
	r.SenderPlanned, r.SenderDelivered = s.planned, s.delivered
	r.SendRate, r.SendRateSet = s.row, true
	s.skippedBursts, s.skippedDgrams, s.withheldDgrams = 0, 0, 0
	s.planned, s.delivered = 0, 0
	if s.fragOn {
		// The receiver closed this Sub-Interval just after sending the
		// Status PDU before the one that reports it: what we sent between
		// the arrivals of that one and of the one that opened the
		// Sub-Interval is our side of it.
		w := fragCounts{
			pkts:  s.fragStatus.frag.pkts - s.fragStart.frag.pkts,
			bytes: s.fragStatus.frag.bytes - s.fragStart.frag.bytes,
		}
		f := w.scaled(uint64(r.Stats.RxDatagrams), s.fragStatus.dgrams-s.fragStart.dgrams)
		r.ExtraPackets, r.ExtraIPBytes, r.FragEstimated = f.pkts, f.bytes, true
		s.fragStart = s.fragStatus
	}
}

// fragStatusArrived notes a Status PDU's arrival for the fragmentation
// window, after its Sub-Interval (if any) was taken. The first one opens
// the window: the receiver's first Sub-Interval began when it sent its
// first Status PDU.
func (s *sender) fragStatusArrived() {
	if !s.fragOn {
		return
	}
	s.fragStatus = s.fragTotal
	if !s.fragOpen {
		s.fragStart, s.fragOpen = s.fragTotal, true
	}
}

// xorshift is a small fast generator (xorshift64*) for start offsets and
// random sizes; nothing here needs cryptographic quality.
type xorshift struct{ s uint64 }

func newXorshift(seed uint64) xorshift {
	if seed == 0 {
		seed = 0x9E3779B97F4A7C15
	}
	return xorshift{s: seed}
}

func (x *xorshift) next() uint64 {
	x.s ^= x.s >> 12
	x.s ^= x.s << 25
	x.s ^= x.s >> 27
	return x.s * 2685821657736338717
}

// between returns a uniform integer in [lo, hi].
func (x *xorshift) between(lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	return lo + int64(x.next()%uint64(hi-lo+1))
}
