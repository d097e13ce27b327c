package dataphase

import "github.com/udpstp/udpstp/clock"

// The Load Receiver's statistics, kept exactly as OB-UDPST 9.0.0 keeps them
// (see the package doc; docs/architecture.md follows a Load PDU through
// them), because its peer's rate adjustment
// and every reported figure depend on them.

// seqHistoryLen is how many accepted sequence numbers the duplicate check
// remembers.
const seqHistoryLen = 32

// owdStats accumulates one-way delay variation samples (ms).
type owdStats struct {
	min, max, sum, cnt uint32
}

func (o *owdStats) reset() { *o = owdStats{min: NoDelay} }

func (o *owdStats) add(v uint32) {
	o.min = min(o.min, v)
	o.max = max(o.max, v)
	o.sum += v
	o.cnt++
}

// trialCounters are reset at every Status PDU sent.
type trialCounters struct {
	datagrams, bytes uint32
	loss, ooo, dup   uint32
	owd              owdStats
	rttVarSample     uint32 // the last sample of the interval, NoDelay if none
	ce               uint32
	delayMinUpd      bool
}

func (t *trialCounters) reset() {
	*t = trialCounters{rttVarSample: NoDelay}
	t.owd.reset()
}

// subCounters are reset when a Sub-Interval closes.
type subCounters struct {
	datagrams      uint32
	bytes          uint64
	loss, ooo, dup uint32
	owd            owdStats
	rttMin, rttMax uint32
	ce             uint32
	frag           fragCounts // IP fragmentation of the datagrams (frag.go)
	fine           FineDelays // ours, to the µs (finedelay.go)
}

func (s *subCounters) reset() {
	*s = subCounters{rttMin: NoDelay}
	s.owd.reset()
	s.fine.reset()
}

// receiver is the Load Receiver side of a Test Connection.
type receiver struct {
	last    uint32 // highest in-order sequence number, 0 before any
	hist    [seqHistoryLen]uint32
	histPos int

	trial trialCounters
	sub   subCounters

	clockDeltaMin int32 // ms, test-wide minimum of (receive - send) wall times
	clockDeltaSet bool
	rttMinimum    uint32 // ms, NoDelay before the first sample
	lastEcho      int64  // wall ns of the last spduTime echo seen (0: none)
	rttSum        uint32 // samples since the last Sub-Interval output
	rttCnt        uint32
	bleach        bool
	ceOn          bool

	// Status PDU cycle.
	statusSeq  uint32
	trialStart int64 // wall ns of the previous Status PDU (activation first)

	// Sub-Interval cycle: the first starts when the first Status PDU is sent.
	subStarted bool
	subStart   int64 // wall ns
	subSeq     uint32
	accumMs    uint32
	saved      SubIntervalStats
	savedCE    uint32

	// frag is the path's fragmentation arithmetic (frag.go).
	frag fragPlan
	// fineClk holds the minima of the µs figures (finedelay.go).
	fineClk fineClock

	exp *Export // -O, nil without (export.go)
}

func (r *receiver) init(activationWall int64, ceThresh uint8, frag fragPlan) {
	r.frag = frag
	r.trial.reset()
	r.sub.reset()
	r.rttMinimum = NoDelay
	r.trialStart = activationWall
	r.ceOn = ceThresh > 0
}

