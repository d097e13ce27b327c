package client

import "github.com/udpstp/udpstp/internal/netstat"

// A Load Receiver on a path narrower than its datagrams gets them in
// fragments, and the kernel keeps each datagram that lost one for
// net.ipv4.ipfrag_time (30 s). A capacity search overshoots the
// bottleneck, which drops single fragments, so those datagrams pile up;
// once they hold net.ipv4.ipfrag_high_thresh (4 MB by default) the kernel
// drops every new fragment, and the test sees the path fall to nothing
// (docs/accuracy.md, "Reassembly memory"). The client cannot see the
// fragments, but it can see the host's counters move: a Load Receiver
// reads them before and after its test and says how many fragments or
// datagrams the kernel failed to reassemble, timeouts left out (those
// are a lost fragment's ordinary end, seen 30 s later).

// reasmDrops is the host's reassembly failures that were not timeouts,
// IPv4 and IPv6 together, from its protocol counters.
func reasmDrops(c netstat.Counters) int64 {
	v4, _ := c.ReassemblyDrops(false)
	v6, _ := c.ReassemblyDrops(true)
	return v4 + v6
}

// reasmWatch counts a test's reassembly failures: start before the Data
// Phase, end after it. read is the host's counters (netstat.ReadSelf);
// a failed read leaves the count unknown, never a guess.
type reasmWatch struct {
	read  func() (netstat.Counters, error)
	start int64
	ok    bool
}

func (w *reasmWatch) begin() {
	if w.read == nil {
		return
	}
	c, err := w.read()
	w.start, w.ok = reasmDrops(c), err == nil
}

// end returns the failures since begin, and false when they are unknown.
func (w *reasmWatch) end() (int64, bool) {
	if !w.ok {
		return 0, false
	}
	c, err := w.read()
	if err != nil {
		return 0, false
	}
	return max(reasmDrops(c)-w.start, 0), true
}
