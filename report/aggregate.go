package report

import (
	"fmt"

	"github.com/udpstp/udpstp/dataphase"
)

// aggregate is the client's one aggregate Test Connection (see the package
// doc): the connections' Sub-Intervals are merged into it until it is
// emitted as one aggregate Sub-Interval.
type aggregate struct {
	count   int // aggregate Sub-Intervals emitted so far
	contrib int // connections merged into the pending one
	rec     record
	// Rates are the sums of the connection rates, each over its own
	// measured duration (not the rate of the merged counts).
	l3, l2, l1, l0 float64
	// Running minima over the whole test, never reset.
	clockDeltaMin int32
	rttMinimum    uint32
	fineMin       dataphase.FineMinima // ours, to the µs (fine.go)
	bleached      bool
	skips         skipFigures
	// send is the sum of the connections' sending rates (nominal L3
	// Mbit/s of their rows), sendUnknown whether one of them did not
	// know its row: the rates StillRising reads.
	send        float64
	sendUnknown bool
}

func (a *aggregate) reset() {
	a.contrib = 0
	a.rec = emptyRecord()
	a.l3, a.l2, a.l1, a.l0 = 0, 0, 0, 0
	a.skips = skipFigures{}
	a.send, a.sendUnknown = 0, false
}

func (a *aggregate) add(r *dataphase.SubIntervalResult, rec *record, l3 float64, ipv6 bool) {
	a.contrib++
	a.l3 += l3
	a.l2 += rec.wireRate(linkL2, ipv6)
	a.l1 += rec.wireRate(linkL1, ipv6)
	a.l0 += rec.wireRate(linkL0, ipv6)
	var cd int32 // OB-UDPST's value before any in-order Load PDU is 0
	if r.ClockDeltaSet {
		cd = r.ClockDeltaMin
	}
	if a.contrib == 1 && a.count == 0 {
		a.clockDeltaMin, a.rttMinimum = cd, r.RTTMinimum
	} else {
		a.clockDeltaMin = min(a.clockDeltaMin, cd)
		a.rttMinimum = min(a.rttMinimum, r.RTTMinimum)
	}
	a.fineMin.Merge(&r.FineMin)
	a.rec.merge(rec)
	a.bleached = a.bleached || r.Bleached
	a.skips.add(r)
	if r.SendRateSet {
		a.send += r.SendRate.L3Mbps(ipv6)
	} else {
		a.sendUnknown = true
	}
}

// climbSample is the pending aggregate Sub-Interval as StillRising reads it.
func (a *aggregate) climbSample() ClimbSample {
	s := ClimbSample{Capacity: a.l3, SeqErrors: a.rec.loss + a.rec.ooo}
	if !a.sendUnknown {
		s.SendRate = a.send
	}
	return s
}

// summaryAcc accumulates the aggregate Sub-Intervals of one mode for its
// Summary line.
type summaryAcc struct {
	dgrams, loss, ooo, dup, ce uint32
	dvMin, dvMax, dvSum        uint32 // dvSum: sum of the Sub-Interval averages
	rttMin, rttMax             uint32
	rttSum, rttCnt             uint32
	rateSum                    float64
	intfSum                    float64 // -E: the interface's rates
	samples                    uint32
}

func (t *summaryAcc) add(r *record, s shown, mbps, intf float64) {
	if t.samples == 0 {
		t.dvMin, t.dvMax, t.dvSum = s.dvMin, r.dvMax, s.dvAvg
		t.rttMin, t.rttMax = s.rttMin, r.rttMax
	} else {
		t.dvMin = min(t.dvMin, s.dvMin)
		t.dvMax = max(t.dvMax, r.dvMax)
		t.dvSum += s.dvAvg
		t.rttMin = min(t.rttMin, s.rttMin)
		t.rttMax = max(t.rttMax, r.rttMax)
	}
	t.dgrams += r.dgrams
	t.loss += r.loss
	t.ooo += r.ooo
	t.dup += r.dup
	t.rttSum += r.rttSum
	t.rttCnt += r.rttCnt
	t.ce += r.ce
	t.rateSum += mbps
	t.intfSum += intf
	t.samples++
}

// maxAcc is the aggregate Sub-Interval with the highest L3 rate of a mode
// (its Maximum line); ties keep the earlier one. Unset, it stays all zero (TimeOfMax is
// then the epoch, as in OB-UDPST).
type maxAcc struct {
	wall           int64
	active         int
	rec            record
	l3, l2, l1, l0 float64
	intf           float64 // -E
}

// mode is 0 for single-mode tests and the first bimodal mode, 1 after the
// bimodal count.
func (c *Collector) mode(n int) int {
	if b := c.res.info.Bimodal; b > 0 && n > b {
		return 1
	}
	return 0
}

