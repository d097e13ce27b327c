package control

import (
	"net/netip"
	"time"
)

// Test Connections awaiting their Test Activation ("pending") hold a slot
// and a socket for up to SetupTimeout before anyone has shown that it
// receives at the address their Setup came from, so a flood of Setups
// (from forged or from many real sources) must not keep a client at
// another address out. When every slot is reserved (or, with -B, the
// bandwidth pool is), a new Setup makes room by evicting the oldest pending
// Test Connection of the source holding the most: a source gets in as long
// as it holds fewer than the heaviest, and a flood only ever evicts itself
// first. A real client activates within a round trip, long before a flood
// could make it the heaviest source's oldest. Running Test Connections are
// never evicted: a client asking for more slots than are free gets code 13
// at once, as from OB-UDPST.
const (
	// MaxPendingPerSource bounds the pending Test Connections of one
	// source (an IPv4 address, an IPv6 /64): far above one user's 24
	// connections, and above ten clients of 8 connections behind one
	// address (an office or a carrier-grade NAT) starting at once.
	MaxPendingPerSource = 128
)

// pendingSet is the pending Test Connections by source, oldest first. It
// is guarded by Server.mu.
type pendingSet struct {
	perSource int
	n         int
	bySource  map[netip.Addr][]*serverConn
}

func newPendingSet(perSource int) pendingSet {
	return pendingSet{perSource: perSource, bySource: map[netip.Addr][]*serverConn{}}
}

// sourceFull reports whether src has all the pending Test Connections one
// source may hold.
func (p *pendingSet) sourceFull(src netip.Addr) bool {
	return len(p.bySource[sourceKey(src)]) >= p.perSource
}

// protectAge shields a Test Connection awaiting activation from eviction
// by a Setup from a source holding as many as its own: a real client
// activates within a round trip, so one that has waited longer is more
// likely a flood's. (A source holding more is evicted from regardless.)
const protectAge = 500 * time.Millisecond

// victim is the Test Connection to evict to make room for a Setup from src
// at now: the oldest of the source holding the most, if that source holds
// more than src would with one more; if the heaviest hold only as many
// (a flood from many sources, one Setup each), the oldest of those that
// has waited longer than protectAge; nil otherwise.
func (p *pendingSet) victim(src netip.Addr, now time.Time) *serverConn {
	var heavy []*serverConn
	for _, l := range p.bySource {
		// Ties go to the source whose oldest is older.
		if len(l) > len(heavy) || (len(l) == len(heavy) && len(l) > 0 && l[0].seq < heavy[0].seq) {
			heavy = l
		}
	}
	own := len(p.bySource[sourceKey(src)])
	switch {
	case len(heavy) == 0 || len(heavy) < own+1:
		return nil
	case len(heavy) > own+1 || now.Sub(heavy[0].at) >= protectAge:
		return heavy[0]
	}
	return nil
}

// add puts sc, set up from sc.peer, in the set.
func (p *pendingSet) add(sc *serverConn) {
	k := sourceKey(sc.peer.Addr())
	p.bySource[k] = append(p.bySource[k], sc)
	p.n++
}

// remove takes sc out of the set, if it is there.
func (p *pendingSet) remove(sc *serverConn) bool {
	k := sourceKey(sc.peer.Addr())
	l := p.bySource[k]
	for i, c := range l {
		if c != sc {
			continue
		}
		l = append(l[:i], l[i+1:]...)
		if len(l) == 0 {
			delete(p.bySource, k)
		} else {
			p.bySource[k] = l
		}
		p.n--
		return true
	}
	return false
}
