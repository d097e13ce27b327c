package dataphase

// RateControl is the server's rate adjustment (RFC 9097 section 8.1 as
// OB-UDPST 9.0.0 implements it): once per Trial Interval it
// judges the Load Receiver's feedback good, bad or neither and moves the
// sending rate row. Algorithm B is OB-UDPST's default; C ("multiply and
// retry") is its addition.
//
// Where OB-UDPST departs from the RFC (congestion confirmed by slowAdjThresh
// bad reports since the last fast increase, not two consecutive ones; delay
// judged on the last RTT sample or the average one-way delay variation; loss
// only by default; fast increases clipped at row 1000) interop and comparable
// results win, and this follows OB-UDPST.
type RateControl struct {
	index     uint16 // current row
	fixed     bool   // -I n: the row never moves (after suppression)
	fixedRow  uint16
	algorithm uint8
	maxIndex  uint16

	lowThresh, upperThresh uint32
	seqErrThresh           uint32
	slowAdjThresh          uint32
	highSpeedDelta         uint32
	ignoreOooDup           bool
	useOwDelVar            bool
	ceThresh               uint8
	suppress               uint32 // Sub-Intervals with adjustment suppressed

	slowAdjCount uint32
	// Algorithm C.
	retryCount  uint32
	retryThresh uint32
	doubleNext  bool
}

// TrialFeedback is one Trial Interval's receiver figures the adjustment reads.
type TrialFeedback struct {
	Loss, Ooo, Dup uint32
	DelayVarSum    uint32
	DelayVarCnt    uint32
	RTTVarSample   uint32 // NoDelay: no sample this Trial Interval
	Datagrams      uint32
	CE             uint32
}

// NewRateControl starts the adjustment for a Test Connection's parameters:
// at row 0 for the automatic search, at SRIndexConf for a starting row or a
// fixed one. (A downstream server's Load Sender sends row 0 whatever this
// says until the peer's first Status PDU shows that it receives,
// amplification.go, as OB-UDPST's does for a fixed row: see the package doc;
// from that Status PDU on, this row applies.)
func NewRateControl(p *Params) *RateControl {
	rc := &RateControl{
		algorithm:      p.Algorithm,
		maxIndex:       uint16(len(p.Table) - 1),
		lowThresh:      p.LowThresh,
		upperThresh:    p.UpperThresh,
		seqErrThresh:   p.SeqErrThresh,
		slowAdjThresh:  p.SlowAdjThresh,
		highSpeedDelta: p.HighSpeedDelta,
		ignoreOooDup:   p.IgnoreOooDup,
		useOwDelVar:    p.UseOwDelVar,
		ceThresh:       p.ECNCEThresh,
		suppress:       p.SRAdjSuppCount,
		retryThresh:    5,
	}
	if len(p.Table) == 0 {
		rc.maxIndex = MaxRateIndex
	}
	if p.SRIndexConf != AutoRateIndex && p.SRIndexConf <= rc.maxIndex {
		if p.StartIndex {
			rc.index = p.SRIndexConf
		} else {
			rc.fixed, rc.fixedRow = true, p.SRIndexConf
			if rc.suppress == 0 {
				rc.index = p.SRIndexConf
			}
		}
	}
	return rc
}

// Index returns the current row.
func (rc *RateControl) Index() uint16 { return rc.index }

// Adjust runs one adjustment with a Trial Interval's feedback and the number
// of Sub-Intervals the server knows to be complete, and returns the new row.
func (rc *RateControl) Adjust(f TrialFeedback, completedSubIntervals uint32) uint16 {
	switch {
	case rc.suppress > 0 && completedSubIntervals < rc.suppress:
		// Dual phase: the first mode runs without adjustment; a fixed-rate
		// test sends row 0 during it, as OB-UDPST 9.0.0's does (see the
		// package doc).
		if rc.fixed {
			rc.index = 0
		}
		return rc.index
	case rc.fixed:
		rc.index = rc.fixedRow
		return rc.index
	}
	good, bad := rc.judge(f)
	if rc.algorithm == AlgorithmC {
		rc.adjustC(good, bad)
	} else {
		rc.adjustB(good, bad)
	}
	return rc.index
}

