package dataphase

import (
	"fmt"
	"time"
)

// policer is the server's over-rate policing of an upstream Load Sender,
// on what the socket really received since polStart (wall ns): every
// datagram's real length, valid or not. assigned is nil when it is off.
type policer struct {
	assigned  []float64 // nominal Mbps of the rows of the last policeWindow of Status PDUs
	nextSlot  int
	lastRow   int // the row whose rate is lastMbps; -1: none yet
	lastMbps  float64
	overCount int
	polStart  int64
	polBytes  uint64
	polDgrams uint64
}

// policeWindow is how far back the rows a Load Sender was assigned count
// when the server polices it: datagrams sent under a higher row are still
// arriving after a rate cut for a round trip and a queue's worth of time, a
// second and more on a congested upload link with a deep buffer.
const policeWindow = 2 * time.Second

// start turns the policer on at wall time now (ns), with a window of
// policeWindow for Status PDUs every trial.
func (p *policer) start(trial time.Duration, now int64) {
	n := 2
	if trial > 0 {
		n = max(n, int(policeWindow/trial))
	}
	p.assigned, p.lastRow = make([]float64, n), -1
	p.polStart = now
}

// received counts a datagram of n bytes the socket received, valid or not.
func (p *policer) received(n int) {
	if p.assigned != nil {
		p.polBytes += uint64(n)
		p.polDgrams++
	}
}

// noteAssigned records the row the next Status PDU assigns (its rate is
// recomputed only when the row changes).
func (c *Conn) noteAssigned() {
	if c.assigned == nil {
		return
	}
	if i := int(c.rc.Index()); i != c.lastRow {
		c.lastRow, c.lastMbps = i, c.rowMbps(uint16(i))
	}
	c.assigned[c.nextSlot] = c.lastMbps
	c.nextSlot = (c.nextSlot + 1) % len(c.assigned)
}

// police stops a Load Sender that runs above 1.5 times its assigned rate
// for 3 Trial Intervals in a row (docs/security.md: the server polices
// the rate it assigns). The assigned rate is the highest row of the last
// policeWindow of Status PDUs; two jumbo datagrams of slack keep row 0's
// random sizes from tripping it. What counts is what the socket really received: every
// datagram since the last Trial Interval, valid or not, at its real
// length (recvmmsg's, not the Load PDU's udpPayload claim, which a sender
// may set to anything: an upstream client assigned 0.11 Mbps sent 94 for
// a whole test by claiming 0).
func (c *Conn) police(nowWall int64) {
	if over, bits, assigned := c.policer.judge(nowWall, L3Overhead(c.p.IPv6)); over {
		c.warn(WarnError, fmt.Sprintf("ERROR: Load sender above 1.5x its assigned rate (%.2f Mbps received, %.2f assigned) for 3 trial intervals", bits, assigned), true)
		c.end(EndOverRate)
	}
}

// judge closes the Trial Interval at wall time now (ns): the rate received
// in it (Mbps, at L3 with overhead bytes per datagram), the rate assigned,
// and whether it was over for the third time in a row.
func (p *policer) judge(now int64, overhead int) (over bool, bits, assigned float64) {
	us := roundUs(now - p.polStart)
	if us <= 0 {
		return false, 0, 0
	}
	bytes, dgrams := p.polBytes, p.polDgrams
	p.polStart, p.polBytes, p.polDgrams = now, 0, 0
	bits = float64((bytes+dgrams*uint64(overhead))*8) / float64(us) // Mbps
	for _, m := range p.assigned {
		assigned = max(assigned, m)
	}
	slack := float64(2*9000*8) / float64(us)
	if bits > 1.5*assigned+slack {
		p.overCount++
	} else {
		p.overCount = 0
	}
	return p.overCount >= 3, bits, assigned
}
