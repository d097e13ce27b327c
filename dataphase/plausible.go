package dataphase

import (
	"time"

	"github.com/udpstp/udpstp/clock"
)

// A client's plausibility rules (docs/security.md, "The client"): Status
// and Load PDUs come over UDP, and anyone who knows a Test Connection's
// 4-tuple can forge them. A forged Status PDU once made a 5 Mbit/s upstream
// test report 10,224 Mbit/s, and its far-ahead subIntSeqNo made the client
// drop every later real Sub-Interval. The client therefore discards a PDU
// whose figures cannot be true from what it knows itself, and keeps the
// real ones that follow. The rules only reject what no genuine peer sends
// (an OB-UDPST 9.0.0 server included): every bound has the slack of a real
// path (queues, stalls, clock rates, duplication).
//
// The server runs the same rules on a downstream client (docs/security.md,
// "A downstream client's report"): there the server is the Load Sender and
// the client's Status PDUs report what it received, the figures the
// server's record of the test keeps (control.TestRecord). A client that
// reports more than the server sent (a 0.11 Mbit/s test once archived as
// 962 Pbit/s) has its Status PDU dropped and counted (CountImplausible),
// and the test ends with warning 10, so that the record is not "ok" and
// keeps only the Sub-Intervals that could be true.
//
// Upstream the client is the Load Sender: it knows how many Load PDUs and
// bytes it handed the kernel and when, so a Sub-Interval (or Trial
// Interval) cannot report more distinct datagrams or bytes than were sent
// in its span, widened by plausibleQueue for what was still queued on the
// path or in the server's socket, nor more duplicates than datagrams; nor
// can its number or the Status PDU's number run ahead of the time since
// activation (RFC 9946 section 6.2: one Status PDU per Trial Interval, a
// Sub-Interval closes after at least its period minus half a Trial
// Interval, on the first Status PDU after the first Load PDU). Downstream
// the client is the Load Receiver: a Load PDU's sequence number cannot
// jump further ahead than the fastest valid row sends in the time since the
// last advance, and its spduTime echo must be the send time of one of the
// client's own Status PDUs (or older than those remembered).

// plausibleQueue widens a span of the peer's for what was sent before it
// and received in it: queueing on the path and in the receiver's socket, a
// stalled receiver reading late, and clock steps of that size.
const plausibleQueue = 2 * time.Second

// clockSlackPct is how much faster than ours the peer's clock may run
// (NTP slews at most 0.05%; a raw crystal is within 0.01%).
const clockSlackPct = 1

// sentSampleEvery and sentRingLen: the cumulative sent totals are sampled
// every 100 ms and kept for 12.8 s, longer than the longest Sub-Interval
// (10 s) plus plausibleQueue; an older start uses the test's start (a
// looser bound, never a false one). A server, which runs thousands of Test
// Connections, samples every second into 16 (384 bytes a connection): a
// base up to a second older, a looser bound again, never a false one.
const (
	sentSampleEvery       = 100 * time.Millisecond
	sentRingLen           = 128
	serverSentSampleEvery = time.Second
	serverSentRingLen     = 16
	echoRingLen           = 64 // our last Status PDUs' send times (3.2 s at 50 ms)
)

// maxRowDgramsPerSec is the most datagrams a second any valid row sends
// (SendingRate.Valid: both transmitters every 100 µs, MaxBurst each and an
// add-on).
const maxRowDgramsPerSec = (2*MaxBurst + 1) * (1_000_000 / tx1Interval)

// implausibleWarnAt: a discard is warned about at the first one and when
// the count reaches 10, 100 and 1000 (each line says how many so far), and
// once at the end if more came after the last line: at most five lines.
var implausibleWarnAt = [...]uint64{1, 10, 100, 1000}

// implausibility is why a PDU was found impossible: the first rule it
// broke, which the warning says (String).
type implausibility uint8

const (
	implOK implausibility = iota
	implStatusSeq
	implSubSeq
	implSubDuration
	implCounts
	implSent
	implLoadSeq
	implEcho
	implTotal
)

var implausibleText = [...]string{
	implOK:          "",
	implStatusSeq:   "its sequence number runs ahead of the test time",
	implSubSeq:      "its Sub-Interval number runs ahead of the test time",
	implSubDuration: "its Sub-Interval duration is impossible",
	implCounts:      "its loss, reordering, duplicate or delay counts exceed its datagrams",
	implSent:        "it reports more received than was sent",
	implLoadSeq:     "its sequence number jumps further ahead than any sending rate allows",
	implEcho:        "it echoes a Status PDU time this end never sent",
	implTotal:       "its Sub-Intervals add up to more received than was sent in the whole test",
}

func (r implausibility) String() string {
	if int(r) < len(implausibleText) {
		return implausibleText[r]
	}
	return "unknown"
}

type sentSample struct {
	at            clock.Time
	dgrams, bytes uint64
}

