package control

// A running test's Sub-Intervals, bounded: the server's archive
// (docs/fleet.md) keeps every test's Sub-Intervals until the test ends,
// and a test may last an hour at 100 ms Sub-Intervals (36,000 of them,
// 240 bytes each) on each of MaxConnsPerServer slots at once.

import "github.com/udpstp/udpstp/dataphase"

// MaxRecordSubIntervals bounds the Sub-Intervals a TestRecord holds: past
// it, adjacent ones are merged in pairs. A running test then keeps at most
// 512 × 240 bytes (123 kB) of them, all MaxConnsPerServer slots together
// 31 MB (2.2 GB without the bound: 254 one-hour tests at 100 ms).
const MaxRecordSubIntervals = 512

// AddSubInterval adds the next Sub-Interval reported. Up to
// MaxRecordSubIntervals each is kept as it came; past that, adjacent
// entries are merged in pairs (SubIntervalsMerged doubles), so that each
// entry covers SubIntervalsMerged Sub-Intervals (the last one up to that
// many): the totals stay exact (datagrams, bytes, loss, time, delay
// variation sums and extremes), and Peak, RateSum and SubIntervalCount
// keep the summary's maximum and mean those of the Sub-Intervals
// themselves.
func (t *TestRecord) AddSubInterval(r *dataphase.SubIntervalResult) {
	hdr := uint64(dataphase.L3Overhead(t.IPv6))
	rate := r.L3Mbps(hdr)
	if t.SubIntervalCount == 0 || rate > t.Peak.L3Mbps(hdr) {
		t.Peak = *r
	}
	t.RateSum += rate
	k := max(t.SubIntervalsMerged, 1)
	n := len(t.SubIntervals)
	inLast := t.SubIntervalCount - k*(n-1) // Sub-Intervals in the last entry
	t.SubIntervalCount++
	if n > 0 && inLast < k {
		mergeSubInterval(&t.SubIntervals[n-1], r)
		return
	}
	if n >= MaxRecordSubIntervals {
		for i := range n / 2 {
			a := t.SubIntervals[2*i]
			mergeSubInterval(&a, &t.SubIntervals[2*i+1])
			t.SubIntervals[i] = a
		}
		t.SubIntervals = t.SubIntervals[:n/2]
		t.SubIntervalsMerged = 2 * k
	}
	if n := len(t.SubIntervals); n == cap(t.SubIntervals) {
		// append's growth would pass the bound.
		grown := make([]dataphase.SubIntervalResult, n, min(max(2*n, 16), MaxRecordSubIntervals))
		copy(grown, t.SubIntervals)
		t.SubIntervals = grown
	}
	t.SubIntervals = append(t.SubIntervals, *r)
}

// mergeSubInterval adds b, the Sub-Interval(s) after a, to a: counts and
// times add up (saturating), extremes are the extremes of both, the
// connection-wide values (AccumTime, RTTMinimum, the clock delta, the
// sending row, Wall) are b's, the later ones; a keeps its Seq, the first.
func mergeSubInterval(a, b *dataphase.SubIntervalResult) {
	s, o := &a.Stats, &b.Stats
	s.RxDatagrams = add32(s.RxDatagrams, o.RxDatagrams)
	s.RxBytes += o.RxBytes
	s.DeltaTime = add32(s.DeltaTime, o.DeltaTime)
	s.SeqErrLoss = add32(s.SeqErrLoss, o.SeqErrLoss)
	s.SeqErrOoo = add32(s.SeqErrOoo, o.SeqErrOoo)
	s.SeqErrDup = add32(s.SeqErrDup, o.SeqErrDup)
	s.DelayVarMin = min(s.DelayVarMin, o.DelayVarMin) // NoDelay is the largest value
	s.DelayVarMax = maxDelay(s.DelayVarMax, o.DelayVarMax)
	s.DelayVarSum = add32(s.DelayVarSum, o.DelayVarSum)
	s.DelayVarCnt = add32(s.DelayVarCnt, o.DelayVarCnt)
	s.RTTVarMin = min(s.RTTVarMin, o.RTTVarMin)
	s.RTTVarMax = maxDelay(s.RTTVarMax, o.RTTVarMax)
	s.AccumTime = o.AccumTime
	a.CECount = add32(a.CECount, b.CECount)
	a.RTTSum, a.RTTCnt = add32(a.RTTSum, b.RTTSum), add32(a.RTTCnt, b.RTTCnt)
	a.Bleached = a.Bleached || b.Bleached
	a.SkippedBursts = add32(a.SkippedBursts, b.SkippedBursts)
	a.SkippedDgrams = add32(a.SkippedDgrams, b.SkippedDgrams)
	a.WithheldDgrams = add32(a.WithheldDgrams, b.WithheldDgrams)
	a.SenderPlanned += b.SenderPlanned
	a.SenderDelivered += b.SenderDelivered
	a.ExtraPackets = add32(a.ExtraPackets, b.ExtraPackets)
	a.ExtraIPBytes += b.ExtraIPBytes
	a.FragEstimated = a.FragEstimated || b.FragEstimated
	a.ClockDeltaMin, a.ClockDeltaSet = b.ClockDeltaMin, b.ClockDeltaSet
	a.RTTMinimum = b.RTTMinimum
	a.SendRate, a.SendRateSet = b.SendRate, b.SendRateSet
	a.Fine.Merge(&b.Fine)
	a.Wall = b.Wall
}

// maxDelay is the larger of two delays, NoDelay (no sample) counting as
// none.
func maxDelay(a, b uint32) uint32 {
	switch {
	case a == dataphase.NoDelay:
		return b
	case b == dataphase.NoDelay:
		return a
	}
	return max(a, b)
}

func add32(a, b uint32) uint32 {
	if s := a + b; s >= a {
		return s
	}
	return ^uint32(0)
}
