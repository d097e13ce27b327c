package dataphase

// FineStat is one delay variation's samples in a Sub-Interval, in
// microseconds.
type FineStat struct {
	Min, Max uint32 // Min is NoDelay without samples
	Sum      uint64
	Cnt      uint32
}

func (s *FineStat) reset() { *s = FineStat{Min: NoDelay} }

func (s *FineStat) add(v uint32) {
	s.Min = min(s.Min, v)
	s.Max = max(s.Max, v)
	s.Sum += uint64(v)
	s.Cnt++
}

// Merge adds o's samples to s (a Sub-Interval of several connections).
func (s *FineStat) Merge(o *FineStat) {
	if o.Cnt == 0 {
		return
	}
	if s.Cnt == 0 {
		*s = *o
		return
	}
	s.Min = min(s.Min, o.Min)
	s.Max = max(s.Max, o.Max)
	s.Sum += o.Sum
	s.Cnt += o.Cnt
}

// Ms is the minimum, average and maximum in milliseconds; zeros without
// samples.
func (s *FineStat) Ms() [3]float64 {
	if s.Cnt == 0 {
		return [3]float64{}
	}
	return [3]float64{float64(s.Min) / 1000, float64(s.Sum) / float64(s.Cnt) / 1000, float64(s.Max) / 1000}
}

// FineDelays are a Sub-Interval's delay variations to the microsecond
// (ours, never on the wire). OB-UDPST keeps whole milliseconds, which its
// rate adjustment, its text and its JSON use and which stay as they are;
// on a LAN they read 0. These come from the same timestamps: one-way, each
// Load PDU's receive minus send wall time against the test's minimum;
// RTT, each echoed Status PDU send time against the test's minimum, less
// the peer's response delay, which the Load PDU carries in whole ms (so an
// RTT figure holds up to a millisecond of the peer's holding time). Only
// the Load Receiver has them: an upstream client learns the server's
// figures from its Status PDUs, in ms.
type FineDelays struct {
	OWDVar, RTTVar FineStat
}

// Any reports whether a sample was taken.
func (f *FineDelays) Any() bool { return f.OWDVar.Cnt > 0 || f.RTTVar.Cnt > 0 }

// Merge adds o's samples to f.
func (f *FineDelays) Merge(o *FineDelays) {
	f.OWDVar.Merge(&o.OWDVar)
	f.RTTVar.Merge(&o.RTTVar)
}

func (f *FineDelays) reset() {
	f.OWDVar.reset()
	f.RTTVar.reset()
}

// fineClock is the receiver's test-wide minima for FineDelays.
type fineClock struct {
	owdMinNs int64 // receive - send wall time
	owdSet   bool
	rttMinUs int64
	rttSet   bool
	// The minimum over the round trips the peer answered within half a
	// ms (response delay 0, rounded): their error is under +0.5 ms, never
	// negative, while a rounded delay of 1 ms or more may be up to 0.5 ms
	// more than the peer held the PDU, and rttMinUs, which RTTVar varies
	// against, then reads 0 on a LAN.
	rttHeldMinUs int64
	rttHeldSet   bool
}

// owd takes a Load PDU's receive - send wall time and returns its
// variation against the minimum so far, in µs.
func (c *fineClock) owd(deltaNs int64) uint32 {
	if !c.owdSet || deltaNs < c.owdMinNs {
		c.owdMinNs, c.owdSet = deltaNs, true
	}
	return sat32(roundUs(deltaNs - c.owdMinNs))
}

// rtt takes an echoed Status PDU's round trip (ns) and the peer's response
// delay (ms), and returns the RTT variation against the minimum so far, in
// µs. A response delay longer than the round trip (by more than its
// rounding) is ignored, as the ms figure does.
func (c *fineClock) rtt(rawNs int64, respDelayMs int64) uint32 {
	us := roundUs(rawNs)
	switch d := respDelayMs * 1000; {
	case d <= us:
		us -= d
	case d <= us+1000:
		us = 0
	}
	if !c.rttSet || us < c.rttMinUs {
		c.rttMinUs, c.rttSet = us, true
	}
	if respDelayMs == 0 && (!c.rttHeldSet || us < c.rttHeldMinUs) {
		c.rttHeldMinUs, c.rttHeldSet = us, true
	}
	return sat32(us - c.rttMinUs)
}

// FineMinima are the test-wide minima of the FineDelays, to the
// microsecond (ours; OB-UDPST's own minima are whole ms and read 0 on a
// LAN). OWDUs is receive minus send wall time, clock difference included,
// like OB-UDPST's Minimum One-Way Delay, and what OWDVar varies against.
// RTTBaseUs is what RTTVar varies against: the least round trip less the
// peer's response delay, which the Load PDU carries rounded to whole ms,
// like OB-UDPST's RTT minimum; so RTTBaseUs plus a mean RTTVar is a mean
// round trip, but RTTBaseUs alone may be up to 0.5 ms short (0 on a LAN).
// RTTUs is the minimum round trip shown: over the round trips the peer
// answered within half a ms (response delay 0), whose error is never
// negative; RTTSet is false when there was none (a peer that always held
// the Status PDU longer: then no minimum to the µs is known).
type FineMinima struct {
	OWDUs      int64
	RTTUs      int64
	RTTBaseUs  int64
	OWDSet     bool
	RTTSet     bool
	RTTBaseSet bool
}

// Merge keeps the smaller of each minimum that o has.
func (m *FineMinima) Merge(o *FineMinima) {
	if o.OWDSet && (!m.OWDSet || o.OWDUs < m.OWDUs) {
		m.OWDUs, m.OWDSet = o.OWDUs, true
	}
	if o.RTTSet && (!m.RTTSet || o.RTTUs < m.RTTUs) {
		m.RTTUs, m.RTTSet = o.RTTUs, true
	}
	if o.RTTBaseSet && (!m.RTTBaseSet || o.RTTBaseUs < m.RTTBaseUs) {
		m.RTTBaseUs, m.RTTBaseSet = o.RTTBaseUs, true
	}
}

// minima is what c holds so far.
func (c *fineClock) minima() FineMinima {
	return FineMinima{OWDUs: roundUs(c.owdMinNs), OWDSet: c.owdSet, RTTUs: c.rttHeldMinUs, RTTSet: c.rttHeldSet,
		RTTBaseUs: c.rttMinUs, RTTBaseSet: c.rttSet}
}
