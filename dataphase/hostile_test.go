package dataphase

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
)

// Unit tests of the Data Phase's defences against a hostile peer or path:
// the anti-amplification rule (amplification.go), policing on real
// lengths, sustained port unreachable, and the client's checks of what a
// server grants. The attacks on real processes are in
// e2e/hostile_data_test.go.

// taLen is what a Test Activation Request and its Response carry at protocol
// 20 (104 bytes each: control.ActivationLen), the budget's start in these
// tests.
const taLen = 104

var hostileStart = clock.Pair{Mono: 1e9, Wall: 1796009000e9}

func hostileParams(server, upstream bool, row uint16) Params {
	p := Params{
		Server: server, Upstream: upstream,
		TestIntTime: 10 * time.Second, TrialInt: 50 * time.Millisecond, SubIntPeriod: time.Second,
		LowThresh: 30, UpperThresh: 90, SeqErrThresh: 10, SlowAdjThresh: 3, HighSpeedDelta: 10,
		IgnoreOooDup: true, SRIndexConf: row, Seed: 3,
	}
	table := BuildRateTable(TableOptions{})
	if server {
		p.Table, p.PoliceOverRate = table, true
		p.PeerBytesIn, p.PeerBytesOut = taLen, taLen
	} else {
		p.InitialRate = table[0]
	}
	return p
}

// run drives c alone in virtual time from its start for d, in steps of
// step, giving it in (a batch maker, may be nil) before each Poll. It
// returns the UDP payload bytes and datagrams c sent.
type run struct {
	c             *Conn
	now           clock.Pair
	bytes, dgrams int
	sizes         []int
	events        []Event
	endAt         time.Duration
}

func newRun(c *Conn) *run { return &run{c: c, now: hostileStart} }

func (r *run) advance(d, step time.Duration, in func(at time.Duration, b *RecvBatch)) {
	var sb SendBuffer
	var rb RecvBatch
	end := r.now.Mono + clock.Time(d)
	for r.now.Mono < end && !r.c.Done() {
		at := time.Duration(r.now.Mono - hostileStart.Mono)
		if in != nil {
			rb.N, rb.Pair = 0, r.now
			in(at, &rb)
			if rb.N > 0 {
				r.c.Receive(&rb)
			}
		}
		for r.c.Poll(r.now, &sb) {
			for i := 0; i < sb.N; i++ {
				r.bytes += int(sb.Dgrams[i].Len)
				r.sizes = append(r.sizes, int(sb.Dgrams[i].Len))
			}
			r.dgrams += sb.N
			r.c.Sent(sb.N)
		}
		for _, ev := range r.c.Events() {
			r.events = append(r.events, ev)
			if ev.Kind == EvEnd {
				r.endAt = at
			}
		}
		r.now.Mono += clock.Time(step)
		r.now.Wall += int64(step)
	}
}

func (r *run) end() EndReason {
	for _, ev := range r.events {
		if ev.Kind == EvEnd {
			return ev.End
		}
	}
	return 0
}

func (r *run) counts() Counts {
	var a Counts
	for _, ev := range r.events {
		if ev.Kind == EvTrial || ev.Kind == EvEnd {
			a.Add(&ev.Counts)
		}
	}
	return a
}

// statusIn appends a Status PDU reporting count datagrams of bytes, with
// no clock (a forger's that does not know the shift).
func statusIn(b *RecvBatch, seq, count, bytes uint32, t clock.Time) {
	statusClockIn(b, seq, count, bytes, 0, 0, t)
}

// genuineStatusIn appends the Status PDU of a genuine Load Receiver of c on
// a path without delay whose clock is ours: its clockDeltaMin is c's shift,
// its spduTime the wall time now.
func genuineStatusIn(b *RecvBatch, c *Conn, seq, count, bytes uint32, now clock.Pair) {
	statusClockIn(b, seq, count, bytes, int32(c.amp.shiftMs), now.Wall, now.Mono)
}

