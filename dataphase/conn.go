package dataphase

import (
	"fmt"
	"time"

	"github.com/udpstp/udpstp/clock"
)

// Conn is the Data Phase of one Test Connection, sans-IO: it reads no clock,
// opens no socket and starts no goroutine. An executor drives it: Poll for
// the Send Plan due now, Sent with what the kernel accepted, Receive with
// what arrived, and a wait until Deadline. Events says what happened.
//
// One Conn is either the Load Sender (it sends Load PDUs and receives Status
// PDUs) or the Load Receiver (the reverse); the server also runs the rate
// adjustment, in both directions.
type Conn struct {
	p          Params
	loadSender bool
	periodMs   int64
	trialMs    int64
	maxSub     uint32

	snd sender
	rcv receiver
	rc  *RateControl

	start clock.Time

	// Stop handshake (wire.md 1.7).
	action      uint8     // the testAction our next PDU carries
	stopping    bool      // server: the test time is over; client: a stop was seen or decided
	stopCause   EndReason // server: why it is stopping, its end once the client confirms
	endedEarly  bool      // client: the server stopped before the test time (serverStopped)
	stopAt      clock.Time
	confirm     bool // client: send one PDU carrying action now, then end
	closeReason EndReason

	watchdogAt clock.Time

	// Traffic seen (no-traffic warning, rttRespDelay).
	lastRx        clock.Time
	lastRxSet     bool
	rxStopped     bool
	peerRxStopped bool

	// Load Receiver: the Status PDU timer.
	statusAt clock.Time

	// Load Sender: what the last Status PDU said.
	lastStatusSeq uint32
	spduSeqErr    uint16
	echoSec       uint32
	echoNsec      uint32
	lastSubSeq    uint32
	peerRTTSum    uint32
	peerRTTCnt    uint32

	// Server: over-rate policing of an upstream Load Sender, on what the
	// socket really received since polStart (wall ns): every datagram's
	// real length, valid or not.
	assigned  []float64 // nominal Mbps of the rows of the last policeWindow of Status PDUs
	nextSlot  int
	lastRow   int // the row whose rate is lastMbps; -1: none yet
	lastMbps  float64
	overCount int
	polStart  int64
	polBytes  uint64
	polDgrams uint64

	// Server: the anti-amplification rule (amplification.go), and the
	// Status PDU last written (its length, send time and the spduTime it
	// carried), for Sent.
	amp        ampGuard
	statusLen  int
	statusWall int64
	statusWire int64

	// Server, downstream: the rate adjustment's pace (adjustPace).
	adjustTAT clock.Time

	// ICMP port unreachable errors since the last valid PDU (PeerRefused).
	refused int

	// A client's plausibility rules (plausible.go).
	pl plausible

	counts        Counts // since the last event that carried them
	warnings      int
	localBleach   bool
	remoteBleach  bool
	subOut        uint32
	events        []Event
	done          bool
	statusScratch StatusPDU
	statusWide    [StatusLegacyLen]byte // a pre-11 Status PDU in the 168-byte form (statuspdu_legacy.go)
	phase         clock.Time            // the grid's phase (SetGridPhase), for Bursts and Status PDUs
}

// statusGrid is the grid of the Status PDUs' due times.
const statusGrid = clock.Time(time.Millisecond)

// SetGridPhase moves the grid this Test Connection's Bursts and Status PDUs
// fall due on (sender.go) by phase, 0 <= phase < 1 ms: an Engine Thread
// gives the Test Connections it serves different phases when it serves
// many, so that their sends of one instant do not all wait in one turn.
// Due times only move later, by less than a period, and the schedule keeps
// its periods. Call it before the first Poll.
func (c *Conn) SetGridPhase(phase clock.Time) {
	c.phase = phase
	if c.loadSender {
		c.snd.setPhase(phase)
	} else {
		c.statusAt = onGridAt(c.statusAt, statusGrid, phase)
	}
}