// plausible holds what a client knows for its rules.
type plausible struct {
	on       bool
	start    clock.Time
	periodUs int64
	trialUs  int64

	// Load Sender: totals the kernel accepted, the largest datagram, and
	// the ring of samples (sentRingLen every sentSampleEvery; a server's
	// serverSentRingLen every serverSentSampleEvery).
	dgrams, bytes uint64
	maxLen        uint64
	ring          []sentSample
	ringN         int // samples written (the ring holds the last len(ring))
	nextSample    clock.Time
	sampleEvery   clock.Time

	// Load Sender: the Sub-Intervals taken so far, added up: datagrams
	// received in order (distinct, each one sent), the late and duplicate
	// ones (each a copy of one sent, or late), and bytes.
	tookInOrder, tookOther, tookBytes uint64

	// Load Receiver: when the sequence number last advanced, and our
	// Status PDUs' send times (wall ns).
	advanceAt clock.Time
	echo      []int64 // echoRingLen, a client's only
	echoN     int

	discarded uint64
	why       implausibility // the rule the last discarded PDU broke
	warned    int            // lines of implausibleWarnAt said
	lastSaid  uint64         // the count the last line said
}

// init sets the rules up at start: a client's always, a server's only
// as a downstream Load Sender (upstream its own Load Receiver measures).
func (p *plausible) init(par *Params, start clock.Time) {
	downstreamServer := par.Server && !par.Upstream
	*p = plausible{
		on:          !par.Server || downstreamServer,
		start:       start,
		periodUs:    int64(par.SubIntPeriod / time.Microsecond),
		trialUs:     int64(par.TrialInt / time.Microsecond),
		sampleEvery: clock.Time(sentSampleEvery),
	}
	p.advanceAt = start
	switch {
	case downstreamServer:
		p.ring, p.sampleEvery = make([]sentSample, serverSentRingLen), clock.Time(serverSentSampleEvery)
	case p.on:
		p.ring, p.echo = make([]sentSample, sentRingLen), make([]int64, echoRingLen)
	}
}

// sample records the sent totals at now (before the plan of now is sent)
// every sampleEvery.
func (p *plausible) sample(now clock.Time) {
	if !p.on || now < p.nextSample {
		return
	}
	p.ring[p.ringN%len(p.ring)] = sentSample{at: now, dgrams: p.dgrams, bytes: p.bytes}
	p.ringN++
	p.nextSample = now + p.sampleEvery
}

// sent adds one datagram of l bytes the kernel accepted.
func (p *plausible) sent(l uint16) {
	p.dgrams++
	p.bytes += uint64(l)
	p.maxLen = max(p.maxLen, uint64(l))
}

// sentSince returns at least what was sent from t to now: the totals
// minus those of the newest sample taken at or before t (none left in the
// ring: the start's zeros, a looser bound).
func (p *plausible) sentSince(t clock.Time) (dgrams, bytes uint64) {
	var base sentSample
	n := min(p.ringN, len(p.ring))
	for i := 1; i <= n; i++ {
		s := p.ring[(p.ringN-i)%len(p.ring)]
		if s.at <= t {
			base = s
			break
		}
	}
	return p.dgrams - base.dgrams, p.bytes - base.bytes
}

// ahead is the most of something that happens at most once per everyUs
// that can have happened by now, with clockSlackPct and two of slack.
func (p *plausible) ahead(now clock.Time, everyUs int64) uint64 {
	if everyUs <= 0 {
		return 1 << 63
	}
	us := int64(now-p.start) / 1000
	us += us * clockSlackPct / 100
	return uint64(max(us, 0)/everyUs) + 2
}

// minSubUs is the shortest a genuine Sub-Interval lasts: it closes on the
// first Status PDU after period - trial/2 (OB-UDPST: ms elapsed above it).
func (p *plausible) minSubUs() int64 {
	return max((p.periodUs-p.trialUs/2)/1000*1000, 0)
}

// spanFits checks the counts of rx datagrams (dup duplicates, ooo late,
// loss missing) and bytes received in a span of us microseconds ending at
// now against what was sent from us + plausibleQueue before now: at most
// that many distinct datagrams, at most one duplicate per distinct one,
// at most their bytes and the duplicates' at the largest size sent; no
// more missing than the used sequence numbers (with -n, those the kernel
// refused are used too).
func (p *plausible) spanFits(now clock.Time, us uint32, rx, dup, ooo, loss uint32, bytes uint64, used uint32) implausibility {
	if uint64(dup)+uint64(ooo) > uint64(rx) || loss > used+MaxPlan {
		return implCounts
	}
	from := now - clock.Time(time.Duration(us)*time.Microsecond+plausibleQueue)
	sd, sb := p.sentSince(from)
	distinct := uint64(rx - dup)
	switch {
	case distinct > sd+MaxPlan, uint64(dup) > distinct:
		return implSent
	case bytes > sb+uint64(dup)*p.maxLen+MaxPlan*p.maxLen:
		return implSent
	}
	return implOK
}