// statusClockIn appends a Status PDU reporting count datagrams of bytes,
// clockDeltaMin cdm (ms) and spduTime spdu (wall ns).
func statusClockIn(b *RecvBatch, seq, count, bytes uint32, cdm int32, spdu int64, t clock.Time) {
	s := StatusPDU{SeqNo: seq, TiRxDatagrams: count, TiRxBytes: bytes, RTTMinimum: NoDelay, RTTVarSample: NoDelay,
		DelayVarMin: NoDelay, ClockDeltaMin: cdm}
	s.SpduTimeSec, s.SpduTimeNsec = clock.Split(spdu)
	n := s.Encode(b.Buf(b.N), false)
	b.Dgrams[b.N] = InDatagram{Len: n, Time: t}
	b.N++
}

// loadIn appends a Load PDU of real length l whose header claims claim,
// echoing spdu (wall ns, 0: none).
func loadIn(b *RecvBatch, seq uint32, l, claim int, spdu int64, t clock.Time) {
	h := LoadHeader{SeqNo: seq, UDPPayload: uint16(claim)}
	if spdu != 0 {
		h.SpduTimeSec, h.SpduTimeNsec = clock.Split(spdu)
	}
	h.Encode(b.Buf(b.N))
	b.Dgrams[b.N] = InDatagram{Len: l, Time: t}
	b.N++
}

// A forged Test Activation for a fixed row (srIndexConf 1000: 1 Gbit/s)
// and nobody answering: the Load Sender sends row 0 within 3x what it
// received, and gives up after 3 s. (Before this defence the server sent row 1000 for 3 s:
// 345 MB on the victim.)
func TestAmplificationForgedActivation(t *testing.T) {
	for _, row := range []uint16{1000, 0, AutoRateIndex} {
		p := hostileParams(true, false, row)
		if row == 0 {
			p.StartIndex = true
		}
		r := newRun(NewConn(p, hostileStart))
		r.advance(5*time.Second, 100*time.Microsecond, nil)
		budget := AmpFactor*taLen - taLen
		if r.bytes > budget || r.dgrams == 0 || r.dgrams > maxUnvalidated {
			t.Errorf("row %d: sent %d datagrams, %d bytes before any Status PDU; want 1..%d within %d bytes (%v)",
				row, r.dgrams, r.bytes, maxUnvalidated, budget, r.sizes)
		}
		if r.end() != EndUnverified || r.endAt < Watchdog-time.Millisecond || r.endAt > Watchdog+time.Millisecond {
			t.Errorf("row %d: ended %v at %v, want %v at %v", row, r.end(), r.endAt, EndUnverified, Watchdog)
		}
		t.Logf("row %d: %d datagrams %v, %d bytes to the victim for %d received", row, r.dgrams, r.sizes, r.bytes, taLen)
	}
}

// Forged Status PDUs (the keep-alive variant): reporting nothing proves
// nothing, so they only add to the budget (3x their size), and the test
// still ends at 3 s. (Before this defence: 1.75 GB in 15 s for 12 kB sent.)
func TestAmplificationForgedKeepAlive(t *testing.T) {
	r := newRun(NewConn(hostileParams(true, false, 1000), hostileStart))
	var sent, seq uint32
	r.advance(16*time.Second, 100*time.Microsecond, func(at time.Duration, b *RecvBatch) {
		if at > 0 && at%(250*time.Millisecond) == 0 {
			seq++
			statusIn(b, seq, 0, 0, r.now.Mono)
			sent += StatusLen
		}
	})
	received := taLen + int(sent)
	if r.bytes > AmpFactor*received-taLen || r.dgrams > maxUnvalidated {
		t.Errorf("sent %d datagrams, %d bytes for %d received", r.dgrams, r.bytes, received)
	}
	if r.end() != EndUnverified || r.endAt > Watchdog+time.Millisecond {
		t.Errorf("ended %v at %v", r.end(), r.endAt)
	}
	for _, l := range r.sizes {
		if l > DefaultPayload {
			t.Errorf("a %d-byte Load PDU before validation: not row 0", l)
		}
	}
	t.Logf("%d datagrams, %d bytes for %d bytes received (%.2fx)", r.dgrams, r.bytes, received, float64(r.bytes)/float64(received))
}