// NewConn starts a Data Phase at the activation instant now.
func NewConn(p Params, now clock.Pair) *Conn {
	c := &Conn{
		p:          p,
		loadSender: p.Upstream != p.Server,
		periodMs:   int64(p.SubIntPeriod / time.Millisecond),
		trialMs:    int64(p.TrialInt / time.Millisecond),
		start:      now.Mono,
		events:     make([]Event, 0, 16),
	}
	c.maxSub = p.MaxSubIntervals
	if c.maxSub == 0 && c.periodMs > 0 {
		c.maxSub = uint32(int64(p.TestIntTime/time.Millisecond) / c.periodMs)
	}
	if p.Server {
		c.rc = NewRateControl(&c.p)
		c.stopAt = now.Mono + clock.Time(p.TestIntTime+ServerStopExtra)
	} else {
		c.stopAt = now.Mono + clock.Time(p.TestIntTime+ClientStopExtra)
	}
	c.watchdogAt = now.Mono + clock.Time(Watchdog)
	c.amp.init(&c.p, now.Mono)
	c.pl.init(&c.p, now.Mono)
	c.lastRx, c.lastRxSet = now.Mono, true
	budget := p.CatchUpBudget
	if budget == 0 {
		budget = DefaultCatchUpBudget
	}
	frag := newFragPlan(p.PathMTU, p.IPv6)
	if c.loadSender {
		row := p.InitialRate
		switch {
		case c.amp.on:
			row = c.row(0) // until the peer shows it receives (amplification.go)
		case p.Server:
			row = c.row(c.rc.Index())
		}
		c.snd.ipv6, c.snd.random, c.snd.noRoll = p.IPv6, p.RandomPayload, p.NoSeqRollback
		c.snd.frag, c.snd.fragOn = frag, frag.unit > 0
		c.snd.init(row, now.Mono, clock.Time(budget), p.Seed)
	} else {
		c.rcv.init(now.Wall, p.ECNCEThresh, frag)
		// On the grid of whole milliseconds, as Bursts are (sender.go):
		// the Status PDUs of many Test Connections then share wake-ups.
		c.statusAt = onGrid(now.Mono+clock.Time(p.TrialInt), statusGrid)
		if p.Server && p.PoliceOverRate {
			n := 2
			if p.TrialInt > 0 {
				n = max(n, int(policeWindow/p.TrialInt))
			}
			c.assigned, c.lastRow = make([]float64, n), -1
			c.polStart = now.Wall
			c.noteAssigned()
		}
	}
	return c
}

func (c *Conn) row(i uint16) SendingRate {
	if int(i) < len(c.p.Table) {
		return c.p.Table[i]
	}
	return SendingRate{}
}

// rowMbps is the nominal L3 rate of row i.
func (c *Conn) rowMbps(i uint16) float64 {
	r := c.row(i)
	return r.L3Mbps(c.p.IPv6)
}

// LoadSender reports whether this end sends the load.
func (c *Conn) LoadSender() bool { return c.loadSender }

// Done reports that the Data Phase is over (its last event was EvEnd).
func (c *Conn) Done() bool { return c.done }

// Events returns the events since the last call and forgets them. The slice
// is reused: consume it before the next call into the Conn.
func (c *Conn) Events() []Event {
	ev := c.events
	c.events = c.events[:0]
	return ev
}

// Index returns the server's current sending rate row (-1 on a client).
func (c *Conn) Index() int {
	if c.rc == nil {
		return -1
	}
	return int(c.rc.Index())
}

// Deadline returns when the Conn next needs a turn without a receive.
func (c *Conn) Deadline() clock.Time {
	if c.done {
		return clock.Never
	}
	if c.confirm {
		return c.start // at once
	}
	d := min(c.watchdogAt, c.stopAt)
	if c.amp.on {
		d = min(d, c.amp.deadline)
	}
	if c.loadSender {
		d = min(d, c.snd.nextDue())
	} else {
		d = min(d, c.statusAt)
	}
	return d
}

// Stop ends the Data Phase from this side: a server starts the stop
// handshake at once (clients get a clean end), a client tells the server
// with its next PDU (testAction 1, as its own safety stop does) and ends.
func (c *Conn) Stop() {
	if c.done {
		return
	}
	if c.p.Server {
		if !c.stopping {
			c.stopping, c.stopCause = true, EndLocalStop
			c.stopAt = clock.Never
		}
		return
	}
	if c.action == ActionTest {
		c.action = ActionStop1
	}
	c.confirm, c.closeReason = true, EndLocalStop
}

// Fail ends the Data Phase at once after an error its executor cannot
// recover from.
func (c *Conn) Fail(err error) {
	if c.done {
		return
	}
	c.warn(0, fmt.Sprintf("ERROR: %v", err), true)
	c.end(EndFailure)
}

func (c *Conn) end(r EndReason) {
	if c.done {
		return
	}
	c.done = true
	if c.pl.unsaid() {
		c.implausibleWarning()
	}
	c.events = append(c.events, Event{Kind: EvEnd, End: r, Counts: c.counts})
	c.counts = Counts{}
}

// canWarn reports whether a warning would be shown: OB-UDPST shows at most
// 10 per Test Connection and, except for invalid PDUs, only while the test
// runs. Callers ask before they format its text, so a flood of bad
// datagrams costs no allocation.
func (c *Conn) canWarn(always bool) bool {
	return c.warnings < MaxWarnings && (always || (c.action == ActionTest && !c.stopping))
}

// warn records a warning event if canWarn allows it. Code 0 is our own
// error that ends the Test Connection (a socket failure, a policed or
// unverified peer): one per Test Connection at most, so it always goes
// out, however many warnings came before.
func (c *Conn) warn(code uint8, text string, always bool) {
	if code != 0 && !c.canWarn(always) {
		return
	}
	c.warnings++
	c.events = append(c.events, Event{Kind: EvWarning, Code: code, Text: text})
}

