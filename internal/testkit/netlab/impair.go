package netlab

import (
	"fmt"
	"math"
	"time"
)

// Impairment is what the relay (see Relay in the package doc) does to one
// direction before the direction's tbf: what netem would do, were it
// available. The zero value passes every packet at once. Delay and Jitter
// apply to every packet of the direction; reordering, duplication and
// loss only to the packets Scope selects, so that a test can still start
// and the counts compare with what a receiver counts.
type Impairment struct {
	// Delay is the fixed one-way delay added to every packet (RTT 100 ms
	// is 50 ms in each direction). At most MaxRelayDelay.
	Delay time.Duration
	// Jitter adds to each packet's delay a uniform draw in [-Jitter,
	// +Jitter] (the delay is floored at 0). It never reorders: a packet is
	// never released before the one that arrived ahead of it, as behind a
	// queue whose service time varies. Reordering is ReorderPct's job.
	Jitter time.Duration
	// ReorderPct is the probability in percent that a matching packet is
	// held back ReorderBy beyond its delay, so that the packets behind it
	// overtake it. Whether one did is counted (RelayStats.Reordered).
	ReorderPct float64
	// ReorderBy is how long a reordered packet is held back; 0 means
	// DefaultReorderBy.
	ReorderBy time.Duration
	// DupPct is the probability in percent that a matching packet is sent
	// twice, the copy right behind the original.
	DupPct float64
	// Loss drops matching packets in bursts (Gilbert-Elliott).
	Loss GilbertElliott
	// Scope selects the packets ReorderPct, DupPct and Loss apply to. With
	// LossLoadPDUs (the default) they are the unfragmented UDP datagrams
	// whose payload starts with the Load PDU identifier: a fragment
	// carries no UDP header, so fragmented datagrams are left alone rather
	// than impaired by halves. LossAllUDP selects every UDP packet,
	// fragments included, each decided on its own.
	Scope LossScope
}

// GilbertElliott is the two-state burst loss model, netem's gemodel: the
// channel is Good or Bad; a matching packet is lost with the loss
// probability of the state it finds, then the state moves (Good to Bad
// with probability P, Bad to Good with R). The mean burst of Bad is 1/R
// packets. All values are percentages (0..100). P = 0 with LossGood > 0
// is independent random loss; the zero value loses nothing.
type GilbertElliott struct {
	P, R              float64 // per matching packet: Good → Bad, Bad → Good
	LossGood, LossBad float64 // loss probability in each state (1-k and 1-h)
}

const (
	// MaxRelayDelay bounds Delay + Jitter + ReorderBy: the lab's longest
	// RTT is 150 ms; a second each way leaves room for odd tests without
	// letting a typo hold the relay's buffers for minutes.
	MaxRelayDelay = time.Second
	// DefaultReorderBy is ReorderBy when 0: twice the Load Sender's 1 ms
	// Burst period, so one or two Bursts overtake a held-back datagram,
	// and far below a 50 ms Trial Interval, so the late one almost always
	// lands in the interval it belongs to and cancels its loss there.
	DefaultReorderBy = 2 * time.Millisecond
)

// active reports whether the impairment does anything.
func (m Impairment) active() bool { return m != Impairment{} }

// normalize fills the defaults of m and checks it.
func (m Impairment) normalize() (Impairment, error) {
	pct := func(name string, v float64) error {
		if math.IsNaN(v) || v < 0 || v > 100 {
			return fmt.Errorf("%s %v%% is outside 0..100", name, v)
		}
		return nil
	}
	for _, c := range []struct {
		name string
		v    float64
	}{
		{"reorder", m.ReorderPct}, {"duplication", m.DupPct},
		{"Gilbert-Elliott P", m.Loss.P}, {"Gilbert-Elliott R", m.Loss.R},
		{"loss in Good", m.Loss.LossGood}, {"loss in Bad", m.Loss.LossBad},
	} {
		if err := pct(c.name, c.v); err != nil {
			return m, err
		}
	}
	switch {
	case m.Delay < 0 || m.Jitter < 0 || m.ReorderBy < 0:
		return m, fmt.Errorf("negative delay, jitter or reorder time (%v, %v, %v)", m.Delay, m.Jitter, m.ReorderBy)
	case m.Scope != LossLoadPDUs && m.Scope != LossAllUDP:
		return m, fmt.Errorf("unknown relay scope %d", m.Scope)
	case m.Loss.P > 0 && m.Loss.R == 0:
		return m, fmt.Errorf("Gilbert-Elliott P %v%% with R 0: the first Bad state would last for ever", m.Loss.P)
	case m.ReorderBy > 0 && m.ReorderPct == 0:
		return m, fmt.Errorf("reorder time %v without a reorder probability", m.ReorderBy)
	}
	if m.ReorderPct > 0 && m.ReorderBy == 0 {
		m.ReorderBy = DefaultReorderBy
	}
	if d := m.Delay + m.Jitter + m.ReorderBy; d > MaxRelayDelay {
		return m, fmt.Errorf("delay + jitter + reorder time %v is above %v", d, MaxRelayDelay)
	}
	return m, nil
}