// onLoad accounts one accepted Load PDU received at wall time rxWall (ns).
// It returns the sender's spduSeqErr when the PDU gave an RTT sample, else
// 0, for the caller's warnings.
func (r *receiver) onLoad(h *LoadHeader, rxWall int64, tos uint8, hasTOS bool) (remoteSeqErr uint16) {
	r.sub.datagrams++
	r.sub.bytes += uint64(h.UDPPayload)
	r.sub.frag.add(&r.frag, uint32(h.UDPPayload))
	r.trial.datagrams++
	r.trial.bytes += uint32(h.UDPPayload)
	if r.ceOn && hasTOS {
		switch tos & 0x03 {
		case 0x00:
			r.bleach = true
		case 0x03:
			r.trial.ce++
			r.sub.ce++
		}
	}

	s := h.SeqNo
	switch {
	case s >= r.last+1 && s != 0:
		gap := s - r.last - 1
		r.trial.loss += gap
		r.sub.loss += gap
		r.last = s
		r.push(s)
	case r.seen(s):
		r.trial.dup++
		r.sub.dup++
		if r.exp != nil {
			r.exp.add(h, rxWall, r.ecnOf(tos, hasTOS), false, 0)
		}
		return 0
	default:
		// Older than the last in-order one and not seen recently: a late
		// arrival. It cancels one unit of the current intervals' loss.
		r.trial.ooo++
		r.sub.ooo++
		if r.trial.loss > 0 {
			r.trial.loss--
		}
		if r.sub.loss > 0 {
			r.sub.loss--
		}
		r.push(s)
		if r.exp != nil {
			r.exp.add(h, rxWall, r.ecnOf(tos, hasTOS), false, 0)
		}
		return 0
	}

	remoteSeqErr = r.rttOf(h, rxWall, tos, hasTOS)

	// One-way delay variation against the running minimum.
	deltaNs := rxWall - clock.Join(h.LpduTimeSec, h.LpduTimeNsec)
	r.sub.fine.OWDVar.add(r.fineClk.owd(deltaNs))
	delta := roundMs(deltaNs)
	d32 := wrapInt32(delta)
	if !r.clockDeltaSet {
		r.clockDeltaMin, r.clockDeltaSet = d32, true
		r.trial.delayMinUpd = true
		return remoteSeqErr
	}
	if d32 < r.clockDeltaMin {
		r.clockDeltaMin = d32
		r.trial.delayMinUpd = true
	}
	v := uint32(int64(d32) - int64(r.clockDeltaMin))
	r.trial.owd.add(v)
	r.sub.owd.add(v)
	return remoteSeqErr
}

// rttOf takes the RTT sample of a Load PDU in order, on this host's clock
// alone: when it echoes a Status PDU's send time not seen before, the time
// since, less the peer's response delay. It returns the sender's
// spduSeqErr with a sample, else 0, and writes the PDU to the -O ring.
func (r *receiver) rttOf(h *LoadHeader, rxWall int64, tos uint8, hasTOS bool) (remoteSeqErr uint16) {
	echo := clock.Join(h.SpduTimeSec, h.SpduTimeNsec)
	if echo != r.lastEcho {
		r.lastEcho = echo
		raw := roundMs(rxWall - echo)
		d := int64(h.RTTRespDelay)
		var rtt int64
		switch {
		case d <= raw:
			rtt = raw - d
		case d == raw+1:
			rtt = 0
		default:
			rtt = raw
		}
		rtt32 := sat32(rtt)
		r.sub.fine.RTTVar.add(r.fineClk.rtt(rxWall-echo, d))
		remoteSeqErr = h.SpduSeqErr
		if rtt32 < r.rttMinimum {
			r.rttMinimum = rtt32
			r.trial.delayMinUpd = true
		}
		sample := rtt32 - r.rttMinimum
		r.trial.rttVarSample = sample
		r.sub.rttMin = min(r.sub.rttMin, sample)
		r.sub.rttMax = max(r.sub.rttMax, sample)
		r.rttSum += sample
		r.rttCnt++
		if r.exp != nil {
			r.exp.add(h, rxWall, r.ecnOf(tos, hasTOS), true, rtt32)
		}
	} else if r.exp != nil {
		r.exp.add(h, rxWall, r.ecnOf(tos, hasTOS), false, 0)
	}
	return remoteSeqErr
}

// ecnOf is the ECN value OB-UDPST exports: the bits received, which it
// reads only with a CE threshold (else Not-ECT, 0).
func (r *receiver) ecnOf(tos uint8, hasTOS bool) uint8 {
	if !r.ceOn || !hasTOS {
		return 0
	}
	return tos & 0x03
}

func (r *receiver) push(s uint32) {
	r.hist[r.histPos] = s
	r.histPos = (r.histPos + 1) % seqHistoryLen
}

// seen reports whether s is among the last accepted sequence numbers. 0 is
// never a sequence number; it only fills the history before it is full.
func (r *receiver) seen(s uint32) bool {
	if s == 0 {
		return false
	}
	for _, h := range r.hist {
		if h == s {
			return true
		}
	}
	return false
}

// wrapInt32 is OB-UDPST's (int) of a one-way delta in ms: modulo 2^32, as
// its Load Receiver computes clockDeltaMin (RFC 9946 section 6.2). A server
// shifts its lpduTime by a secret before the proof of receipt
// (amplification.go) and reads back the peer's clockDeltaMin modulo 2^32,
// which a clamp would break for a clock days off.
func wrapInt32(v int64) int32 { return int32(v) }

