package dataphase

import (
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/race"
)

func TestFragPlan(t *testing.T) {
	cases := []struct {
		mtu        int
		ipv6       bool
		payload    uint32
		pkts, hdrs uint32
	}{
		// IPv4, 1500: 1472 fits; a fragment carries 1480 bytes of UDP.
		{1500, false, 1472, 0, 0},
		{1500, false, 1473, 1, 20},
		{1500, false, 2952, 1, 20}, // 2960 = 2 x 1480
		{1500, false, 2953, 2, 40},
		{1500, false, 8972, 6, 120}, // 9000 bytes of IP: 7 packets (docs/accuracy.md)
		{1500, false, 1222, 0, 0},
		// IPv6, 1500: 1452 fits; a fragment carries 1448 bytes after its
		// 40-byte header and 8-byte Fragment header.
		{1500, true, 1452, 0, 0},
		{1500, true, 1453, 1, 56},  // 2 x 48 - 40
		{1500, true, 8952, 6, 296}, // 8960 / 1448 -> 7 packets: 7 x 48 - 40
		// Jumbo MTU: the largest payload fits.
		{9000, false, 8972, 0, 0},
		{9000, true, 8952, 0, 0},
		{9000, false, 8973, 1, 20},
		// Unknown MTU: nothing is fragmented.
		{0, false, 8972, 0, 0},
		{0, true, 65000, 0, 0},
	}
	for _, c := range cases {
		f := newFragPlan(c.mtu, c.ipv6)
		p, h := f.extra(c.payload)
		if p != c.pkts || h != c.hdrs {
			t.Errorf("MTU %d v6=%v payload %d: %d extra packets, %d header bytes; want %d, %d", c.mtu, c.ipv6, c.payload, p, h, c.pkts, c.hdrs)
		}
		var n fragCounts
		n.add(&f, c.payload)
		n.add(&f, c.payload)
		if n.pkts != 2*c.pkts || n.bytes != 2*uint64(c.hdrs) {
			t.Errorf("MTU %d payload %d: counts %+v", c.mtu, c.payload, n)
		}
	}
}

func TestFragScaled(t *testing.T) {
	c := fragCounts{pkts: 600, bytes: 12000} // 100 datagrams of 7 packets
	if got := c.scaled(99, 100); got.pkts != 594 || got.bytes != 11880 {
		t.Errorf("99 of 100 delivered: %+v", got)
	}
	if got := c.scaled(105, 100); got.pkts != 630 {
		t.Errorf("105 delivered (window shift): %+v", got)
	}
	if got := c.scaled(5, 0); got != (fragCounts{}) {
		t.Errorf("nothing sent: %+v", got)
	}
}

// TestFragCountingAllocs: counting fragments allocates nothing on the
// Load PDU paths (the receiver's per-datagram accounting, the sender's
// per-plan count).
func TestFragCountingAllocs(t *testing.T) {
	f := newFragPlan(1500, false)
	var r receiver
	r.init(1, 0, f)
	h := LoadHeader{UDPPayload: 8972}
	if n := race.AllocsPerRun(1000, func() {
		h.SeqNo++
		r.onLoad(&h, int64(h.SeqNo)*1e6, 0, false)
	}); n != 0 {
		t.Errorf("receiver: %v allocations per Load PDU", n)
	}
	s := sender{frag: f, fragOn: true}
	if n := race.AllocsPerRun(1000, func() {
		s.planN = 10
		for i := range 10 {
			s.plan[i] = pendingDgram{seq: uint32(i + 1), len: 8972}
		}
		s.sent(10)
	}); n != 0 {
		t.Errorf("sender: %v allocations per plan", n)
	}
	if s.fragTotal.frag.pkts == 0 || r.sub.frag.pkts == 0 {
		t.Errorf("nothing counted: sender %+v, receiver %+v", s.fragTotal, r.sub.frag)
	}
}
