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
	phase clock.Time // the grid's phase (SetGridPhase), for Bursts and Status PDUs

	stopHandshake
	liveness
	statusRx  // Load Sender: what the Status PDUs said (status.go)
	statusTx  // Load Receiver: the Status PDUs it writes (status.go)
	policer   // server: an upstream Load Sender's rate (police.go)
	warnState // the cap on warnings and the once-only ones (warnings.go)

	// Server: the anti-amplification rule (amplification.go).
	amp ampGuard
	// A client's plausibility rules (plausible.go).
	pl plausible

	statusScratch StatusPDU             // decoded into (onStatus) and encoded from (pollStatus)
	statusWide    [StatusLegacyLen]byte // a pre-11 Status PDU in the 168-byte form (statuspdu_legacy.go)

	counts Counts // since the last event that carried them
	subOut uint32 // Sub-Interval results reported, at most maxSub
	events []Event
	done   bool
}

// stopHandshake is where the stop handshake stands: the testAction each
// PDU carries (1: the client stops or confirms, 2: the server stops), and
// the end it leads to (RFC 9946; OB-UDPST 9.0.0's sequence, kept for
// interop).
type stopHandshake struct {
	action      uint8     // the testAction our next PDU carries
	stopping    bool      // server: the test time is over; client: a stop was seen or decided
	stopCause   EndReason // server: why it is stopping, its end once the client confirms
	endedEarly  bool      // client: the server stopped before the test time (serverStopped)
	stopAt      clock.Time
	confirm     bool // client: send one PDU carrying action now, then end
	closeReason EndReason
}

// liveness is what the Conn has seen of its peer: the watchdog, the
// no-traffic warning and rttRespDelay, and the ICMP errors its sends drew.
type liveness struct {
	watchdogAt    clock.Time
	lastRx        clock.Time // the last valid PDU's arrival
	lastRxSet     bool
	rxStopped     bool // nothing valid for a second: our PDUs say rxStopped
	peerRxStopped bool // the peer's PDUs say rxStopped
	refused       int  // ICMP port unreachable errors since the last valid PDU (PeerRefused)
}

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
		row := p.Bound.clamp(p.InitialRate, p.IPv6)
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
			c.policer.start(p.TrialInt, now.Wall)
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
	c.warn(WarnError, fmt.Sprintf("ERROR: %v", err), true)
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

// timers runs what is due at now that is not a transmission.
func (c *Conn) timers(now clock.Time) {
	if c.amp.on && now >= c.amp.deadline {
		c.warn(WarnError, "ERROR: Peer never confirmed receipt of what was sent to it (forged activation?)", true)
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
		c.warn(WarnLocalTrafficStop, "LOCAL WARNING: Incoming traffic has completely stopped", false)
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

// Receive takes a batch of datagrams read from the Test Connection's socket.
func (c *Conn) Receive(b *RecvBatch) {
	for i := 0; i < b.N && !c.done; i++ {
		d := &b.Dgrams[i]
		if c.amp.on {
			c.amp.in += int64(d.Len)
		}
		c.policer.received(d.Len)
		if c.loadSender {
			c.onStatus(b.Data(i), d, b.Pair)
		} else {
			c.onLoad(b.Data(i), d, b.Pair)
		}
	}
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
	c.warn(WarnError, fmt.Sprintf("ERROR: Test Connection ended early: the peer's port is unreachable (%d ICMP port unreachable, nothing received in between)", c.refused), true)
	c.end(EndPeerGone)
}

// seen records a valid PDU's arrival and the peer's rxStopped flag.
func (c *Conn) seen(t clock.Time, peerRxStopped uint8) {
	c.lastRx, c.lastRxSet = t, true
	c.refused = 0
	stopped := peerRxStopped == 1
	if stopped && !c.peerRxStopped {
		c.counts[CountRemoteTrafficStop]++
		c.warn(WarnRemoteTrafficStop, "REMOTE WARNING: Incoming traffic has completely stopped", false)
	}
	c.peerRxStopped = stopped
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