// Status PDUs that report Load PDUs that were never sent (a forger
// guessing) are dropped, and the second ends the test.
func TestAmplificationUnprovenStatus(t *testing.T) {
	r := newRun(NewConn(hostileParams(true, false, 1000), hostileStart))
	var seq uint32
	r.advance(2*time.Second, 100*time.Microsecond, func(at time.Duration, b *RecvBatch) {
		if at > 0 && at%(100*time.Millisecond) == 0 {
			seq++
			statusIn(b, seq, 1, 1500, r.now.Mono) // no Load PDU before validation is that large
		}
	})
	if r.end() != EndUnverified || r.endAt > 210*time.Millisecond {
		t.Errorf("ended %v at %v, want %v at 200 ms", r.end(), r.endAt, EndUnverified)
	}
	if a := r.counts(); a[CountStatusUnproven] != maxUnproven {
		t.Errorf("%d unproven Status PDUs counted, want %d", a[CountStatusUnproven], maxUnproven)
	}
}

// A genuine Load Receiver's first Status PDU reports what it got, which
// validates the peer: then the fixed row applies at once.
func TestAmplificationGenuinePeer(t *testing.T) {
	p := hostileParams(true, false, 1000)
	c := NewConn(p, hostileStart)
	r := newRun(c)
	r.advance(60*time.Millisecond, 100*time.Microsecond, nil)
	if r.dgrams == 0 {
		t.Fatal("no Load PDU in 60 ms")
	}
	// The receiver got all but the first (lost), and reports them.
	got, bytes := uint32(0), uint32(0)
	for _, l := range r.sizes[1:] {
		got++
		bytes += uint32(l)
	}
	if got == 0 {
		got, bytes = 1, uint32(r.sizes[0])
	}
	before := r.dgrams
	r.advance(100*time.Millisecond, 100*time.Microsecond, func(at time.Duration, b *RecvBatch) {
		if at == 60*time.Millisecond {
			genuineStatusIn(b, c, 1, got, bytes, r.now)
		}
	})
	if c.amp.on {
		t.Fatalf("not validated by a Status PDU of %d datagrams, %d bytes (sent %v)", got, bytes, r.sizes)
	}
	if c.snd.row != p.Table[1000] {
		t.Fatalf("after validation the row is %+v, want row 1000", c.snd.row)
	}
	// Row 1000 is 10 datagrams per 100 µs: about 1000 in 100 ms.
	if n := r.dgrams - before; n < 500 {
		t.Errorf("%d datagrams in the 100 ms after validation", n)
	}
}

// Upstream, the server's Status PDUs stay within 3x the Load PDUs it got
// until one echoes a Status PDU's send time.
func TestAmplificationUpstream(t *testing.T) {
	c := NewConn(hostileParams(true, true, AutoRateIndex), hostileStart)
	r := newRun(c)
	var seq uint32
	received := taLen
	// A forger trickles small Load PDUs: one of 52 bytes per 50 ms buys
	// 156 bytes of budget, less than a 204-byte Status PDU.
	r.advance(5*time.Second, 500*time.Microsecond, func(at time.Duration, b *RecvBatch) {
		if at%(50*time.Millisecond) == 0 {
			seq++
			loadIn(b, seq, 52, 52, 0, r.now.Mono)
			received += 52
		}
	})
	if r.bytes > AmpFactor*received-taLen {
		t.Errorf("sent %d bytes of Status PDUs for %d received", r.bytes, received)
	}
	if r.end() != EndUnverified {
		t.Errorf("ended %v", r.end())
	}
	if a := r.counts(); a[CountAmpHeld] == 0 {
		t.Errorf("no Status PDU held back: %+v", a)
	}

	// A genuine client echoes the Status PDU it got: validated.
	c = NewConn(hostileParams(true, true, AutoRateIndex), hostileStart)
	r = newRun(c)
	seq = 0
	r.advance(time.Second, 500*time.Microsecond, func(at time.Duration, b *RecvBatch) {
		if at%(5*time.Millisecond) == 0 {
			seq++
			loadIn(b, seq, 1222, 1222, c.statusWire, r.now.Mono)
		}
	})
	if c.amp.on || c.Done() {
		t.Errorf("not validated by echoes of its Status PDUs (done %v)", c.Done())
	}
}

