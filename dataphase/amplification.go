package dataphase

import "github.com/udpstp/udpstp/clock"

// The server's anti-amplification rule, in the manner of RFC 9000 section
// 8.1 (docs/security.md, "Anti-amplification").
//
// UDP source addresses can be forged: a Test Activation Request that says
// it comes from B may come from an attacker, and whatever the server sends
// then goes to B. So, until the peer has shown that it receives what the
// server sends to it, a server's Test Connection
//
//  1. sends towards the peer at most AmpFactor times the UDP payload bytes
//     it received from it: the Control Phase's (Params.PeerBytesIn) and
//     every datagram the connected socket took since, valid or not, less
//     what it sent already (Params.PeerBytesOut, then every Load or Status
//     PDU the kernel accepted);
//  2. as a downstream Load Sender, sends row 0 whatever row was asked
//     (OB-UDPST 9.0.0 sends row 0 until the first Status PDU for a fixed
//     row; we do so for a starting row too), at most maxUnvalidated Load
//     PDUs, each of a size drawn uniformly between the smallest and
//     preProofMax, and one only when the budget holds preProofMax, so that
//     no size is forced (the initial budget of 208 bytes gives two);
//  3. ends after Watchdog (3 s) if the peer has not shown it by then
//     (EndUnverified), or at once after maxUnproven Status PDUs that fail
//     the proof.
//
// What shows that the peer receives (the proof of receipt, built only from
// fields an unmodified OB-UDPST 9.0.0 client fills in by itself):
//
//   - downstream, a Status PDU that passes two checks. The sizes: its
//     tiRxDatagrams and tiRxBytes are those of some of the Load PDUs sent
//     so far (the Load Receiver counts every one it got since activation
//     in its first Status PDU: OB-UDPST's and ours send none before the
//     first Load PDU and reset the trial counters only when they send
//     one). The clock: every Load PDU sent before the proof carries an
//     lpduTime shift.ms in the past, a secret drawn at activation; the
//     Load Receiver reports the smallest (receive time - lpduTime) it saw
//     as clockDeltaMin (RFC 9946 section 6.2), which is then its clock's
//     offset plus the one-way delay plus the secret, and the Status PDU's
//     own send time (spduTime) cancels the offset (clockCheck). A Status
//     PDU that reports no Load PDU (the first was lost, and nothing was
//     sent since) proves nothing and is taken as a sign of life only: no
//     rate adjustment, no validation;
//   - upstream, a Load PDU that echoes the spduTime of a Status PDU the
//     server sent (RFC 9946 section 6.1): before the proof those carry
//     their true second and a secret random nanosecond field, which only a
//     receiver of them can know; the echo maps back to the true send time
//     for the round-trip time.
//
// The Control Phase, which sees the Setup's source, binds the Test
// Activation to it; this rule bounds what a forged activation can still
// get (to its own address, or to one it guessed a test port for). After
// validation the normal rates apply, and the kernel's source filter (the
// socket is connected to the activated peer; engine.Socket.Connect
// discards what was queued before) keeps anyone else's PDUs out.
const (
	// AmpFactor is how many times what it received from a peer a server
	// sends towards it before the peer has shown it receives (RFC 9000's
	// factor).
	AmpFactor = 3
	// maxUnvalidated bounds the Load PDUs sent before validation: two from
	// the initial budget, one more once a Status PDU reporting nothing (the
	// genuine first one lost) added budget. Each size more helps a
	// forger's best guess (docs/security.md: 4.7 bits with two, 4.2 with
	// three, 3.2 with four).
	maxUnvalidated = 3
	// preProofMax is the largest pre-proof Load PDU: half of the initial
	// budget (3 x 104 received - 104 sent), so two fit and each is drawn
	// from the whole range.
	preProofMax = 104
	// maxUnproven Status PDUs that fail the proof end the test: a forger
	// gets this many guesses per activation. A genuine peer's first Status
	// PDU passes unless its round trip exceeds proofMaxRTT.
	maxUnproven = 2
	// statusEchoes is how many of its Status PDUs' send times an upstream
	// server remembers for the echo: the first echoFirst (each is echoed
	// by the Load PDUs sent until the next one arrives, so one of them
	// comes back unless the path loses everything) and a ring of the
	// latest (for a long path with a short Trial Interval, where the first
	// ones come back after the ring has moved on).
	statusEchoes = 64
	echoFirst    = 16
)

