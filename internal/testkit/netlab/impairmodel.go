package netlab

import (
	"encoding/binary"
	"math/rand/v2"
)

// impairModel makes the relay's decisions for one direction: when each
// packet leaves, and whether a matching packet is lost, duplicated or held
// back. It does no I/O and reads no clock, so tests replay it exactly.
//
// Two PCG streams keep it reproducible whatever else crosses the relay:
// the match stream draws exactly four values per matching packet (loss,
// state move, duplication, reordering, in that order, whether or not the
// impairment uses them), so the k-th matching packet's fate depends only
// on the seed, the direction and k; the jitter stream draws one value per
// packet.
type impairModel struct {
	m      Impairment
	bad    bool // Gilbert-Elliott state
	match  rand.PCG
	jitter rand.PCG
	lastAt int64 // release time of the last packet not held back (ns)
}

// fate is what the model decided for one packet.
type fate struct {
	at      int64 // release time, ns on the arrival clock
	lost    bool
	dup     bool
	reorder bool // held back by ReorderBy
}

// newImpairModel seeds a model for direction dir.
func newImpairModel(m Impairment, seed uint64, dir Direction) impairModel {
	d := uint64(dir)
	var im impairModel
	im.m = m
	im.match.Seed(seed, 2*d+1)
	im.jitter.Seed(seed, 2*d+2)
	return im
}

// draw returns true with probability pct percent.
func draw(g *rand.PCG, pct float64) bool {
	// 53 random bits as a float in [0, 1): 100 % always hits, 0 never.
	return float64(g.Uint64()>>11)*0x1p-53*100 < pct
}

// decide returns the fate of a packet that arrived at ns (on any
// monotonic clock) and that the scope selected (matching) or not.
func (im *impairModel) decide(arrival int64, matching bool) fate {
	var f fate
	if matching {
		lossPct, movePct := im.m.Loss.LossGood, im.m.Loss.P
		if im.bad {
			lossPct, movePct = im.m.Loss.LossBad, im.m.Loss.R
		}
		f.lost = draw(&im.match, lossPct)
		if draw(&im.match, movePct) {
			im.bad = !im.bad
		}
		f.dup = draw(&im.match, im.m.DupPct)
		f.reorder = draw(&im.match, im.m.ReorderPct)
	}
	d := int64(im.m.Delay)
	if j := int64(im.m.Jitter); j > 0 {
		// Uniform in [-j, +j]; the modulo bias of 2j+1 in 2^64 is nil.
		d += int64(im.jitter.Uint64()%uint64(2*j+1)) - j
	} else {
		im.jitter.Uint64() // one draw per packet whatever the jitter
	}
	f.at = arrival + max(d, 0)
	if f.at < im.lastAt {
		f.at = im.lastAt // jitter never reorders
	}
	if f.lost {
		return f
	}
	im.lastAt = f.at
	if f.reorder {
		f.at += int64(im.m.ReorderBy)
	}
	return f
}

// matches reports whether IP packet p is in scope: an unfragmented UDP
// datagram whose payload starts with the Load PDU identifier
// (LossLoadPDUs), or any UDP packet, fragments included (LossAllUDP).
// Anything it cannot parse does not match.
func matches(p []byte, scope LossScope) bool {
	var udp int // offset of the UDP header; -1 for a non-first fragment
	switch {
	case len(p) >= 20 && p[0]>>4 == 4:
		ihl := int(p[0]&0x0f) * 4
		if ihl < 20 || p[9] != 17 {
			return false
		}
		frag := binary.BigEndian.Uint16(p[6:]) & 0x3fff // MF and the offset
		if frag != 0 {
			return scope == LossAllUDP
		}
		udp = ihl
	case len(p) >= 40 && p[0]>>4 == 6:
		switch p[6] {
		case 17:
			udp = 40
		case 44: // Fragment header: UDP only if it says so
			return scope == LossAllUDP && len(p) >= 48 && p[40] == 17
		default:
			return false
		}
	default:
		return false
	}
	if scope == LossAllUDP {
		return true
	}
	return len(p) >= udp+10 && binary.BigEndian.Uint16(p[udp+8:]) == loadPDUID
}

// multicast reports whether IP packet p is addressed to a multicast group
// (224.0.0.0/4, ff00::/8).
func multicast(p []byte) bool {
	switch p[0] >> 4 {
	case 4:
		return len(p) >= 20 && p[16]&0xf0 == 0xe0
	case 6:
		return len(p) >= 40 && p[24] == 0xff
	}
	return false
}