// timers runs what is due at now that is not a transmission.
func (c *Conn) timers(now clock.Time) {
	if c.amp.on && now >= c.amp.deadline {
		c.warn(0, "ERROR: Peer never confirmed receipt of what was sent to it (forged activation?)", true)
		c.end(EndUnverified)
		return
	}
	if now >= c.watchdogAt {
		if c.stopping && c.p.Server {
			// The server stopped (the test time was over, or a
			// shutdown); only the confirmation was lost.
			c.end(c.stopCause)
		} else {
			c.end(EndWatchdog)
		}
		return
	}
	if now >= c.stopAt && !c.stopping && c.action == ActionTest {
		if c.p.Server {
			c.stopping, c.stopCause = true, EndStopped
		} else {
			// The server never said stop: end on our own, telling it.
			c.action = ActionStop1
			c.confirm, c.closeReason = true, EndStopped
		}
		c.stopAt = clock.Never
	}
}

// trafficCheck runs before each own transmission: after a whole second
// without a valid PDU our PDUs say rxStopped and a warning is raised once,
// until traffic resumes.
func (c *Conn) trafficCheck(now clock.Time) {
	if !c.lastRxSet {
		return
	}
	if now-c.lastRx >= clock.Time(WarnNoTraffic) {
		c.rxStopped = true
		c.lastRxSet = false
		c.counts[CountLocalTrafficStop]++
		c.warn(4, "LOCAL WARNING: Incoming traffic has completely stopped", false)
		return
	}
	c.rxStopped = false
}

// respDelay is the rttRespDelay of a PDU sent at now: ms since the last
// valid PDU arrived, 0 once the traffic-stopped check cleared it.
func (c *Conn) respDelay(now clock.Time) uint16 {
	if !c.lastRxSet {
		return 0
	}
	return uint16(roundMs(int64(now - c.lastRx)))
}

// Poll writes the Send Plan due at now into b and reports whether there is
// one.
func (c *Conn) Poll(now clock.Pair, b *SendBuffer) bool {
	b.N = 0
	if c.done {
		return false
	}
	c.timers(now.Mono)
	if c.done {
		return false
	}
	if c.loadSender {
		return c.pollLoad(now, b)
	}
	return c.pollStatus(now, b)
}

func (c *Conn) pollLoad(now clock.Pair, b *SendBuffer) bool {
	var bu burst
	switch {
	case c.confirm:
		// One datagram carrying the stop action (OB-UDPST: a Burst of
		// size 1), then the end.
		bu = c.confirmBurst()
	default:
		var ok bool
		if c.amp.on {
			pending := c.snd.deferredBytes()
			c.snd.sizeCap = c.amp.sizeCap(c.snd.deferN)
			bu, ok = c.snd.fire(now.Mono, c.stopping)
			if ok && bu.count() > 0 && !c.ampFits(bu, pending) {
				c.counts[CountAmpHeld]++
				bu = burst{} // the firing passes: the budget is spent
			}
		} else {
			bu, ok = c.snd.fire(now.Mono, c.stopping)
		}
		if (!ok || bu.count() == 0) && c.snd.deferN == 0 {
			return false
		}
	}
	if c.stopping && c.p.Server {
		c.action = ActionStop2
	}
	c.trafficCheck(now.Mono)
	c.pl.sample(now.Mono)
	h := LoadHeader{
		TestAction:   c.action,
		SpduSeqErr:   c.spduSeqErr,
		SpduTimeSec:  c.echoSec,
		SpduTimeNsec: c.echoNsec,
		RTTRespDelay: c.respDelay(now.Mono),
	}
	if c.rxStopped {
		h.RxStopped = 1
	}
	lpdu := now.Wall
	if c.amp.shifting() {
		lpdu -= c.amp.shiftNs // the clock proof's secret (amplification.go)
	}
	h.LpduTimeSec, h.LpduTimeNsec = clock.Split(lpdu)
	n := c.snd.write(b, bu, &h)
	if c.confirm {
		c.confirm = false
		c.end(c.closeReason)
	}
	return n > 0
}

// ampFits reports whether Burst bu may go before validation, with pending
// bytes deferred from an earlier plan (amplification.go).
func (c *Conn) ampFits(bu burst, pending int64) bool {
	if c.snd.sizeCap == 0 || c.amp.nSizes+c.snd.deferN+bu.count() > maxUnvalidated {
		return false
	}
	b := pending + int64(bu.n)*int64(bu.payload)
	if bu.addon != 0 {
		b += int64(bu.addon)
	}
	return b <= c.amp.budget()
}

// confirmBurst is the one datagram that carries a client's stop action.
func (c *Conn) confirmBurst() burst {
	for t := range c.snd.tx {
		if c.snd.interval(t) > 0 {
			if bu := c.snd.burstOf(t, true); bu.count() > 0 {
				return bu
			}
		}
	}
	return burst{n: 1, payload: DefaultPayload}
}

