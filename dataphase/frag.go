package dataphase

// IP fragmentation accounting: ours, not OB-UDPST's, and never on the wire.
//
// OB-UDPST counts every datagram as one IP packet with one header; a GSO
// build of it never meets fragmentation because it aborts the test (see the
// package doc). We measure
// on such paths: a datagram larger than the path MTU is sent without GSO
// and the kernel fragments it. Its bytes on the wire are then more than its
// L3 size: every fragment beyond the first repeats the IP header (20 bytes
// on IPv4; on IPv6 40 bytes plus the 8-byte Fragment header, which the
// first fragment carries too) and is one more frame with its own Ethernet
// overhead. A report that ignores this under-states the L2 and L1 rates by
// about 2.4 % for 8972-byte payloads over a 1500-byte MTU (7 packets).
//
// The Load Receiver counts, for every accepted Load PDU, the extra packets
// and extra IP header bytes its UDP payload size needed on a path of
// Params.PathMTU; the Sub-Interval result carries both. The L3 figure keeps
// OB-UDPST's definition; the report adds both to the L2/L1 figures only.
// The receiver cannot see fragments (the kernel reassembles them), so the
// count assumes the sender's path MTU equals the receiver's PathMTU, the
// MTU of its own route back to the sender: symmetric paths, as in the lab
// and on most access links.
//
// An upstream client is the Load Sender and learns the receiver's counts
// only from Status PDUs, which carry datagrams and bytes but no sizes. It
// counts what the kernel accepted from it (datagrams, extra packets, extra
// header bytes) and cuts that count where the server cut its Sub-Interval,
// as far as it can see: the server opens and closes Sub-Intervals just
// after sending a Status PDU, and reports a closed one in the next, so the
// client's window runs from the arrival of the Status PDU after which the
// Sub-Interval opened to the arrival of the one before the report. It
// then scales the window's extra figures by the delivered share,
// RxDatagrams / datagrams sent in the window. This is exact when every
// datagram of the window had the same fragment count (one row, or rows of
// one size class) and when none needed fragmentation (then both are 0).
// Otherwise two approximations remain. The window is shifted against the
// server's by one round-trip time (the Status PDU's trip back plus the
// Load PDUs' trip out, queueing included), so for one RTT the previous
// window's size mix stands in for the next one's: at most RTT/Sub-Interval
// of the extra packets (0.2 % at 2 ms in 1 s), and less as the mix changes
// one row per Trial Interval (the simulator, TestFragmentsEstimatedUpstream:
// within 0.4 % of the exact count while the search climbs through every
// size class). And loss is taken as uniform over sizes, while a datagram of
// n fragments is lost more often than one of a single packet when
// fragments are dropped independently, so the estimate errs high by at
// most the loss ratio (1 % loss: at most 1 % of the extra packets). Extra
// packets are about 2.4 % of the L2 bytes of 8972-byte payloads on a
// 1500-byte MTU, so either error is below 0.03 % of the L2 rate. A lost
// Status PDU moves the window's end by a Trial Interval.

// fragPlan is the fragmentation arithmetic of one Test Connection's path.
type fragPlan struct {
	maxPayload uint32 // largest UDP payload one IP packet carries; larger ones are fragmented
	unit       uint32 // bytes of the IP payload (UDP header included) one fragment carries
	hdr        uint32 // IP header bytes of each fragment beyond the first
	first      uint32 // header bytes a fragmented datagram's first packet gains (IPv6 Fragment header)
}

// newFragPlan returns the arithmetic for a path MTU (0: unknown, nothing is
// ever counted as fragmented).
func newFragPlan(mtu int, ipv6 bool) fragPlan {
	f := fragPlan{maxPayload: ^uint32(0)}
	ipHdr, fragHdr := 20, 0
	if ipv6 {
		ipHdr, fragHdr = 40, 8
	}
	// The largest payload that goes unfragmented, and the fragment unit:
	// the room after the headers, a multiple of 8 (RFC 791, RFC 8200).
	if mtu <= 0 || (mtu-ipHdr-fragHdr)&^7 < 8 {
		return f
	}
	f.maxPayload = uint32(mtu - ipHdr - 8)
	f.unit = uint32((mtu - ipHdr - fragHdr) &^ 7)
	f.hdr = uint32(ipHdr + fragHdr)
	f.first = uint32(fragHdr)
	return f
}

// extra returns the IP packets beyond one and the extra IP header bytes of
// a datagram with a UDP payload of l bytes.
func (f *fragPlan) extra(l uint32) (pkts, bytes uint32) {
	if l <= f.maxPayload {
		return 0, 0
	}
	n := (l + 8 + f.unit - 1) / f.unit
	return n - 1, (n-1)*f.hdr + f.first
}

// fragCounts are the extra packets and header bytes of a set of datagrams.
type fragCounts struct {
	pkts  uint32
	bytes uint64
}

func (c *fragCounts) add(f *fragPlan, l uint32) {
	if l <= f.maxPayload {
		return
	}
	p, b := f.extra(l)
	c.pkts += p
	c.bytes += uint64(b)
}

// scaled returns c times num/den, rounded: the per-datagram mean of what a
// Load Sender sent in its window applied to num delivered datagrams. 0 when
// den is 0.
func (c fragCounts) scaled(num, den uint64) fragCounts {
	if den == 0 || c.pkts == 0 {
		return fragCounts{}
	}
	return fragCounts{
		pkts:  uint32((uint64(c.pkts)*num + den/2) / den),
		bytes: (c.bytes*num + den/2) / den,
	}
}
