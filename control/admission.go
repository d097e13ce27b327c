package control

import "sync"

// admission keeps the server's budget: Test Connection slots and, with -B,
// one bandwidth pool per direction (wire.md 2.1.2, measurement.md 8.1).
type admission struct {
	mu       sync.Mutex
	maxConns int
	maxBW    int // Mbps per direction; 0: no bandwidth Admission
	conns    int
	used     [2]int // [downstream, upstream] Mbps reserved
}

// grant is one accepted Test Connection's reservation.
type grant struct {
	up  bool
	mbw int
}

// checkBandwidth returns the Setup code the bandwidth rules give a request
// (0, SetupNoMaxBW or SetupCapExceeded) without reserving anything.
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
	if a.used[dirIndex(maxBandwidth)]+mbw > a.maxBW {
		return SetupCapExceeded
	}
	return 0
}

// reserve takes a slot and the bandwidth, or returns the code that refuses
// them: the pool may have filled between the check and the reservation.
func (a *admission) reserve(maxBandwidth uint16) (grant, uint8) {
	a.mu.Lock()
	defer a.mu.Unlock()
	g := grant{up: maxBandwidth&MaxBandwidthUpstream != 0}
	if a.maxBW > 0 {
		g.mbw = int(maxBandwidth & MaxBandwidthMask)
		if a.used[dirIndex(maxBandwidth)]+g.mbw > a.maxBW {
			return grant{}, SetupCapExceeded
		}
	}
	if a.conns >= a.maxConns {
		return grant{}, SetupConnFail
	}
	a.conns++
	a.used[dirIndex(maxBandwidth)] += g.mbw
	return g, 0
}

// release returns a reservation. (OB-UDPST releases from the pool of the
// Test Activation's direction when one arrived; a client whose bit 15
// disagreed would drain the wrong pool. We release what was reserved.)
func (a *admission) release(g grant) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.conns--
	i := 0
	if g.up {
		i = 1
	}
	a.used[i] = max(0, a.used[i]-g.mbw)
}

// snapshot returns the Test Connections and bandwidth in use.
func (a *admission) snapshot() (conns, down, up int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conns, a.used[0], a.used[1]
}

func dirIndex(maxBandwidth uint16) int {
	if maxBandwidth&MaxBandwidthUpstream != 0 {
		return 1
	}
	return 0
}