func (c *Conn) pollStatus(now clock.Pair, b *SendBuffer) bool {
	if !c.confirm && now.Mono < c.statusAt {
		return false
	}
	if !c.confirm {
		// One Trial Interval after the last, on its grid; after a stall,
		// the next one from now (OB-UDPST reschedules from when it ran,
		// so its Status PDUs drift later by its lateness each time).
		c.statusAt += clock.Time(c.p.TrialInt)
		if c.statusAt <= now.Mono {
			c.statusAt = onGridAt(now.Mono+clock.Time(c.p.TrialInt), statusGrid, c.phase)
		}
		if c.p.Server && c.p.PoliceOverRate && !c.stopping {
			// Every Trial Interval, whether a Status PDU goes or not: a
			// sender whose every PDU is invalid is policed too.
			c.police(now.Wall)
			if c.done {
				return false
			}
		}
		if c.rcv.last == 0 {
			// No Status PDU before the first Load PDU; no number used.
			return false
		}
		if c.amp.on && c.amp.budget() < int64(StatusLenProto(c.p.proto())) {
			c.counts[CountAmpHeld]++
			return false // the budget is spent; the next Load PDUs refill it
		}
	}
	s := &c.statusScratch
	fb := c.rcv.feedback()
	if c.p.Server {
		c.adjustUpstream(now, fb)
		if c.done {
			return false
		}
		if c.stopping {
			// Our stop goes in every Status PDU until the client
			// confirms. OB-UDPST sends it once and relies on its watchdog
			// if it is lost; repeating it costs nothing and ends the test
			// on time on a lossy path.
			c.action = ActionStop2
		}
	}
	c.trafficCheck(now.Mono)
	c.rcv.buildStatus(s, now.Wall)
	s.TestAction = c.action
	if c.rxStopped {
		s.RxStopped = 1
	}
	if c.p.Server {
		s.Rate = c.row(c.rc.Index())
	}
	if !c.p.Legacy {
		s.AuthMode = c.p.AuthMode
	}
	c.statusWall = now.Wall
	if c.amp.on {
		// Secret nanoseconds until the peer echoes one (amplification.go).
		c.statusWire = c.amp.statusTime(now.Wall)
		s.SpduTimeSec, s.SpduTimeNsec = clock.Split(c.statusWire)
	}
	n := s.EncodeProto(b.slot(0), c.p.proto())
	b.Dgrams[0] = OutDatagram{HdrLen: uint16(n), Len: uint16(n)}
	c.statusLen = n
	c.pl.statusSent(clock.Join(s.SpduTimeSec, s.SpduTimeNsec))
	b.N, b.RandomFill = 1, false
	if c.rcv.bleach && !c.localBleach {
		c.localBleach = true
		c.warn(7, "LOCAL WARNING: Incoming ECN bleaching detected", false)
	}
	c.trialEvent(fb, s, true)
	if s.DelayMinUpd != 0 && s.RTTMinimum != NoDelay {
		c.events = append(c.events, Event{Kind: EvMinimum, ClockDeltaMin: s.ClockDeltaMin, RTTMinimum: s.RTTMinimum})
	}
	if r, ok := c.rcv.closeSubInterval(now.Wall, c.periodMs, c.trialMs); ok {
		c.subInterval(r)
	}
	if c.confirm {
		c.confirm = false
		c.end(c.closeReason)
	}
	return true
}

// adjustUpstream runs the server's rate adjustment just before it sends a
// Status PDU, and polices the client's rate. fb is the Trial Interval the
// Status PDU reports.
func (c *Conn) adjustUpstream(now clock.Pair, fb TrialFeedback) {
	if c.stopping {
		return
	}
	c.rc.Adjust(fb, c.rcv.subSeq)
	c.noteAssigned()
}

// policeWindow is how far back the rows a Load Sender was assigned count
// when the server polices it: datagrams sent under a higher row are still
// arriving after a rate cut for a round trip and a queue's worth of time, a
// second and more on a congested upload link with a deep buffer.
const policeWindow = 2 * time.Second

// noteAssigned records the row the next Status PDU assigns (its rate is
// recomputed only when the row changes).
func (c *Conn) noteAssigned() {
	if c.assigned == nil {
		return
	}
	if i := int(c.rc.Index()); i != c.lastRow {
		c.lastRow, c.lastMbps = i, c.rowMbps(uint16(i))
	}
	c.assigned[c.nextSlot] = c.lastMbps
	c.nextSlot = (c.nextSlot + 1) % len(c.assigned)
}

