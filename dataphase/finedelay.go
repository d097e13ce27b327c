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
	return sat32(us - c.rttMinUs)
}