// Policing counts what the socket received, not the Load PDUs' claims: an
// upstream client assigned row 0 that sends 1222-byte datagrams claiming 0
// bytes at about 98 Mbit/s is stopped at the third Trial Interval. Its
// PDUs are invalid (the claim is not the length), and still counted.
func TestPoliceRealLengths(t *testing.T) {
	c := NewConn(hostileParams(true, true, AutoRateIndex), hostileStart)
	r := newRun(c)
	var seq uint32
	r.advance(2*time.Second, 100*time.Microsecond, func(_ time.Duration, b *RecvBatch) {
		seq++
		loadIn(b, seq, 1222, 0, 0, r.now.Mono)
	})
	if r.end() != EndOverRate || r.endAt > 3*50*time.Millisecond+time.Millisecond {
		t.Errorf("ended %v at %v, want %v by 150 ms", r.end(), r.endAt, EndOverRate)
	}
	if a := r.counts(); a[CountLoadInvalidSize] == 0 {
		t.Errorf("lying Load PDUs not counted invalid: %+v", a)
	}
	var text string
	for _, ev := range r.events {
		if ev.Kind == EvWarning {
			text += ev.Text + "\n"
		}
	}
	if !strings.Contains(text, "Received invalid load PDU (1222,") || !strings.Contains(text, "above 1.5x") {
		t.Errorf("warnings:\n%s", text)
	}

	// The same sender telling the truth about its lengths is stopped just
	// as soon.
	c = NewConn(hostileParams(true, true, AutoRateIndex), hostileStart)
	r = newRun(c)
	seq = 0
	r.advance(2*time.Second, 100*time.Microsecond, func(_ time.Duration, b *RecvBatch) {
		seq++
		loadIn(b, seq, 1222, 1222, 0, r.now.Mono)
	})
	if r.end() != EndOverRate || r.endAt > 3*50*time.Millisecond+time.Millisecond {
		t.Errorf("honest claims: ended %v at %v", r.end(), r.endAt)
	}
}

// A Load PDU whose udpPayload is not its length is invalid, on either end.
func TestLoadClaimMismatchInvalid(t *testing.T) {
	c := NewConn(hostileParams(false, false, AutoRateIndex), hostileStart) // downstream client
	var b RecvBatch
	b.Pair = hostileStart
	loadIn(&b, 1, 1222, 1000, 0, hostileStart.Mono)
	loadIn(&b, 2, 1000, 1222, 0, hostileStart.Mono)
	loadIn(&b, 3, 1222, 1222, 0, hostileStart.Mono)
	c.Receive(&b)
	if c.counts[CountLoadInvalidSize] != 2 || c.rcv.last != 3 || c.rcv.trial.bytes != 1222 {
		t.Errorf("invalid %d, last %d, bytes %d", c.counts[CountLoadInvalidSize], c.rcv.last, c.rcv.trial.bytes)
	}
}

