package control

import (
	"net/netip"
	"time"
)

// Admission by source (docs/security.md, "Pending Test Connections" and
// "Admission under floods"). A source is an IPv4 address or an IPv6
// prefix (SourcePrefix6). A Test Connection awaiting its Test Activation
// ("pending") holds a slot and a socket for up to SetupTimeout before
// anyone has shown that it receives at the address its Setup came from:
// a forged Setup makes one, and an off-path attacker who sprays Test
// Activations over the test port range hits one of k pending connections
// with probability k/N per try. So:
//
//   - a source that has not shown it receives (no validated Test
//     Connection running or ended within TrustHold) holds at most
//     UnprovenPending pending Test Connections, plus a burst of up to
//     MaxPendingPerSource in all drawn from a bucket that refills slowly
//     (many clients behind one NAT starting at once: they are trusted as
//     soon as the first of them is validated);
//   - a trusted source holds up to MaxPendingPerSource;
//   - no source holds more than its running cap, pending and running
//     together (ServerOptions.MaxConnsPerSource);
//   - when every slot (or, with -B, the bandwidth) is reserved, a Setup
//     evicts the oldest pending Test Connection of another, unproven
//     source. A trusted source's
//     pending and every running Test Connection are never evicted. A real
//     client activates within a round trip, long before a flood makes its
//     Setup the oldest.
const (
	// MaxPendingPerSource bounds the pending Test Connections of one
	// source: ten clients of 8 connections behind one address (an office,
	// a carrier-grade NAT) starting at once fit.
	MaxPendingPerSource = 128
	// UnprovenPending bounds, outside the burst, the pending Test
	// Connections of a source that has not shown it receives: a blind
	// spray finds one of them in UnprovenPending/N tries of the test
	// port range's N (the arithmetic is in docs/security.md).
	UnprovenPending = 16
	// unprovenBurst and unprovenRefill are the bucket an unproven source
	// draws on beyond UnprovenPending: 112 at once, 112 a minute. Held by
	// an attacker, it adds on average unprovenRefill x SetupTimeout
	// (5.6) pending connections to the 16.
	unprovenBurst  = MaxPendingPerSource - UnprovenPending
	unprovenRefill = float64(unprovenBurst) / 60
	// TrustHold is how long a source stays trusted after its last
	// validated Test Connection ended: a client's next test in a row
	// (--repeat, a script) starts trusted.
	TrustHold = 30 * time.Second
	// DefaultMaxConnsPerSource caps a source's Test Connections, pending
	// and running: ten clients of 8 behind one NAT fit, one address no
	// longer holds all 254 slots.
	DefaultMaxConnsPerSource = 128
	// DefaultSourcePrefix6 groups IPv6 sources: a residential customer
	// is delegated a /56 (RIPE-690), as many /64s as an IPv4 customer
	// has one address, so a /64 cap would give one customer 256 times
	// the share of an IPv4 one.
	DefaultSourcePrefix6 = 56
)

// source is what the server knows of one source. Guarded by Server.mu.
type source struct {
	pending   []*serverConn // awaiting activation, oldest first
	running   int           // activated, not yet ended
	validated int           // running and validated by the Data Phase
	until     time.Time     // trusted until then after its last validated one ended
}

func (s *source) trusted(now time.Time) bool { return s.validated > 0 || now.Before(s.until) }

// pendingSet is the server's sources and their pending Test Connections.
// It is guarded by Server.mu.
type pendingSet struct {
	prefix6  int
	runCap   int
	n        int // pending in all
	sources  map[netip.Addr]*source
	burst    *sourceLimiter // an unproven source's bucket beyond UnprovenPending
	swept    time.Time
	maxTrust int // trusted-but-idle sources kept at most
}

func newPendingSet(prefix6, runCap int) pendingSet {
	if prefix6 <= 0 || prefix6 > 128 {
		prefix6 = DefaultSourcePrefix6
	}
	if runCap <= 0 {
		runCap = DefaultMaxConnsPerSource
	}
	return pendingSet{prefix6: prefix6, runCap: runCap, sources: map[netip.Addr]*source{},
		burst: newSourceLimiter(unprovenRefill, unprovenBurst), maxTrust: maxLimitedSources}
}

// key is the source an address counts as.
func (p *pendingSet) key(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		pf, _ := a.Prefix(p.prefix6)
		return pf.Addr()
	}
	return a
}

func (p *pendingSet) get(a netip.Addr) *source {
	k := p.key(a)
	s := p.sources[k]
	if s == nil {
		s = &source{}
		p.sources[k] = s
	}
	return s
}