// police stops a Load Sender that runs above 1.5 times its assigned rate
// for 3 Trial Intervals in a row (ADR: the server polices the rate it
// assigns). The assigned rate is the highest row of the last policeWindow
// of Status PDUs; two jumbo datagrams of slack keep row 0's random sizes
// from tripping it. What counts is what the socket really received: every
// datagram since the last Trial Interval, valid or not, at its real
// length (recvmmsg's, not the Load PDU's udpPayload claim, which a sender
// may set to anything: an upstream client assigned 0.11 Mbps sent 94 for
// a whole test by claiming 0).
func (c *Conn) police(nowWall int64) {
	us := roundUs(nowWall - c.polStart)
	if us <= 0 {
		return
	}
	bytes, dgrams := c.polBytes, c.polDgrams
	c.polStart, c.polBytes, c.polDgrams = nowWall, 0, 0
	bits := float64((bytes+dgrams*uint64(L3Overhead(c.p.IPv6)))*8) / float64(us) // Mbps
	assigned := 0.0
	for _, m := range c.assigned {
		assigned = max(assigned, m)
	}
	slack := float64(2*9000*8) / float64(us)
	if bits > 1.5*assigned+slack {
		c.overCount++
	} else {
		c.overCount = 0
	}
	if c.overCount >= 3 {
		c.warn(0, fmt.Sprintf("ERROR: Load sender above 1.5x its assigned rate (%.2f Mbps received, %.2f assigned) for 3 trial intervals", bits, assigned), true)
		c.end(EndOverRate)
	}
}

func (c *Conn) trialEvent(fb TrialFeedback, s *StatusPDU, sent bool) {
	t := TrialInfo{
		Loss: fb.Loss, Ooo: fb.Ooo, Dup: fb.Dup, CE: fb.CE,
		DelayVarMin: s.DelayVarMin, DelayVarMax: s.DelayVarMax,
		DelayVarAvg:  avgRound(s.DelayVarSum, s.DelayVarCnt),
		RTTVarSample: s.RTTVarSample,
		Datagrams:    s.TiRxDatagrams, Bytes: s.TiRxBytes, DeltaTimeUs: s.TiDeltaTime,
		Index: c.Index(), Sent: sent,
	}
	if c.loadSender {
		t.SendRate, t.SendRateSet = c.snd.row, true
	}
	// The Status PDU's figures: what we received in its Trial Interval
	// (ours) or what the peer received of our load (the peer's).
	ip := uint64(t.Bytes) + uint64(t.Datagrams)*uint64(L3Overhead(c.p.IPv6))
	k := &c.counts
	if sent {
		k[CountStatusSent]++
		k[CountRxDatagrams] += uint64(t.Datagrams)
		k[CountRxIPBytes] += ip
		k[CountRxLoss] += uint64(t.Loss)
		k[CountRxOooDup] += uint64(t.Ooo) + uint64(t.Dup)
	} else {
		k[CountStatusReceived]++
		k[CountTxDatagrams] += uint64(t.Datagrams)
		k[CountTxIPBytes] += ip
		k[CountTxLoss] += uint64(t.Loss)
		k[CountTxOooDup] += uint64(t.Ooo) + uint64(t.Dup)
	}
	c.events = append(c.events, Event{Kind: EvTrial, Trial: t, Counts: c.counts})
	c.counts = Counts{}
}

func (c *Conn) subInterval(r SubIntervalResult) {
	if c.subOut >= c.maxSub {
		return
	}
	c.subOut++
	if c.loadSender {
		c.snd.takeCounters(&r)
		k := &c.counts
		k[CountSkippedBursts] += uint64(r.SkippedBursts)
		k[CountSkippedDatagrams] += uint64(r.SkippedDgrams)
		k[CountWithheldDatagrams] += uint64(r.WithheldDgrams)
	}
	c.events = append(c.events, Event{Kind: EvSubInterval, SubInt: r})
}

// Sent reports how many datagrams of the last plan the kernel accepted.
func (c *Conn) Sent(n int) {
	if c.amp.on && n > 0 {
		if c.loadSender {
			for i := 0; i < min(n, c.snd.planN); i++ {
				c.amp.sentLoad(c.snd.plan[i].len)
			}
		} else {
			c.amp.sentStatus(c.statusLen, c.statusWire, c.statusWall)
		}
	}
	if c.loadSender {
		if c.pl.on {
			for i := 0; i < min(n, c.snd.planN); i++ {
				c.pl.sent(c.snd.plan[i].len)
			}
		}
		c.snd.sent(n)
	}
}

// RefusedLimit is how many ICMP port unreachable errors in a row, with no
// valid PDU from the peer in between, end a Test Connection early
// (EndPeerGone): nothing listens there any more (the peer exited or was
// killed), so there is no point waiting for the 3 s watchdog, and a
// server stops sending to an address that refuses it. One refusal alone
// proves nothing (an old datagram after a NAT rebinding, a restart).
const RefusedLimit = 3