// Port unreachable several times in a row, with nothing from the peer in
// between, ends the test early; fewer, or a valid PDU in between, do not.
func TestPeerRefused(t *testing.T) {
	c := NewConn(hostileParams(false, false, AutoRateIndex), hostileStart)
	var b RecvBatch
	b.Pair = hostileStart
	c.PeerRefused(RefusedLimit - 1)
	loadIn(&b, 1, 1222, 1222, 0, hostileStart.Mono)
	c.Receive(&b)
	c.PeerRefused(RefusedLimit - 1)
	if c.Done() {
		t.Fatal("ended with a valid PDU between the refusals")
	}
	c.PeerRefused(1)
	evs := c.Events()
	if !c.Done() || evs[len(evs)-1].End != EndPeerGone || evs[len(evs)-1].Counts[CountPeerRefused] != 2*RefusedLimit-1 {
		t.Fatalf("after %d refusals in a row: done %v, events %+v", RefusedLimit, c.Done(), evs)
	}
	if w := evs[len(evs)-2]; w.Kind != EvWarning || !strings.Contains(w.Text, "port is unreachable") {
		t.Errorf("no warning before the end: %+v", w)
	}

	// A stopping server (here by a shutdown: Stop) takes a client gone
	// without confirming as the end it was heading for.
	s := NewConn(hostileParams(true, false, AutoRateIndex), hostileStart)
	s.Stop()
	s.PeerRefused(RefusedLimit)
	if evs := s.Events(); !s.Done() || evs[len(evs)-1].End != EndLocalStop {
		t.Errorf("stopping server: %+v", evs)
	}
}

func TestAmpGuardProves(t *testing.T) {
	var a ampGuard
	for _, l := range []uint16{60, 75, 99} {
		a.sentLoad(l)
	}
	for _, c := range []struct {
		count, bytes uint32
		want         bool
	}{
		{1, 60, true}, {1, 75, true}, {1, 99, true}, {2, 135, true}, {2, 174, true}, {3, 234, true},
		{0, 0, false}, {1, 61, false}, {2, 60, false}, {3, 233, false}, {4, 234, false}, {1, 135, false},
	} {
		if got := a.sizesMatch(c.count, c.bytes); got != c.want {
			t.Errorf("sizesMatch(%d, %d) = %v", c.count, c.bytes, got)
		}
	}
	// The cap: preProofMax while the budget holds it, else none (a
	// smaller cap would force the smallest size).
	a = ampGuard{in: taLen, out: taLen}
	if got := a.sizeCap(0); got != preProofMax {
		t.Errorf("cap %d with 208 left", got)
	}
	if got := a.sizeCap(1); got != preProofMax {
		t.Errorf("cap %d with one pending", got)
	}
	if got := a.sizeCap(2); got != 0 {
		t.Errorf("cap %d with two pending", got)
	}
	a.sentLoad(52) // takes 104 of the budget
	if got := a.sizeCap(1); got != 0 {
		t.Errorf("cap %d with one sent and one pending", got)
	}
}