// status checks a Status PDU that arrived at now. newSub: it carries a
// Sub-Interval this end has not taken; used is how many Load PDU sequence
// numbers this end used.
func (p *plausible) status(s *StatusPDU, now clock.Time, newSub bool, used uint32) implausibility {
	if !p.on {
		return implOK
	}
	if uint64(s.SeqNo) > p.ahead(now, p.trialUs) {
		return implStatusSeq
	}
	if r := p.spanFits(now, s.TiDeltaTime, s.TiRxDatagrams, s.SeqErrDup, s.SeqErrOoo, s.SeqErrLoss, uint64(s.TiRxBytes), used); r != implOK {
		return r
	}
	if s.DelayVarCnt > s.TiRxDatagrams {
		return implCounts
	}
	if !newSub {
		return implOK
	}
	// A Sub-Interval closes on a Status PDU, at most one per Trial
	// Interval even where period - trial/2 is shorter.
	if uint64(s.SubIntSeqNo) > p.ahead(now, max(p.minSubUs(), p.trialUs)) {
		return implSubSeq
	}
	st := &s.SubInt
	elapsedUs := int64(now-p.start) / 1000
	elapsedUs += elapsedUs*clockSlackPct/100 + int64(plausibleQueue/time.Microsecond)
	switch {
	case int64(st.DeltaTime) < p.minSubUs(), int64(st.DeltaTime) > elapsedUs,
		int64(st.AccumTime)*1000 > elapsedUs:
		return implSubDuration
	case st.DelayVarCnt > st.RxDatagrams:
		return implCounts
	}
	if r := p.spanFits(now, st.DeltaTime, st.RxDatagrams, st.SeqErrDup, st.SeqErrOoo, st.SeqErrLoss, st.RxBytes, used); r != implOK {
		return r
	}
	return p.totalFits(st)
}

// totalFits checks a new Sub-Interval st against the whole test: each
// datagram is counted in one Sub-Interval, so those received in order
// (RxDatagrams less the late and duplicate ones, spanFits made sure they
// are no more) add up to at most the datagrams sent, with MaxPlan of
// slack for a plan in flight; their bytes to at most the bytes sent plus
// the largest size for each late, duplicate or in-flight one. spanFits
// bounds each Sub-Interval by what was sent in it and plausibleQueue
// before; this bounds their sum, which that slack would let grow.
func (p *plausible) totalFits(st *SubIntervalStats) implausibility {
	inOrder := uint64(st.RxDatagrams - st.SeqErrDup - st.SeqErrOoo)
	other := uint64(st.SeqErrDup) + uint64(st.SeqErrOoo)
	switch {
	case p.tookInOrder+inOrder > p.dgrams+MaxPlan:
		return implTotal
	case p.tookBytes+st.RxBytes > p.bytes+(p.tookOther+other+MaxPlan)*p.maxLen:
		return implTotal
	}
	return implOK
}

// took adds a Sub-Interval the Load Sender took (after status found it
// plausible) to the totals totalFits checks.
func (p *plausible) took(st *SubIntervalStats) {
	if !p.on {
		return
	}
	p.tookInOrder += uint64(st.RxDatagrams - st.SeqErrDup - st.SeqErrOoo)
	p.tookOther += uint64(st.SeqErrDup) + uint64(st.SeqErrOoo)
	p.tookBytes += st.RxBytes
}

// statusSent records the send time (wall ns) of a Status PDU of ours.
func (p *plausible) statusSent(wall int64) {
	if !p.on {
		return
	}
	p.echo[p.echoN%echoRingLen] = wall
	p.echoN++
}

// load checks a Load PDU that arrived at now, last being the receiver's
// highest in-order sequence number and lastEcho the echo it last took.
func (p *plausible) load(h *LoadHeader, now clock.Time, last uint32, lastEcho int64) implausibility {
	if !p.on {
		return implOK
	}
	if h.SeqNo > last {
		us := int64(now-p.advanceAt)/1000 + int64(plausibleQueue/time.Microsecond)
		if uint64(h.SeqNo-last) > uint64(us)*maxRowDgramsPerSec/1_000_000+2*MaxPlan {
			return implLoadSeq
		}
	}
	if echo := clock.Join(h.SpduTimeSec, h.SpduTimeNsec); echo != 0 && echo != lastEcho && !p.echoed(echo) {
		return implEcho
	}
	if h.SeqNo > last {
		p.advanceAt = now
	}
	return implOK
}

// echoed reports whether echo can be one of our Status PDUs' send times:
// one of those remembered, or older than all of them.
func (p *plausible) echoed(echo int64) bool {
	n := min(p.echoN, echoRingLen)
	if n == 0 {
		return false
	}
	oldest := p.echo[(p.echoN-n)%echoRingLen]
	if n == echoRingLen && echo < oldest {
		return true
	}
	for i := 1; i <= n; i++ {
		if p.echo[(p.echoN-i)%echoRingLen] == echo {
			return true
		}
	}
	return false
}

// discard counts one impossible PDU and reports whether a warning line is
// due now.
func (p *plausible) discard() bool {
	p.discarded++
	if p.warned < len(implausibleWarnAt) && p.discarded == implausibleWarnAt[p.warned] {
		p.warned++
		p.lastSaid = p.discarded
		return true
	}
	return false
}

// unsaid reports whether discards came after the last line (for a last one
// at the end).
func (p *plausible) unsaid() bool { return p.discarded > p.lastSaid }