// PeerRefused tells the core that its socket reported n ICMP port
// unreachable errors (the executor calls it; engine.RefusalSink).
func (c *Conn) PeerRefused(n int) {
	if c.done || n <= 0 {
		return
	}
	c.counts[CountPeerRefused] += uint64(n)
	c.refused += n
	if c.refused < RefusedLimit {
		return
	}
	if c.p.Server && c.stopping {
		// The server was stopping (its end time, or a shutdown); the
		// client left before confirming.
		c.end(c.stopCause)
		return
	}
	c.warn(0, fmt.Sprintf("ERROR: Test Connection ended early: the peer's port is unreachable (%d ICMP port unreachable, nothing received in between)", c.refused), true)
	c.end(EndPeerGone)
}

// Receive takes a batch of datagrams read from the Test Connection's socket.
func (c *Conn) Receive(b *RecvBatch) {
	for i := 0; i < b.N && !c.done; i++ {
		d := &b.Dgrams[i]
		if c.amp.on {
			c.amp.in += int64(d.Len)
		}
		if c.assigned != nil {
			c.polBytes += uint64(d.Len)
			c.polDgrams++
		}
		if c.loadSender {
			c.onStatus(b.Data(i), d, b.Pair)
		} else {
			c.onLoad(b.Data(i), d, b.Pair)
		}
	}
}

func (c *Conn) onLoad(data []byte, d *InDatagram, pair clock.Pair) {
	var h LoadHeader
	if err := h.DecodeProto(data, c.p.proto()); err != nil {
		c.invalid("load", err, data, d.Len)
		return
	}
	if int(h.UDPPayload) != d.Len {
		// OB-UDPST counts the claim without comparing it (wire.md 6.6):
		// its senders always write the real length (each datagram's size,
		// GSO segments included; wire.md), so
		// a mismatch is a broken or lying sender, and its PDU is invalid
		// here, counted as a size error. Nothing that interoperates sends
		// one; a lying sender's datagrams still count for policing.
		c.invalid("load", errLoadLength, data, d.Len)
		return
	}
	if c.amp.nEcho > 0 {
		// An echo of a Status PDU sent before validation: the peer got
		// it. Its secret nanoseconds map back to the true send time for
		// the round-trip time.
		if t, ok := c.amp.echoed(clock.Join(h.SpduTimeSec, h.SpduTimeNsec)); ok {
			c.amp.on = false
			h.SpduTimeSec, h.SpduTimeNsec = clock.Split(t)
		}
	}
	if c.p.Server {
		if h.TestAction != ActionTest {
			// The client's confirmation, or its own stop: done.
			c.end(c.peerStopped())
			return
		}
		if !c.stopping {
			c.watchdogAt = d.Time + clock.Time(Watchdog)
		}
	} else {
		if c.action != ActionTest || c.confirm {
			return // stopping: further Load PDUs are ignored
		}
		if h.TestAction != ActionTest {
			c.serverStopped(d.Time)
			c.action = h.TestAction
			c.confirm, c.closeReason = true, EndStopped
			return
		}
		if why := c.pl.load(&h, d.Time, c.rcv.last, c.rcv.lastEcho); why != implOK {
			c.implausible(why) // no sign of life either
			return
		}
		c.watchdogAt = d.Time + clock.Time(Watchdog)
	}
	c.seen(d.Time, h.RxStopped)
	if e := c.rcv.onLoad(&h, pair.WallAt(d.Time), d.TOS, d.HasTOS); e != 0 {
		c.counts[CountRemoteStatusLoss] += uint64(e)
		if c.canWarn(false) {
			c.warn(3, "REMOTE WARNING: Incoming status feedback messages lost ("+seqErrText(e)+")", false)
		}
	}
}

// peerStopped is a server's end when the client's PDU carries a stop: its
// confirmation of the server's own stop ends the test as the server meant
// (the end time, or a shutdown); a stop before the server said one is the
// client's (its interrupt or safety stop) or a forged one, which the log
// and the counters must not call "end time reached".
func (c *Conn) peerStopped() EndReason {
	if c.stopping {
		return c.stopCause
	}
	return EndPeerStop
}

// WarnEndedEarly is the client's warning code for a test the server
// stopped before its time (ours: OB-UDPST's warnings take 1 to 8 of the
// 1..49 range, and its client reports such a test as complete).
const WarnEndedEarly = 9

// serverStopped checks the time of the server's stop, seen at t. A server
// stops testIntTime + 500 ms after it activated the test; a stop that
// arrives before testIntTime has passed on our clock (delays on the path
// only make it later) means the server cut the test short: a stop, a
// signal, a restart, or a forged stop. The results so far stand, with a
// warning that says so; it is not subject to the cap on warnings, as it
// comes once and decides how the result must be read.
func (c *Conn) serverStopped(t clock.Time) {
	ran := time.Duration(t - c.start)
	if ran >= c.p.TestIntTime || c.endedEarly {
		return
	}
	c.endedEarly = true
	c.events = append(c.events, Event{Kind: EvWarning, Code: WarnEndedEarly,
		Text: fmt.Sprintf("WARNING: Test ended early by the server after %.1f of %d s", ran.Seconds(), int(c.p.TestIntTime/time.Second))})
}