// The clock proof's secret and window, in ms.
const (
	// The shift is drawn uniformly from [shiftMin, shiftMax). shiftMin
	// keeps every shifted delta above any true one, so the first Load PDU
	// with a true time brings the peer's clockDeltaMin back to its true
	// value; shiftMax keeps offset + delay + shift within the int32
	// clockDeltaMin for any clock within 6 days of ours (beyond: keepShift).
	shiftMin = 1024
	shiftMax = 3 << 29
	// proofMinRTT and proofMaxRTT bound what the check computes, the least
	// one-way delay down plus the Status PDU's delay up: rounding to ms on
	// both ends can make a loopback's 0 read -2; a round trip above 3 s
	// cannot prove receipt within the 3 s the rule waits for it anyway.
	proofMinRTT = -10
	proofMaxRTT = 3000
)

// ampGuard is the rule's state for one server Test Connection.
type ampGuard struct {
	on       bool       // the peer has not shown it receives yet
	in, out  int64      // UDP payload bytes received from and sent to the peer
	deadline clock.Time // validation is due by then

	// secret is the stream the proof's secrets come from (the shift, the
	// Status PDUs' nanoseconds), seeded from the server's crypto/rand seed.
	secret splitmix

	// Downstream: the sizes of the Load PDUs sent before validation, the
	// smallest size, and the shift of their lpduTime (ms, ns).
	sizes     [maxUnvalidated]uint16
	nSizes    int
	unused    int64 // what they took of the budget less their sizes (sizeCap)
	lo        uint32
	shiftMs   int64
	shiftNs   int64
	keepShift bool // the peer's clockDeltaMin overflowed: shift to the end

	// Upstream: the spduTime (wall ns) our Status PDUs carried before
	// validation (see statusEchoes) and their true send times, and the
	// last echo looked up.
	echoes     [statusEchoes]int64
	trueTimes  [statusEchoes]int64
	nEcho      int
	lastLookup int64
	lastTrue   int64
	lastFound  bool

	unproven int
}

func (a *ampGuard) init(p *Params, start clock.Time) {
	*a = ampGuard{
		on:       p.Server,
		in:       int64(max(p.PeerBytesIn, 0)),
		out:      int64(max(p.PeerBytesOut, 0)),
		deadline: start + clock.Time(Watchdog),
		secret:   splitmix{p.Seed ^ 0x5851F42D4C957F2D},
		lo:       MinPayloadIPv4,
	}
	if p.IPv6 {
		a.lo = MinPayloadIPv6
	}
	a.shiftMs = shiftMin + int64(a.secret.next()%(shiftMax-shiftMin))
	a.shiftNs = a.shiftMs * 1_000_000
}

// budget is what may still be sent to the peer (negative: nothing).
func (a *ampGuard) budget() int64 { return AmpFactor*a.in - a.out }

// sizeCap is the largest Load PDU that may go next with pending Load PDUs
// already planned and not yet sent: preProofMax, and 0 (none) when the
// budget left does not hold it or maxUnvalidated were sent. Each Load PDU
// takes preProofMax of the budget whatever its size, so how many go out
// tells nothing of their sizes; a smaller cap would narrow the draw, and
// the smallest size would be forced.
func (a *ampGuard) sizeCap(pending int) uint32 {
	left := a.budget() - a.unused - int64(pending)*preProofMax
	if a.nSizes >= maxUnvalidated || left < preProofMax {
		return 0
	}
	return preProofMax
}

// sentLoad records Load PDUs the kernel accepted.
func (a *ampGuard) sentLoad(l uint16) {
	a.out += int64(l)
	if a.nSizes < maxUnvalidated {
		a.sizes[a.nSizes] = l
		a.nSizes++
		a.unused += preProofMax - int64(min(l, preProofMax))
	}
}

// shifting reports whether Load PDUs carry the shifted lpduTime.
func (a *ampGuard) shifting() bool { return a.on || a.keepShift }

