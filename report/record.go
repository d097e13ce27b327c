package report

import "github.com/udpstp/udpstp/dataphase"

// noDelay is OB-UDPST's NODEL sentinel ("no sample").
const noDelay = dataphase.NoDelay

// record is a Sub-Interval record (OB-UDPST's sisSav plus the CE count and
// the RTT variation sum/count accumulated since the previous output). It is
// used both for one connection's Sub-Interval and for the aggregate of all
// connections. All fields are 32-bit like OB-UDPST's, so sums wrap the same
// way on very long tests.
type record struct {
	dgrams         uint32
	bytes          uint64
	delta          uint32 // us
	loss, ooo, dup uint32
	dvMin, dvMax   uint32 // ms, dvMin NODEL without samples
	dvSum, dvCnt   uint32
	rttMin, rttMax uint32 // ms, rttMin NODEL without samples
	accum          uint32 // ms since the start of the first Sub-Interval
	ce             uint32
	rttSum, rttCnt uint32
	// IP fragmentation (ours; dataphase/frag.go): IP packets beyond one
	// per datagram and the IP header bytes they added. They count in the
	// L2 and L1 rates (wireRate), never in L3, which keeps OB-UDPST's
	// definition.
	extraPkts  uint32
	extraBytes uint64
	// fine is ours: the delay variations to the µs (fine.go).
	fine dataphase.FineDelays
}

// emptyRecord is a record before any merge: minima at NODEL.
func emptyRecord() record { return record{dvMin: noDelay, rttMin: noDelay} }

func recordOf(r *dataphase.SubIntervalResult) record {
	s := &r.Stats
	return record{
		dgrams: s.RxDatagrams, bytes: s.RxBytes, delta: s.DeltaTime,
		loss: s.SeqErrLoss, ooo: s.SeqErrOoo, dup: s.SeqErrDup,
		dvMin: s.DelayVarMin, dvMax: s.DelayVarMax, dvSum: s.DelayVarSum, dvCnt: s.DelayVarCnt,
		rttMin: s.RTTVarMin, rttMax: s.RTTVarMax, accum: s.AccumTime,
		ce: r.CECount, rttSum: r.RTTSum, rttCnt: r.RTTCnt,
		extraPkts: r.ExtraPackets, extraBytes: r.ExtraIPBytes,
		fine: r.Fine,
	}
}

// merge adds a connection's record to the aggregate (measurement.md 5.2).
func (a *record) merge(c *record) {
	a.dgrams += c.dgrams
	a.bytes += c.bytes
	a.delta += c.delta
	a.loss += c.loss
	a.ooo += c.ooo
	a.dup += c.dup
	a.dvMin = min(a.dvMin, c.dvMin)
	a.dvSum += c.dvSum
	a.dvCnt += c.dvCnt
	a.dvMax = max(a.dvMax, c.dvMax)
	a.rttMin = min(a.rttMin, c.rttMin)
	a.rttMax = max(a.rttMax, c.rttMax)
	a.rttSum += c.rttSum
	a.rttCnt += c.rttCnt
	a.ce += c.ce
	a.extraPkts += c.extraPkts
	a.extraBytes += c.extraBytes
	a.fine.Merge(&c.fine)
	a.accum = c.accum // the last connection processed wins
}

// avg is OB-UDPST's rounded integer average, in 32-bit unsigned arithmetic
// like the original ((sum*10)/cnt + 5)/10.
func avg(sum, cnt uint32) uint32 { return ((sum*10)/cnt + 5) / 10 }

// rate is the Mbps at a per-datagram overhead, computed in the same order
// of floating-point operations as OB-UDPST so the last digit agrees.
func (r *record) rate(overhead int, ipv6 bool) float64 { return r.rateExtra(overhead, ipv6, 0) }

func (r *record) rateExtra(overhead int, ipv6 bool, extra float64) float64 {
	if ipv6 {
		overhead += ipv6Extra
	}
	if r.delta == 0 {
		return 0
	}
	m := float64(r.dgrams)
	m *= float64(overhead)
	m += float64(r.bytes)
	m += extra
	m *= 8
	m /= float64(r.delta)
	return m
}

// wireRate is the Mbps at a per-packet overhead beyond L3 (linkOverhead:
// 14 for Ethernet without FCS, 18 with it, 22 with a VLAN tag too), on top
// of OB-UDPST's L3 figure: every datagram counts as overheadL3+linkOverhead
// bytes more than its payload, as in OB-UDPST; a fragmented one also
// counts the IP headers and the link overhead of its extra packets. L2 is
// then what a tbf on an Ethernet device meters. Without fragmentation the
// figure is OB-UDPST's to the last bit (the same operations in the same
// order).
func (r *record) wireRate(linkOverhead int, ipv6 bool) float64 {
	return r.rateExtra(overheadL3+linkOverhead, ipv6, float64(r.extraBytes)+float64(r.extraPkts)*float64(linkOverhead))
}

// shown are the values of a record as OB-UDPST displays them (5.1).
type shown struct {
	dvMin, dvAvg, dvMax    uint32
	rttMin, rttAvg, rttMax uint32
}

func (r *record) shown() shown {
	s := shown{dvMax: r.dvMax, rttMax: r.rttMax}
	if r.dvCnt > 0 {
		s.dvMin = r.dvMin
		s.dvAvg = avg(r.dvSum, r.dvCnt)
	}
	if r.rttMin != noDelay {
		s.rttMin = r.rttMin
	}
	if r.rttCnt > 0 {
		s.rttAvg = avg(r.rttSum, r.rttCnt)
	}
	return s
}

// quality is the JSON view of a record, with s its shown values.
func (r *record) quality(s shown) quality {
	q := counts(r.dgrams, r.loss, r.ooo, r.dup, r.ce)
	q.PDVMin = ms(s.dvMin)
	q.PDVAvg = ms(s.dvAvg)
	q.PDVMax = ms(r.dvMax)
	q.PDVRange = ms(r.dvMax - s.dvMin)
	q.RTTMin = ms(s.rttMin)
	q.RTTAvg = ms(s.rttAvg)
	q.RTTMax = ms(r.rttMax)
	q.RTTRange = ms(r.rttMax - s.rttMin)
	return q
}

// counts is the quality of these counts: the counts and their ratios.
func counts(dgrams, loss, ooo, dup, ce uint32) quality {
	q := quality{Loss: loss, Ooo: ooo, Dup: dup, CE: ce}
	if sent := float64(dgrams) + float64(loss); sent > 0 {
		q.Delivered = float64(dgrams) * 100 / sent
		q.LossRatio = float64(loss) / sent
		q.ReorderedRatio = float64(ooo) / sent
		q.ReplicatedRatio = float64(dup) / sent
	}
	if dgrams > 0 { // of delivered, not of sent
		q.CEPercent = float64(ce) * 100 / float64(dgrams)
	}
	return q
}

// shownDelivered is the figure the text lines show first: the
// "Delivered(%)" percentage, or with -r the "LossRatio".
func (q *quality) shownDelivered(lossRatio bool) float64 {
	if lossRatio {
		return q.LossRatio
	}
	return q.Delivered
}

// ms converts milliseconds to JSON seconds.
func ms(v uint32) float64 { return float64(v) / 1000 }