// emit outputs the pending aggregate Sub-Interval at wall time wall.
func (c *Collector) emit(wall int64) {
	a := &c.agg
	a.count++
	n := a.count
	m := c.mode(n)
	intf := c.intfMbps
	mx := &c.maxes[m]
	higher := a.l3 > mx.l3
	if c.res.info.InterfaceMax { // -M: the interface's rate picks the maximum
		higher = intf > mx.intf
	}
	if higher {
		*mx = maxAcc{wall: wall, active: c.active, rec: a.rec, l3: a.l3, l2: a.l2, l1: a.l1, l0: a.l0, intf: intf}
	}
	s := a.rec.shown()
	res := intervalResult{
		Interval: n, Seconds: float64(a.rec.accum) / 1000, Wall: wall, Active: c.active,
		Q:         a.rec.quality(s),
		Capacity:  a.l3,
		Intf:      intf,
		MinOneway: (float64(a.clockDeltaMin) + float64(s.dvMin)) / 1000,
	}
	if !c.opt.NoSubInt {
		if c.text() {
			c.write(subIntervalLine(c.prefix(0), n, &a.rec, a.l3, c.opt.LossRatio, c.ceOn(), intfText(c.intfOn(), intf)))
			if a.rec.fine.Any() {
				c.write(fineLine(c.prefix(0), n, &a.rec.fine))
			}
		}
		c.res.intervals = append(c.res.intervals, res)
		if a.rec.fine.Any() {
			c.res.fine = append(c.res.fine, fineInterval{Interval: n, F: a.rec.fine})
		}
	}
	if c.opt.OnInterval != nil {
		c.opt.OnInterval(newInterval(-1, n, &a.rec, s, res))
	}
	c.res.skips.sum(&a.skips)
	// -s: no Sub-Interval lines, ours included, and no per-Sub-Interval
	// list in JSON (the totals stay).
	if a.skips.any() && !c.opt.NoSubInt {
		c.res.skipList = append(c.res.skipList, skipInterval{Interval: n, F: a.skips})
		if c.text() && a.skips.Bursts > 0 {
			c.write(skipLine(c.prefix(0), n, &a.skips))
		}
	}
	c.sums[m].add(&a.rec, s, a.l3, intf)
	c.climb[m] = append(c.climb[m], a.climbSample())
	a.reset()
}

// conclude computes Summary and Maximum (one of each per mode of a bimodal
// test) and prints their text lines.
func (c *Collector) conclude() {
	info := c.res.info
	a := &c.agg
	r := &c.res
	r.complete = true
	r.bleached = a.bleached
	n := a.count
	b := info.Bimodal
	modes := c.mode(n) + 1
	r.modalKeys = b == 0 || n > b
	rttMinimum := a.rttMinimum
	if rttMinimum == noDelay {
		rttMinimum = 0
	}
	// Sub-Interval ranges of the modes, for labels and "Intervals".
	first, last := [2]int{1, b + 1}, [2]int{min(b, n), n}
	if b == 0 {
		last[0] = n
	}
	label := func(word string, i int) string {
		if b == 0 {
			return word
		}
		return fmt.Sprintf("%s[%d-%d]", word[:3], first[i], last[i])
	}
	pre, dir := c.prefix(0), info.direction()
	var delivered float64 // kept across modes, as OB-UDPST does when one has nothing sent
	for i := range modes {
		t := &c.sums[i]
		q := counts(t.dgrams, t.loss, t.ooo, t.dup, t.ce)
		dvAvg, rate, intf := t.dvSum, t.rateSum, t.intfSum
		if float64(t.dgrams)+float64(t.loss) > 0 {
			delivered = q.shownDelivered(c.opt.LossRatio)
			dvAvg = avg(t.dvSum, t.samples)
			rate /= float64(t.samples)
			intf /= float64(t.samples)
		}
		rttAvg := t.rttSum
		if t.rttCnt > 0 {
			rttAvg = avg(t.rttSum, t.rttCnt)
		}
		if c.text() {
			c.write(pre + dir + " " + label("Summary", i) + " " + qualityText(c.opt.LossRatio, delivered, c.ceOn(),
				t.loss, t.ooo, t.dup, t.ce, [3]uint32{t.dvMin, dvAvg, t.dvMax}, [3]uint32{t.rttMin, rttAvg, t.rttMax}, rate,
				intfText(c.intfOn(), intf)))
		}
		q.PDVMin, q.PDVAvg, q.PDVMax, q.PDVRange = ms(t.dvMin), ms(dvAvg), ms(t.dvMax), ms(t.dvMax-t.dvMin)
		q.RTTMin, q.RTTAvg, q.RTTMax, q.RTTRange = ms(t.rttMin), ms(rttAvg), ms(t.rttMax), ms(t.rttMax-t.rttMin)
		r.summary = append(r.summary, summaryResult{
			Mode: i + 1, Intervals: last[i] - first[i] + 1, Active: c.active, Q: q,
			Capacity: rate, Intf: intf,
			MinOneway: float64(a.clockDeltaMin) / 1000, MinRTT: ms(rttMinimum),
		})
	}
	if c.text() {
		c.write(minimumLine(pre, dir, a.clockDeltaMin, rttMinimum, c.active))
		if l := fineMinimumLine(pre, dir, &a.fineMin); l != "" {
			c.write(l)
		}
	}
	r.fineMin = a.fineMin
	for i := range modes {
		mx := &c.maxes[i]
		if c.text() {
			c.write(maximumLine(pre, dir, label("Maximum", i), mx.l3, intfText(c.intfOn(), mx.intf), mx.l2, mx.l1, mx.l0))
		}
		s := mx.rec.shown()
		r.max = append(r.max, maxResult{
			Mode: i + 1, Intervals: last[i] - first[i] + 1, Wall: mx.wall, Active: mx.active,
			Q: mx.rec.quality(s), Capacity: mx.l3, Intf: mx.intf, L2: mx.l2, L1: mx.l1, L0: mx.l0,
			MinOneway: (float64(a.clockDeltaMin) + float64(s.dvMin)) / 1000,
		})
	}
	// A search still climbing at the end (rising.go): the last mode's
	// Maximum is bound by the test's length. A fixed rate (-I row) never
	// climbs.
	if info.auto() || info.SRStart {
		r.stillRising = StillRising(c.climb[modes-1])
	}
	if r.stillRising && c.text() {
		c.write(pre + StillRisingNote + "\n")
	}
	if r.reasmFails > 0 && c.text() {
		c.write(pre + ReassemblyNote(r.reasmFails) + "\n")
	}
}
