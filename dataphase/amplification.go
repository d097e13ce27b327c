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
//     PDUs, each at most half of what the budget has left, so that two or
//     three small ones go out and the loss of one does not stall the test;
//  3. ends after Watchdog (3 s) if the peer has not shown it by then
//     (EndUnverified), or at once after maxUnproven Status PDUs that report
//     Load PDUs it never sent.
//
// What shows that the peer receives:
//
//   - downstream, a Status PDU whose tiRxDatagrams and tiRxBytes are those
//     of some of the Load PDUs sent so far (their sizes are random, and the
//     Load Receiver counts every one it got since activation in its first
//     Status PDU: OB-UDPST's and ours send none before the first Load PDU
//     and reset the trial counters only when they send one). A Status PDU
//     that reports none (the first was lost, and nothing was sent since)
//     proves nothing and is taken as a sign of life only: no rate
//     adjustment, no validation;
//   - upstream, a Load PDU that echoes the send time (spduTime, ns) of a
//     Status PDU the server sent, which only a receiver of it can know.
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
	// maxUnvalidated bounds the Load PDUs sent before validation, so the
	// proof's search is small (2^8 subsets).
	maxUnvalidated = 8
	// maxUnproven Status PDUs reporting Load PDUs that were never sent end
	// the test: a forger guessing sizes gets this many tries.
	maxUnproven = 3
	// statusEchoes is how many of its Status PDUs' send times an upstream
	// server remembers for the echo: the first echoFirst (each is echoed
	// by the Load PDUs sent until the next one arrives, so one of them
	// comes back unless the path loses everything) and a ring of the
	// latest (for a long path with a short Trial Interval, where the first
	// ones come back after the ring has moved on).
	statusEchoes = 64
	echoFirst    = 16
)

// ampGuard is the rule's state for one server Test Connection.
type ampGuard struct {
	on       bool       // the peer has not shown it receives yet
	in, out  int64      // UDP payload bytes received from and sent to the peer
	deadline clock.Time // validation is due by then

	// Downstream: the sizes of the Load PDUs sent before validation.
	sizes  [maxUnvalidated]uint16
	nSizes int
	// Upstream: the send times (wall ns) of Status PDUs sent (see
	// statusEchoes), and the last echo looked up.
	echoes     [statusEchoes]int64
	nEcho      int
	lastLookup int64

	unproven int
}

func (a *ampGuard) init(p *Params, start clock.Time) {
	*a = ampGuard{
		on:       p.Server,
		in:       int64(max(p.PeerBytesIn, 0)),
		out:      int64(max(p.PeerBytesOut, 0)),
		deadline: start + clock.Time(Watchdog),
	}
}

// budget is what may still be sent to the peer (negative: nothing).
func (a *ampGuard) budget() int64 { return AmpFactor*a.in - a.out }

// sizeCap is the largest Load PDU that may go next with pending bytes
// already planned and not yet sent: half of what the budget has left, but
// at least lo, and 0 (none) when even lo does not fit or maxUnvalidated
// were sent.
func (a *ampGuard) sizeCap(pending int64, lo uint32) uint32 {
	left := a.budget() - pending
	if a.nSizes >= maxUnvalidated || left < int64(lo) {
		return 0
	}
	return uint32(max(int64(lo), min(left/2, MaxJumboPayload)))
}

// sentLoad records Load PDUs the kernel accepted.
func (a *ampGuard) sentLoad(l uint16) {
	a.out += int64(l)
	if a.nSizes < maxUnvalidated {
		a.sizes[a.nSizes] = l
		a.nSizes++
	}
}

// sentStatus records a Status PDU sent at wall time spdu (ns).
func (a *ampGuard) sentStatus(l int, spdu int64) {
	a.out += int64(l)
	i := a.nEcho
	if i >= echoFirst {
		i = echoFirst + (i-echoFirst)%(statusEchoes-echoFirst)
	}
	a.echoes[i] = spdu
	a.nEcho++
}

// echoed reports whether spdu is the send time of one of our Status PDUs.
// Every Load PDU carries an echo and most repeat the previous one, which
// is looked up once.
func (a *ampGuard) echoed(spdu int64) bool {
	if spdu == 0 || spdu == a.lastLookup {
		return false
	}
	a.lastLookup = spdu
	for i := range min(a.nEcho, statusEchoes) {
		if a.echoes[i] == spdu {
			return true
		}
	}
	return false
}

// proves reports whether count datagrams of bytes in total are some of the
// Load PDUs sent before validation: a subset of exactly count of them
// adds up to bytes. The search is over at most 2^maxUnvalidated subsets
// and runs only for the few Status PDUs before validation.
func (a *ampGuard) proves(count, bytes uint32) bool {
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