// judge classifies the feedback. With no delay sample the delay input is
// lowThresh, which is neither good nor bad: the rate cannot rise without one.
func (rc *RateControl) judge(f TrialFeedback) (good, bad bool) {
	seqErr := f.Loss
	if !rc.ignoreOooDup {
		seqErr += f.Ooo + f.Dup
	}
	delay := rc.lowThresh
	if rc.useOwDelVar {
		if f.DelayVarCnt > 0 {
			delay = avgRound(f.DelayVarSum, f.DelayVarCnt)
		}
	} else if f.RTTVarSample != NoDelay {
		delay = f.RTTVarSample
	}
	ce := false
	if rc.ceThresh > 0 && f.CE > 0 {
		needed := ((uint32(rc.ceThresh-1)*f.Datagrams*10)/255 + 5) / 10
		ce = f.CE > needed
	}
	good = seqErr <= rc.seqErrThresh && delay < rc.lowThresh && !ce
	bad = seqErr > rc.seqErrThresh || delay > rc.upperThresh || ce
	return good, bad
}

func (rc *RateControl) adjustB(good, bad bool) {
	hst := uint32(HighSpeedRow)
	idx := uint32(rc.index)
	switch {
	case good:
		if idx < hst && rc.slowAdjCount < rc.slowAdjThresh {
			idx = min(idx+rc.highSpeedDelta, hst)
			rc.slowAdjCount = 0
		} else if idx < uint32(rc.maxIndex) {
			idx++
		}
	case bad:
		rc.slowAdjCount++
		if idx < hst && rc.slowAdjCount == rc.slowAdjThresh {
			idx = backOff(idx, rc.highSpeedDelta)
		} else if idx > 0 {
			idx--
		}
	}
	rc.index = uint16(idx)
}

func (rc *RateControl) adjustC(good, bad bool) {
	hst := uint32(HighSpeedRow)
	idx := uint32(rc.index)
	switch {
	case good:
		if idx < hst && rc.slowAdjCount < rc.slowAdjThresh {
			if idx*2 > hst {
				idx = hst
			} else {
				if idx == 0 {
					idx = 1
				}
				if rc.doubleNext {
					idx *= 2
					rc.doubleNext = false
				} else {
					rc.doubleNext = true
				}
			}
			rc.slowAdjCount = 0
		} else {
			if idx < uint32(rc.maxIndex) {
				idx++
				rc.retryCount++
			}
			if rc.retryCount >= rc.retryThresh {
				// Re-enable the fast ramp, and wait longer next time.
				rc.slowAdjCount, rc.retryCount = 0, 0
				rc.retryThresh += 5
			}
		}
	case bad:
		rc.slowAdjCount++
		if idx < hst && rc.slowAdjCount == rc.slowAdjThresh {
			idx = backOff(idx, rc.highSpeedDelta)
		} else if idx > 0 {
			idx--
			rc.retryCount++
			if rc.retryCount >= rc.retryThresh {
				rc.slowAdjCount, rc.retryCount = 0, 0
			}
		}
	}
	rc.index = uint16(idx)
}

// backOff is the one-time decrease when congestion is confirmed below row
// 1000: three fast-ramp steps down, not below row 0.
func backOff(idx, delta uint32) uint32 {
	if idx > 3*delta {
		return idx - 3*delta
	}
	return 0
}

// avgRound is OB-UDPST's rounded integer average ((sum*10/cnt)+5)/10, in
// unsigned 32-bit arithmetic as it computes it.
func avgRound(sum, cnt uint32) uint32 {
	if cnt == 0 {
		return 0
	}
	return ((sum*10)/cnt + 5) / 10
}