// seen records a valid PDU's arrival and the peer's rxStopped flag.
func (c *Conn) seen(t clock.Time, peerRxStopped uint8) {
	c.lastRx, c.lastRxSet = t, true
	c.refused = 0
	stopped := peerRxStopped == 1
	if stopped && !c.peerRxStopped {
		c.counts[CountRemoteTrafficStop]++
		c.warn(5, "REMOTE WARNING: Incoming traffic has completely stopped", false)
	}
	c.peerRxStopped = stopped
}

func seqErrText(n uint16) string {
	if n == SpduSeqErrOoO {
		return "OoO/Dup"
	}
	return fmt.Sprint(n)
}

func (c *Conn) onStatus(data []byte, d *InDatagram, pair clock.Pair) {
	s := &c.statusScratch
	if err := s.DecodeProto(data, c.p.proto(), &c.statusWide); err != nil {
		c.invalid("status", err, data, d.Len)
		return
	}
	if c.amp.on {
		switch {
		case c.amp.proves(s, pair.WallAt(d.Time)):
			// Validated: the normal rates apply from this Status PDU's
			// rate adjustment on.
			c.amp.on, c.snd.sizeCap = false, 0
		case s.TiRxDatagrams > 0:
			// It reports Load PDUs we never sent, or a clock that does
			// not know the shift: forged, or not ours.
			c.counts[CountStatusUnproven]++
			c.amp.unproven++
			if c.amp.unproven >= maxUnproven {
				c.warn(0, fmt.Sprintf("ERROR: %d Status PDUs failed the proof of receipt (forged activation?)", c.amp.unproven), true)
				c.end(EndUnverified)
			}
			return
		}
		// Reporting none proves nothing: a sign of life only (below, no
		// rate adjustment).
	}
	if !c.p.Server && !s.Rate.Valid() {
		// A row no table holds would make us send as fast as we can.
		c.invalid("status", errStatusRate, data, d.Len)
		return
	}
	if why := c.pl.status(s, d.Time, s.SubIntSeqNo > c.lastSubSeq, c.snd.nextSeq-1); why != implOK {
		c.implausible(why)
		return
	}
	stop := s.TestAction != ActionTest
	if !c.p.Server {
		if c.action != ActionTest || c.confirm {
			return
		}
		if stop {
			c.serverStopped(d.Time)
			c.action = s.TestAction
			c.confirm, c.closeReason = true, EndStopped
		}
	}
	if !stop && !c.stopping {
		c.watchdogAt = d.Time + clock.Time(Watchdog)
	}
	c.seen(d.Time, s.RxStopped)

	// Status PDU sequence: a gap is loss, a step back reordering.
	switch {
	case s.SeqNo >= c.lastStatusSeq+1:
		gap := s.SeqNo - c.lastStatusSeq - 1
		c.spduSeqErr = uint16(min(gap, SpduSeqErrOoO-1))
		c.lastStatusSeq = s.SeqNo
	default:
		c.spduSeqErr = SpduSeqErrOoO
	}
	if c.spduSeqErr != 0 {
		c.counts[CountLocalStatusLoss] += uint64(c.spduSeqErr)
		if c.canWarn(false) {
			c.warn(2, "LOCAL WARNING: Incoming status feedback messages lost ("+seqErrText(c.spduSeqErr)+")", false)
		}
	}
	c.echoSec, c.echoNsec = s.SpduTimeSec, s.SpduTimeNsec
	if s.RTTVarSample != NoDelay {
		c.peerRTTSum += s.RTTVarSample
		c.peerRTTCnt++
	}
	if c.p.ECNCEThresh > 0 && s.ECNFlags&ECNFlagBleached != 0 && !c.remoteBleach {
		c.remoteBleach = true
		c.warn(8, "REMOTE WARNING: Incoming ECN bleaching detected", false)
	}
	fb := TrialFeedback{
		Loss: s.SeqErrLoss, Ooo: s.SeqErrOoo, Dup: s.SeqErrDup,
		DelayVarSum: s.DelayVarSum, DelayVarCnt: s.DelayVarCnt,
		RTTVarSample: s.RTTVarSample, Datagrams: s.TiRxDatagrams, CE: s.TiRxCECount,
	}
	if !c.p.Server && !stop {
		c.snd.setRow(s.Rate, pair.Mono, c.phase)
	}
	if s.DelayMinUpd != 0 && s.RTTMinimum != NoDelay {
		c.events = append(c.events, Event{Kind: EvMinimum, ClockDeltaMin: s.ClockDeltaMin, RTTMinimum: s.RTTMinimum})
	}
	// Only a newer Sub-Interval counts: a reordered Status PDU must not
	// report one again. (OB-UDPST compares for inequality.)
	if s.SubIntSeqNo > c.lastSubSeq {
		c.lastSubSeq = s.SubIntSeqNo
		r := SubIntervalResult{
			Seq:           s.SubIntSeqNo,
			Stats:         s.SubInt,
			CECount:       s.SisSavCECount,
			ClockDeltaMin: s.ClockDeltaMin,
			ClockDeltaSet: true,
			RTTMinimum:    s.RTTMinimum,
			RTTSum:        c.peerRTTSum,
			RTTCnt:        c.peerRTTCnt,
			Bleached:      s.ECNFlags&ECNFlagBleached != 0,
			Wall:          pair.WallAt(d.Time),
		}
		c.peerRTTSum, c.peerRTTCnt = 0, 0
		c.subInterval(r)
	}
	c.snd.fragStatusArrived()
	if c.p.Server {
		if stop {
			c.end(c.peerStopped())
			return
		}
		if !c.stopping && !c.amp.on && c.adjustPace(d.Time) {
			c.rc.Adjust(fb, s.SubIntSeqNo)
			c.snd.setRow(c.row(c.rc.Index()), pair.Mono, c.phase)
		}
	}
	c.trialEvent(fb, s, false)
}

