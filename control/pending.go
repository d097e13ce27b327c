package control

import "net/netip"

// Test Connections awaiting their Test Activation ("pending") have a budget
// of their own, apart from the running ones: a Setup Request costs the
// server a socket for up to SetupTimeout before anyone has shown that it
// receives at the address it came from, so a flood of them (from forged
// or from many real sources) must not keep a client at another address
// out. When the budget is full, a new Setup makes room by evicting the
// oldest pending Test Connection of the source holding the most: a source
// gets in as long as it holds fewer than the heaviest, and a flood only
// ever evicts itself first. A real client activates within a round trip,
// long before a flood could make it the heaviest source's oldest.
const (
	// pendingPerSlot sizes the pending budget: this many times the
	// Test Connection slots (--max-connections).
	pendingPerSlot = 4
	// MaxPendingPerSource bounds the pending Test Connections of one
	// source (an IPv4 address, an IPv6 /64): far above one user's 24
	// connections, and above ten clients of 8 connections behind one
	// address (an office or a carrier-grade NAT) starting at once.
	MaxPendingPerSource = 128
)

// pendingSet is the pending Test Connections by source, oldest first. It
// is guarded by Server.mu.
type pendingSet struct {
	max, perSource int
	n              int
	bySource       map[netip.Addr][]*serverConn
}

func newPendingSet(max, perSource int) pendingSet {
	return pendingSet{max: max, perSource: perSource, bySource: map[netip.Addr][]*serverConn{}}
}

// sourceFull reports whether src has all the pending Test Connections one
// source may hold.
func (p *pendingSet) sourceFull(src netip.Addr) bool {
	return len(p.bySource[sourceKey(src)]) >= p.perSource
}

// full reports whether the pending budget is used up.
func (p *pendingSet) full() bool { return p.n >= p.max }

// victim is the Test Connection to evict to make room for a Setup from
// src: the oldest of the source holding the most, if that source holds
// more than src would with one more; nil otherwise.
func (p *pendingSet) victim(src netip.Addr) *serverConn {
	var heavy []*serverConn
	for _, l := range p.bySource {
		// Ties go to the source whose oldest is older.
		if len(l) > len(heavy) || (len(l) == len(heavy) && len(l) > 0 && l[0].seq < heavy[0].seq) {
			heavy = l
		}
	}
	if len(heavy) == 0 || len(heavy) < len(p.bySource[sourceKey(src)])+1 {
		return nil
	}
	return heavy[0]
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
