package control

import (
	"net/netip"
	"sync"
	"time"

	"github.com/udpstp/udpstp/internal/sourcekey"
)

// admission keeps the server's budget: Test Connection slots and, with -B,
// one bandwidth pool per direction (-B; the Setup checks in the package doc).
// Both are reserved at Setup, as OB-UDPST does, so a client asking for
// more connections than there are slots gets code 13 at once; what Test
// Connections awaiting their activation hold can be evicted by a newer
// Setup (pending.go, Server.admitSetup), so a flood of Setup Requests
// cannot hold the slots of running tests or keep a new client out.
type admission struct {
	mu       sync.Mutex
	maxConns int
	maxBW    int    // Mbps per direction; 0: no bandwidth Admission
	conns    int    // allocated: awaiting activation or running
	active   int    // running: activated
	used     [2]int // [downstream, upstream] Mbps reserved, pending and running
	activeBW [2]int // the part of used held by running Test Connections
	peak     [3]int // most conns, down, up in use since the last peaks()
}

// grant is one accepted Test Connection's reservation.
type grant struct {
	dir    int // the pool: dirIndex of the request's maxBandwidth
	mbw    int
	active bool // its Test Connection was activated
}

// checkBandwidth returns the Setup code the bandwidth rules give a request
// (0, SetupNoMaxBW or SetupCapExceeded) without reserving anything. Only
// running Test Connections count: what pending ones hold can be evicted.
func (a *admission) checkBandwidth(maxBandwidth uint16) uint8 {
	if a.maxBW == 0 {
		return 0
	}
	mbw := int(maxBandwidth & MaxBandwidthMask)
	if mbw == 0 {
		return SetupNoMaxBW
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.activeBW[dirIndex(maxBandwidth)]+mbw > a.maxBW {
		return SetupCapExceeded
	}
	return 0
}

// reserve takes a slot and the bandwidth for a Setup, or returns the code
// that refuses them: SetupConnFail when every slot is reserved,
// SetupCapExceeded when the pool cannot hold the bandwidth (pending
// reservations included, which the caller may evict to make room).
func (a *admission) reserve(maxBandwidth uint16) (grant, uint8) {
	a.mu.Lock()
	defer a.mu.Unlock()
	g := grant{dir: dirIndex(maxBandwidth)}
	if a.conns >= a.maxConns {
		return grant{}, SetupConnFail
	}
	if a.maxBW > 0 {
		g.mbw = int(maxBandwidth & MaxBandwidthMask)
		if a.used[g.dir]+g.mbw > a.maxBW {
			return grant{}, SetupCapExceeded
		}
	}
	a.conns++
	a.used[g.dir] += g.mbw
	a.notePeak()
	return g, 0
}

// activate marks a reservation whose Test Activation came: it can no
// longer be evicted, and its bandwidth counts as running.
func (a *admission) activate(g *grant) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.active++
	a.activeBW[g.dir] += g.mbw
	g.active = true
}

// release returns a reservation. (OB-UDPST releases from the pool of the
// Test Activation's direction when one arrived; a client whose bit 15
// disagreed would drain the wrong pool. We release what was reserved.)
func (a *admission) release(g grant) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.conns--
	a.used[g.dir] = max(0, a.used[g.dir]-g.mbw)
	if g.active {
		a.active--
		a.activeBW[g.dir] = max(0, a.activeBW[g.dir]-g.mbw)
	}
}

// snapshot returns the Test Connections reserved (awaiting activation or
// running) and the bandwidth reserved per direction.
func (a *admission) snapshot() (conns, down, up int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conns, a.used[0], a.used[1]
}

// dirIndex is the pool a request's maxBandwidth draws on: 0 downstream, 1
// upstream.
func dirIndex(maxBandwidth uint16) int {
	if maxBandwidth&MaxBandwidthUpstream != 0 {
		return 1
	}
	return 0
}

// peaks returns the most Test Connections and bandwidth per direction in
// use at once since the last call, and starts the next period at the
// values in use now (the -G records' "maximum allocated").
func (a *admission) peaks() (conns, down, up int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	conns, down, up = a.peak[0], a.peak[1], a.peak[2]
	a.peak = [3]int{a.conns, a.used[0], a.used[1]}
	return conns, down, up
}

// notePeak raises the peaks to the values in use; a.mu is held.
func (a *admission) notePeak() {
	a.peak[0] = max(a.peak[0], a.conns)
	a.peak[1] = max(a.peak[1], a.used[0])
	a.peak[2] = max(a.peak[2], a.used[1])
}

// sourceLimiter bounds the Setup Requests each source may have handled: a
// token bucket per source address (an IPv6 source by its /64, which one
// host usually owns whole), refilled at rate per second up to burst.
// Requests beyond it are dropped before they are even decoded, so a flood
// from one source costs neither sockets nor HMAC checks, and other sources
// keep getting in. The table is bounded: when full, sources whose bucket
// has refilled are forgotten, and if none has, new sources share one
// bucket until room is made.
type sourceLimiter struct {
	mu      sync.Mutex
	rate    float64 // tokens per second; 0: no limit
	burst   float64
	buckets map[netip.Addr]*bucket
	shared  bucket    // for new sources while the table is full
	pruned  time.Time // the last prune
}

// pruneEvery bounds how often a full source table is swept.
const pruneEvery = 100 * time.Millisecond

type bucket struct {
	tokens float64
	last   time.Time
	warned bool // the source was reported as limited since it last had a full bucket
}

// maxLimitedSources bounds the per-source table.
const maxLimitedSources = 4096

func newSourceLimiter(rate float64, burst int) *sourceLimiter {
	if rate <= 0 {
		return &sourceLimiter{}
	}
	b := float64(max(burst, 1))
	return &sourceLimiter{rate: rate, burst: b, buckets: map[netip.Addr]*bucket{}, shared: bucket{tokens: b}}
}

// allow takes a token for a request from src at now. It reports whether
// the request may be handled and, when it may not, whether this is the
// first refusal since the source last had a full bucket (worth one log
// line).
func (l *sourceLimiter) allow(src netip.Addr, now time.Time) (ok, first bool) {
	if l == nil || l.rate <= 0 {
		return true, false
	}
	key := sourcekey.Of(src)
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxLimitedSources && now.Sub(l.pruned) >= pruneEvery {
			// At most every pruneEvery: a flood from ever new sources would
			// otherwise scan the whole table for every datagram.
			l.prune(now)
			l.pruned = now
		}
		if len(l.buckets) >= maxLimitedSources {
			b = &l.shared
		} else {
			b = &bucket{tokens: l.burst, last: now}
			l.buckets[key] = b
		}
	}
	l.refill(b, now)
	if b.tokens >= 1 {
		b.tokens--
		return true, false
	}
	first = !b.warned
	b.warned = true
	return false, first
}

func (l *sourceLimiter) refill(b *bucket, now time.Time) {
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(l.burst, b.tokens+d.Seconds()*l.rate)
	}
	b.last = now
	if b.tokens >= l.burst {
		b.warned = false
	}
}

// prune forgets the sources whose bucket is full again: they are no
// different from a source never seen.
func (l *sourceLimiter) prune(now time.Time) {
	for k, b := range l.buckets {
		l.refill(b, now)
		if b.tokens >= l.burst {
			delete(l.buckets, k)
		}
	}
}