// feedback returns the Trial Interval figures the rate adjustment reads.
func (r *receiver) feedback() TrialFeedback {
	return TrialFeedback{
		Loss: r.trial.loss, Ooo: r.trial.ooo, Dup: r.trial.dup,
		DelayVarSum: r.trial.owd.sum, DelayVarCnt: r.trial.owd.cnt,
		RTTVarSample: r.trial.rttVarSample,
		Datagrams:    r.trial.datagrams, CE: r.trial.ce,
	}
}

// buildStatus fills a Status PDU for the Trial Interval ending at nowWall
// and starts the next one. The caller sets TestAction, RxStopped, Rate and
// AuthMode.
func (r *receiver) buildStatus(s *StatusPDU, nowWall int64) {
	r.statusSeq++
	*s = StatusPDU{
		SeqNo:         r.statusSeq,
		SubIntSeqNo:   r.subSeq,
		SubInt:        r.saved,
		SeqErrLoss:    r.trial.loss,
		SeqErrOoo:     r.trial.ooo,
		SeqErrDup:     r.trial.dup,
		ClockDeltaMin: r.clockDeltaMin,
		DelayVarMin:   r.trial.owd.min,
		DelayVarMax:   r.trial.owd.max,
		DelayVarSum:   r.trial.owd.sum,
		DelayVarCnt:   r.trial.owd.cnt,
		RTTMinimum:    r.rttMinimum,
		RTTVarSample:  r.trial.rttVarSample,
		TiDeltaTime:   sat32(roundUs(nowWall - r.trialStart)),
		TiRxDatagrams: r.trial.datagrams,
		TiRxBytes:     r.trial.bytes,
	}
	if r.trial.delayMinUpd {
		s.DelayMinUpd = 1
	}
	s.SpduTimeSec, s.SpduTimeNsec = clock.Split(nowWall)
	if r.ceOn {
		s.TiRxCECount = r.trial.ce
		s.SisSavCECount = r.savedCE
		if r.bleach {
			s.ECNFlags = ECNFlagBleached
		}
	}
	r.trial.reset()
	r.trialStart = nowWall
}

// closeSubInterval runs after each Status PDU is sent: the first send starts
// the first Sub-Interval; later ones close it once it has run longer than
// period - trial/2 (ms), so boundaries fall on Status PDUs. When one closes
// it returns its result (r.saved then holds its statistics for the next
// Status PDUs) and starts the RTT sums of the next.
func (r *receiver) closeSubInterval(nowWall int64, periodMs, trialMs int64) (SubIntervalResult, bool) {
	if !r.subStarted {
		r.subStarted = true
		r.subStart = nowWall
		r.sub.reset()
		return SubIntervalResult{}, false
	}
	elapsed := nowWall - r.subStart
	elapsedMs := roundMs(elapsed)
	if elapsedMs <= periodMs-trialMs/2 {
		return SubIntervalResult{}, false
	}
	r.subSeq++
	r.accumMs += uint32(elapsedMs)
	r.saved = SubIntervalStats{
		RxDatagrams: r.sub.datagrams,
		RxBytes:     r.sub.bytes,
		DeltaTime:   sat32(roundUs(elapsed)),
		SeqErrLoss:  r.sub.loss,
		SeqErrOoo:   r.sub.ooo,
		SeqErrDup:   r.sub.dup,
		DelayVarMin: r.sub.owd.min,
		DelayVarMax: r.sub.owd.max,
		DelayVarSum: r.sub.owd.sum,
		DelayVarCnt: r.sub.owd.cnt,
		RTTVarMin:   r.sub.rttMin,
		RTTVarMax:   r.sub.rttMax,
		AccumTime:   r.accumMs,
	}
	r.savedCE = r.sub.ce
	res := SubIntervalResult{
		Seq:           r.subSeq,
		Stats:         r.saved,
		CECount:       r.savedCE,
		ClockDeltaMin: r.clockDeltaMin,
		ClockDeltaSet: r.clockDeltaSet,
		RTTMinimum:    r.rttMinimum,
		RTTSum:        r.rttSum,
		RTTCnt:        r.rttCnt,
		Bleached:      r.bleach,
		ExtraPackets:  r.sub.frag.pkts,
		ExtraIPBytes:  r.sub.frag.bytes,
		Fine:          r.sub.fine,
		FineMin:       r.fineClk.minima(),
		Wall:          nowWall,
	}
	r.rttSum, r.rttCnt = 0, 0
	r.sub.reset()
	r.subStart = nowWall
	return res, true
}