func TestCheckGrant(t *testing.T) {
	asked := hostileParams(false, false, AutoRateIndex)
	asked.SRAdjSuppCount, asked.ECNCEThresh = 3, 10
	up := asked
	up.Upstream = true
	table := BuildRateTable(TableOptions{})
	for _, c := range []struct {
		name  string
		asked Params
		edit  func(*Params)
		field string // "" accepted
	}{
		{"as asked", asked, func(*Params) {}, ""},
		{"shorter test", asked, func(p *Params) { p.TestIntTime = 5 * time.Second }, ""},
		{"other trial interval in range", asked, func(p *Params) { p.TrialInt = 250 * time.Millisecond }, ""},
		{"no suppression, no ECN", asked, func(p *Params) { p.SRAdjSuppCount, p.ECNCEThresh = 0, 0 }, ""},
		{"upstream row 1000", up, func(p *Params) { p.InitialRate = table[1000] }, ""},
		{"trial interval 0", asked, func(p *Params) { p.TrialInt = 0 }, "trialInt"},
		{"trial interval 4 ms", asked, func(p *Params) { p.TrialInt = 4 * time.Millisecond }, "trialInt"},
		{"trial interval 251 ms", asked, func(p *Params) { p.TrialInt = 251 * time.Millisecond }, "trialInt"},
		{"test time 65535 s", asked, func(p *Params) { p.TestIntTime = 65535 * time.Second }, "testIntTime"},
		{"test time 11 s on 10", asked, func(p *Params) { p.TestIntTime = 11 * time.Second }, "testIntTime"},
		{"test time 0", asked, func(p *Params) { p.TestIntTime = 0 }, "testIntTime"},
		{"sub-interval 0", asked, func(p *Params) { p.SubIntPeriod = 0 }, "subIntPeriod"},
		{"sub-interval 99 ms", asked, func(p *Params) { p.SubIntPeriod = 99 * time.Millisecond }, "subIntPeriod"},
		{"sub-interval above the test", asked, func(p *Params) { p.TestIntTime, p.SubIntPeriod = 5*time.Second, 6*time.Second }, "subIntPeriod"},
		{"direction", asked, func(p *Params) { p.Upstream = true }, "cmdRequest"},
		{"more suppression", asked, func(p *Params) { p.SRAdjSuppCount = 4 }, "srAdjSuppCount"},
		{"other CE threshold", asked, func(p *Params) { p.ECNCEThresh = 11 }, "ecnCEThresh"},
		{"random payload not asked", asked, func(p *Params) { p.RandomPayload = true }, "modifierBitmap"},
		{"row period 1 µs", up, func(p *Params) { p.InitialRate = SendingRate{TxInterval1: 1, UDPPayload1: 1222, BurstSize1: 100} }, "srStruct"},
		{"row burst 1000", up, func(p *Params) { p.InitialRate = SendingRate{TxInterval1: 100, UDPPayload1: 1222, BurstSize1: 1000} }, "srStruct"},
	} {
		g := c.asked
		c.edit(&g)
		err := CheckGrant(c.asked, g)
		var ge *GrantError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.field != "" && !errors.As(err, &ge):
			t.Errorf("%s: accepted (%v)", c.name, err)
		case c.field != "" && ge.Field != c.field:
			t.Errorf("%s: %v, want a complaint about %s", c.name, err, c.field)
		case err != nil:
			t.Logf("%s: %v", c.name, err)
		}
	}
}

// Every row of every table variant is one a client takes; a Status PDU
// with a row no table holds is invalid at a client, which keeps its row.
func TestRowsValid(t *testing.T) {
	for _, o := range []TableOptions{{}, {NoJumbo: true}, {TraditionalMTU: true}, {NoJumbo: true, TraditionalMTU: true}} {
		for i, r := range BuildRateTable(o) {
			if !r.Valid() {
				t.Fatalf("%+v: row %d %+v not valid", o, i, r)
			}
		}
	}
	c := NewConn(hostileParams(false, true, AutoRateIndex), hostileStart) // upstream client
	before := c.snd.row
	var b RecvBatch
	b.Pair = hostileStart
	s := StatusPDU{SeqNo: 1, Rate: SendingRate{TxInterval1: 1, UDPPayload1: 1222, BurstSize1: 100}, RTTMinimum: NoDelay, RTTVarSample: NoDelay}
	b.Dgrams[0] = InDatagram{Len: s.Encode(b.Buf(0), false), Time: hostileStart.Mono}
	b.N = 1
	c.Receive(&b)
	if c.snd.row != before || c.counts[CountStatusInvalidFormat] != 1 {
		t.Errorf("row %+v taken (invalid %d)", c.snd.row, c.counts[CountStatusInvalidFormat])
	}
}

// The anti-amplification path allocates nothing per datagram: a server
// flooded with Status PDUs that prove nothing before validation.
func TestAmplificationAllocatesNothing(t *testing.T) {
	c := NewConn(hostileParams(true, false, 1000), hostileStart)
	var b RecvBatch
	b.Pair = hostileStart
	for i := 0; i < 64; i++ {
		statusIn(&b, uint32(i+1), 0, 0, hostileStart.Mono)
	}
	c.Receive(&b)
	c.Events()
	var sb SendBuffer
	if a := testing.AllocsPerRun(20, func() {
		c.Receive(&b)
		c.Poll(hostileStart, &sb)
		c.Events()
	}); a != 0 {
		t.Errorf("%.1f allocations per batch", a)
	}
}