// adjustBurst is how many Status PDUs ahead of one per Trial Interval may
// still move the rate: a genuine Load Receiver's, delayed and bunched by its
// path, all count.
const adjustBurst = 4

// adjustPace reports whether the Status PDU received at t may run the rate
// adjustment: at most one per Trial Interval on average, after a burst of
// adjustBurst (a GCRA, RFC 2697's token bucket in one variable), so that
// forged feedback from a validated address, however fast it comes, moves
// the rate no faster than a real client's search. The rest count as
// CountStatusRateHeld and still feed the watchdog and the report.
func (c *Conn) adjustPace(t clock.Time) bool {
	ti := clock.Time(c.p.TrialInt)
	if ti <= 0 {
		return true
	}
	if c.adjustTAT-t > ti*(adjustBurst-1) {
		c.counts[CountStatusRateHeld]++
		return false
	}
	c.adjustTAT = max(c.adjustTAT, t) + ti
	return true
}

// invalid counts a datagram that is not a valid PDU for this end, by what
// failed, with OB-UDPST's warning line (at most MaxWarnings per Test
// Connection).
func (c *Conn) invalid(kind string, err error, data []byte, n int) {
	field := ""
	if pe, ok := err.(*PDUError); ok {
		field = pe.Field
	}
	load := kind == "load"
	switch {
	case field == "length" && load:
		c.counts[CountLoadInvalidSize]++
	case field == "length":
		c.counts[CountStatusInvalidSize]++
	case field == "checkSum" && load:
		c.counts[CountLoadInvalidChecksum]++
	case field == "checkSum":
		c.counts[CountStatusInvalidChecksum]++
	case load:
		c.counts[CountLoadInvalidFormat]++
	default:
		c.counts[CountStatusInvalidFormat]++
	}
	if !c.canWarn(true) {
		return
	}
	var id, ck uint16
	var action, flag uint8
	if len(data) >= 4 {
		id = uint16(data[0])<<8 | uint16(data[1])
		action, flag = data[2], data[3]
	}
	switch {
	case load && len(data) >= LoadHeaderLen:
		ck = uint16(data[30])<<8 | uint16(data[31])
	case !load && len(data) >= StatusLegacyLen:
		off := statusOffNominalCk
		if c.p.Legacy {
			off = statusOffLegacyCk
		}
		if len(data) > off+1 {
			ck = uint16(data[off])<<8 | uint16(data[off+1])
		}
	}
	c.warn(6, fmt.Sprintf("WARNING: Received invalid %s PDU (%d,0x%04X:0x%02X:0x%02X,0x%04X)", kind, n, id, action, flag, ck), true)
}

// WarnImplausible is the client's warning code for PDUs dropped because
// their figures cannot be true (ours, as WarnEndedEarly is).
const WarnImplausible = 10

// implausible drops a PDU whose figures cannot be true (plausible.go):
// counted, said at most a few times (each line with the count so far),
// outside the cap on warnings as those lines are few and say how to read
// the result.
func (c *Conn) implausible(why uint8) {
	c.counts[CountImplausible]++
	c.pl.why = why
	if c.pl.discard() {
		c.implausibleWarning()
	}
}

func (c *Conn) implausibleWarning() {
	kind := "Status"
	if !c.loadSender {
		kind = "Load"
	}
	c.pl.lastSaid = c.pl.discarded
	c.events = append(c.events, Event{Kind: EvWarning, Code: WarnImplausible,
		Text: fmt.Sprintf("WARNING: %d %s PDUs dropped so far as forged: their figures cannot be true (the last: %s)",
			c.pl.discarded, kind, implausibleText[c.pl.why])})
}