// forget drops a source's entry once it holds nothing and is no longer
// trusted.
func (p *pendingSet) forget(a netip.Addr, now time.Time) {
	k := p.key(a)
	if s := p.sources[k]; s != nil && len(s.pending) == 0 && s.running == 0 && !s.trusted(now) {
		delete(p.sources, k)
	}
}

// Why a Setup is refused by its source's caps.
const (
	capOK      = iota
	capRunning // the source holds its running cap, pending and running together
	capPending // the source holds all the pending Test Connections it may
)

// admit says whether src may have one more pending Test Connection at
// now; it takes a token of the burst bucket when that is what lets it in.
func (p *pendingSet) admit(src netip.Addr, now time.Time) int {
	s := p.sources[p.key(src)]
	if s == nil {
		return capOK
	}
	switch own := len(s.pending); {
	case s.running+own >= p.runCap:
		return capRunning
	case own >= MaxPendingPerSource:
		return capPending
	case own < UnprovenPending || s.trusted(now):
		return capOK
	}
	if ok, _ := p.burst.allow(p.key(src), now); !ok {
		return capPending
	}
	return capOK
}

// hardFull reports whether src holds its running cap or
// MaxPendingPerSource pending Test Connections (admit's checks without the
// bucket).
func (p *pendingSet) hardFull(src netip.Addr) bool {
	s := p.sources[p.key(src)]
	return s != nil && (s.running+len(s.pending) >= p.runCap || len(s.pending) >= MaxPendingPerSource)
}

// victim is the pending Test Connection to evict to make room for a Setup
// from src, nil if none may be: the oldest pending one of another,
// unproven source. Oldest first: a real client activates within a round
// trip, so under a flood its Test Connections are the youngest, and a
// flood of F Setups a second over S slots gives each S/F seconds (2.5 s at
// 100 a second over 254 slots) before it is the oldest. A flood from one
// source is bounded by that source's caps, and its Test Connections age
// and go first like anyone's.
func (p *pendingSet) victim(src netip.Addr, now time.Time) *serverConn {
	me := p.sources[p.key(src)]
	var oldest *serverConn
	for _, s := range p.sources {
		if len(s.pending) == 0 || s == me || s.trusted(now) {
			continue
		}
		if c := s.pending[0]; oldest == nil || c.seq < oldest.seq {
			oldest = c
		}
	}
	return oldest
}

// add puts sc, set up from sc.peer, in the set.
func (p *pendingSet) add(sc *serverConn) {
	s := p.get(sc.peer.Addr())
	s.pending = append(s.pending, sc)
	p.n++
}

// remove takes sc out of the pending set, if it is there.
func (p *pendingSet) remove(sc *serverConn, now time.Time) bool {
	s := p.sources[p.key(sc.peer.Addr())]
	if s == nil {
		return false
	}
	for i, c := range s.pending {
		if c != sc {
			continue
		}
		s.pending = append(s.pending[:i], s.pending[i+1:]...)
		p.n--
		p.forget(sc.peer.Addr(), now)
		return true
	}
	return false
}

// started moves sc from pending to running.
func (p *pendingSet) started(sc *serverConn, now time.Time) {
	p.get(sc.peer.Addr()).running++
	p.remove(sc, now)
}

// validated records that sc's Data Phase saw its peer receive: its source
// is trusted from now on.
func (p *pendingSet) validated(sc *serverConn) {
	p.get(sc.peer.Addr()).validated++
}

// ended records the end of a running sc, validated or not.
func (p *pendingSet) ended(sc *serverConn, wasValidated bool, now time.Time) {
	s := p.get(sc.peer.Addr())
	s.running--
	if wasValidated {
		s.validated--
		s.until = now.Add(TrustHold)
		p.sweep(now)
	}
	p.forget(sc.peer.Addr(), now)
}

// sweep forgets idle sources whose trust has lapsed, at most every
// pruneEvery once the table holds more than maxTrust: sources a client
// validated from are kept TrustHold after their tests, so the table is
// bounded by the real clients of the last TrustHold.
func (p *pendingSet) sweep(now time.Time) {
	if len(p.sources) <= p.maxTrust || now.Sub(p.swept) < pruneEvery {
		return
	}
	p.swept = now
	for k, s := range p.sources {
		if len(s.pending) == 0 && s.running == 0 && !s.trusted(now) {
			delete(p.sources, k)
		}
	}
}