// statusTime is the spduTime a Status PDU written at wall time now (ns)
// carries: before validation its nanoseconds are secret.
func (a *ampGuard) statusTime(now int64) int64 {
	if !a.on {
		return now
	}
	sec, _ := clock.Split(now)
	return clock.Join(sec, uint32(a.secret.next()%1_000_000_000))
}

// sentStatus records a Status PDU of l bytes sent at wall time now (ns)
// carrying spduTime wire.
func (a *ampGuard) sentStatus(l int, wire, now int64) {
	a.out += int64(l)
	i := a.nEcho
	if i >= echoFirst {
		i = echoFirst + (i-echoFirst)%(statusEchoes-echoFirst)
	}
	a.echoes[i], a.trueTimes[i] = wire, now
	a.nEcho++
}

// echoed looks up spdu, a Load PDU's echo, among the spduTimes our Status
// PDUs carried before validation, and returns the true send time of the
// one it matches. Every Load PDU carries an echo and most repeat the
// previous one, which is looked up once.
func (a *ampGuard) echoed(spdu int64) (int64, bool) {
	if spdu == a.lastLookup {
		return a.lastTrue, a.lastFound
	}
	a.lastLookup, a.lastFound = spdu, false
	if spdu == 0 {
		return 0, false
	}
	for i := range min(a.nEcho, statusEchoes) {
		if a.echoes[i] == spdu {
			a.lastTrue, a.lastFound = a.trueTimes[i], true
			break
		}
	}
	return a.lastTrue, a.lastFound
}

// proves reports whether a Status PDU received at wall time rx (ns) proves
// receipt: its sizes are some of the Load PDUs sent and its clock passes
// clockCheck. On success it decides whether the shift must stay.
func (a *ampGuard) proves(s *StatusPDU, rx int64) bool {
	if !a.sizesMatch(s.TiRxDatagrams, s.TiRxBytes) {
		return false
	}
	ok, overflow := clockCheck(s.ClockDeltaMin, clock.Join(s.SpduTimeSec, s.SpduTimeNsec), rx, a.shiftMs)
	if ok {
		a.keepShift = overflow
	}
	return ok
}

// clockCheck is the clock half of the proof. The peer's clockDeltaMin is
// d + shift (ms, int32 as OB-UDPST computes it: wrapped), where d is its
// clock's offset from ours plus the least one-way delay; rx - spdu is
// minus that offset plus the Status PDU's own delay. So
//
//	x = clockDeltaMin - shift + (rx - spdu)
//
// is the least delay down plus the delay up, whatever the clocks say, and
// lies within [proofMinRTT, proofMaxRTT] for a genuine peer; a forger must
// guess the shift to within that window. All sums are modulo 2^32, as the
// peer's are. overflow reports that d + shift wrapped at the peer (its
// clock days ahead of ours): its clockDeltaMin then stays below any true
// delta, so the Load PDUs must keep the shift for its delay variation to
// stay right.
func clockCheck(clockDeltaMin int32, spdu, rx, shiftMs int64) (ok, overflow bool) {
	up := uint32(roundMs(rx - spdu))
	d := int32(uint32(clockDeltaMin) - uint32(shiftMs))
	x := int32(uint32(d) + up)
	return x >= proofMinRTT && x <= proofMaxRTT, clockDeltaMin < d
}

// sizesMatch reports whether count datagrams of bytes in total are some of
// the Load PDUs sent before validation: a subset of exactly count of them
// adds up to bytes. The search is over at most 2^maxUnvalidated subsets
// and runs only for the few Status PDUs before validation.
func (a *ampGuard) sizesMatch(count, bytes uint32) bool {
	if count == 0 || int(count) > a.nSizes {
		return false
	}
	for m := uint32(1); m < 1<<a.nSizes; m++ {
		n, sum := uint32(0), uint32(0)
		for i := 0; i < a.nSizes; i++ {
			if m&(1<<i) != 0 {
				n++
				sum += uint32(a.sizes[i])
			}
		}
		if n == count && sum == bytes {
			return true
		}
	}
	return false
}

// splitmix is SplitMix64: the proof's secrets, from the server's 64-bit
// seed (drawn from crypto/rand at each activation). An off-path forger
// sees none of its outputs; one on the path needs none of them.
type splitmix struct{ s uint64 }

func (x *splitmix) next() uint64 {
	x.s += 0x9E3779B97F4A7C15
	z := x.s
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}
