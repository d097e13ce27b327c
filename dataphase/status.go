package dataphase

import (
	"fmt"
	"time"

	"github.com/udpstp/udpstp/clock"
)

// statusRx is what a Load Sender keeps of the Status PDUs it receives: the
// sequence and the echo its Load PDUs carry back, the last Sub-Interval
// reported, the peer's RTT samples since then, and on the server the rate
// adjustment's pace (adjustPace).
type statusRx struct {
	lastStatusSeq uint32
	spduSeqErr    uint16
	echoSec       uint32
	echoNsec      uint32
	lastSubSeq    uint32
	peerRTTSum    uint32
	peerRTTCnt    uint32
	adjustTAT     clock.Time
}

// statusTx is a Load Receiver's Status PDU timer, and the Status PDU it
// last wrote (its length, send time and the spduTime it carried) for Sent
// and the anti-amplification rule (amplification.go).
type statusTx struct {
	statusAt   clock.Time
	statusLen  int
	statusWall int64
	statusWire int64
}

// statusGrid is the grid of the Status PDUs' due times.
const statusGrid = clock.Time(time.Millisecond)

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
	if !c.p.Server && c.p.Bound.congested(&TrialInfo{Datagrams: s.TiRxDatagrams, Bytes: s.TiRxBytes, DeltaTimeUs: s.TiDeltaTime}, c.p.IPv6) {
		// Above the client's bound (ratebound.go): a congested Trial
		// Interval, by the delay input the server's search reads.
		over := c.p.UpperThresh + 1
		if s.RTTVarSample == NoDelay || s.RTTVarSample < over {
			s.RTTVarSample = over
		}
		if s.DelayVarCnt == 0 {
			s.DelayVarCnt = 1
		}
		s.DelayVarSum = max(s.DelayVarSum, over*s.DelayVarCnt)
	}
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
		c.warn(WarnLocalBleach, "LOCAL WARNING: Incoming ECN bleaching detected", false)
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

func (c *Conn) onStatus(data []byte, d *InDatagram, pair clock.Pair) {
	s := &c.statusScratch
	if err := s.DecodeProto(data, c.p.proto(), &c.statusWide); err != nil {
		c.invalid(statusPDU, err, data, d.Len)
		return
	}
	if c.amp.on && !c.statusProves(s, pair.WallAt(d.Time)) {
		return
	}
	if !c.p.Server && !s.Rate.Valid() {
		// A row no table holds would make us send as fast as we can.
		c.invalid(statusPDU, errStatusRate, data, d.Len)
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

	c.statusSequence(s.SeqNo)
	c.echoSec, c.echoNsec = s.SpduTimeSec, s.SpduTimeNsec
	if s.RTTVarSample != NoDelay {
		c.peerRTTSum += s.RTTVarSample
		c.peerRTTCnt++
	}
	if c.p.ECNCEThresh > 0 && s.ECNFlags&ECNFlagBleached != 0 && !c.remoteBleach {
		c.remoteBleach = true
		c.warn(WarnRemoteBleach, "REMOTE WARNING: Incoming ECN bleaching detected", false)
	}
	fb := TrialFeedback{
		Loss: s.SeqErrLoss, Ooo: s.SeqErrOoo, Dup: s.SeqErrDup,
		DelayVarSum: s.DelayVarSum, DelayVarCnt: s.DelayVarCnt,
		RTTVarSample: s.RTTVarSample, Datagrams: s.TiRxDatagrams, CE: s.TiRxCECount,
	}
	if !c.p.Server && !stop {
		c.snd.setRow(c.p.Bound.clamp(s.Rate, c.p.IPv6), pair.Mono, c.phase)
	}
	if s.DelayMinUpd != 0 && s.RTTMinimum != NoDelay {
		c.events = append(c.events, Event{Kind: EvMinimum, ClockDeltaMin: s.ClockDeltaMin, RTTMinimum: s.RTTMinimum})
	}
	// Only a newer Sub-Interval counts: a reordered Status PDU must not
	// report one again. (OB-UDPST compares for inequality.)
	if s.SubIntSeqNo > c.lastSubSeq {
		c.lastSubSeq = s.SubIntSeqNo
		c.pl.took(&s.SubInt)
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

// statusProves judges a Status PDU while the peer has not yet shown that
// it receives what we send (amplification.go), at its arrival's wall
// time in ns: false when it is to be dropped, after counting it and, at
// maxUnproven of them, ending the Test Connection.
func (c *Conn) statusProves(s *StatusPDU, wall int64) bool {
	switch {
	case c.amp.proves(s, wall):
		// Validated: the normal rates apply from this Status PDU's
		// rate adjustment on.
		c.amp.on, c.snd.sizeCap = false, 0
	case s.TiRxDatagrams > 0:
		// It reports Load PDUs we never sent, or a clock that does
		// not know the shift: forged, or not ours.
		c.counts[CountStatusUnproven]++
		c.amp.unproven++
		if c.amp.unproven >= maxUnproven {
			c.warn(WarnError, fmt.Sprintf("ERROR: %d Status PDUs failed the proof of receipt (forged activation?)", c.amp.unproven), true)
			c.end(EndUnverified)
		}
		return false
	}
	// Reporting none proves nothing: a sign of life only (no rate
	// adjustment while c.amp.on).
	return true
}

// statusSequence takes a Status PDU's sequence number: a gap is loss, a
// step back reordering; either is counted and warned of.
func (c *Conn) statusSequence(seq uint32) {
	switch {
	case seq >= c.lastStatusSeq+1:
		gap := seq - c.lastStatusSeq - 1
		c.spduSeqErr = uint16(min(gap, SpduSeqErrOoO-1))
		c.lastStatusSeq = seq
	default:
		c.spduSeqErr = SpduSeqErrOoO
	}
	if c.spduSeqErr != 0 {
		c.counts[CountLocalStatusLoss] += uint64(c.spduSeqErr)
		if c.canWarn(false) {
			c.warn(WarnLocalStatusLoss, "LOCAL WARNING: Incoming status feedback messages lost ("+seqErrText(c.spduSeqErr)+")", false)
		}
	}
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
