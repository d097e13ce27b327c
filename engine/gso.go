package engine

import "github.com/udpstp/udpstp/dataphase"

// UDP GSO (UDP_SEGMENT, Linux 4.18+) hands the kernel one message and a
// segment size; the kernel cuts it into datagrams. Until it does, the
// message is one UDP datagram, so every datagram limit applies to the whole
// message. The kernel's checks (udp_send_skb, __ip_append_data):
//
//   - more than UDP_MAX_SEGMENTS segments: EINVAL;
//   - segment size plus headers above the path MTU: EINVAL, or EMSGSIZE
//     since 235174b2bed8 ("udp: gso: do not drop small packets when PMTU
//     reduces", 2025, backported to 6.1 stable): a GSO message is never
//     fragmented;
//   - total UDP payload above 65,535 minus the headers: EMSGSIZE;
//   - no TX checksum offload on the egress device, or an xfrm route: EIO.
//
// planGSO keeps within the first three; the socket turns GSO off for good
// on the fourth (or on any refusal it cannot explain by a changed MTU).
const (
	// udpMaxSegments is UDP_MAX_SEGMENTS (include/linux/udp.h). It was
	// 1<<6 until 1382e3b6a350 (2024) raised it to 1<<7; that change was
	// backported to some stable kernels only, and user space cannot query
	// it, so assume the older limit. 64 is also the most segments receive
	// GRO merges (UDP_GRO_CNT_MAX).
	udpMaxSegments = 64
	// maxIPv4Payload is the largest UDP payload in an IPv4 packet: the
	// 16-bit total length less the 20-byte IP and 8-byte UDP headers.
	maxIPv4Payload = 1<<16 - 1 - 20 - 8 // 65,507
	// maxIPv6Payload is the largest UDP payload in an IPv6 packet without
	// a jumbogram: the 16-bit payload length excludes the 40-byte fixed
	// header, so only the 8-byte UDP header counts.
	maxIPv6Payload = 1<<16 - 1 - 8 // 65,527
	// ipv4Overhead and ipv6Overhead are the IP and UDP header bytes on top
	// of a UDP payload (no IP options, no extension headers).
	ipv4Overhead = 20 + 8
	ipv6Overhead = 40 + 8
)

// gsoRun is one message of a send: count datagrams starting at start, sent
// as one UDP GSO message of segments of segSize bytes (the last may be
// shorter) when segSize > 0, or as a single plain datagram (count 1) when
// segSize is 0.
type gsoRun struct {
	start, count int
	segSize      int
}

// planGSO groups dgrams into messages, appending them to out (which should
// have room for len(dgrams) runs so nothing is allocated). A GSO run is
// consecutive datagrams of equal Len, optionally ended by ONE shorter
// datagram (a Burst's add-on): the kernel makes every segment but the last
// exactly the segment size. A run holds at most maxSegs datagrams and
// maxBytes of UDP payload in total. A datagram longer than mtuPayload (the
// path MTU less the IP and UDP headers) is sent alone so the kernel may
// fragment it, as is a datagram that would be a run of one: GSO for a
// single datagram only adds a control message (the kernel skips GSO for it
// anyway since 4094871db1d6). maxSegs < 2 turns GSO off.
//
// The limits are arguments, not constants, so the arithmetic is tested on
// every platform with Linux's values.
func planGSO(dgrams []dataphase.OutDatagram, maxSegs, maxBytes, mtuPayload int, out []gsoRun) []gsoRun {
	for i := 0; i < len(dgrams); {
		seg := int(dgrams[i].Len)
		if maxSegs < 2 || seg == 0 || seg > mtuPayload || seg > maxBytes {
			out = append(out, gsoRun{start: i, count: 1})
			i++
			continue
		}
		j, total := i+1, seg
		for j < len(dgrams) && j-i < maxSegs {
			l := int(dgrams[j].Len)
			// A zero-length tail would vanish inside the message: the
			// kernel derives the segments from the total length.
			if l > seg || l == 0 || total+l > maxBytes {
				break
			}
			total += l
			j++
			if l < seg {
				break // a shorter datagram can only be the last segment
			}
		}
		if j-i == 1 {
			out = append(out, gsoRun{start: i, count: 1})
		} else {
			out = append(out, gsoRun{start: i, count: j - i, segSize: seg})
		}
		i = j
	}
	return out
}

// gsoLimits returns the total-payload limit and the per-datagram header
// overhead for a peer: the packets' family, not the socket's, decides
// (an AF_INET6 socket sends IPv4 packets to an IPv4-mapped peer).
func gsoLimits(ipv4Peer bool) (maxBytes, overhead int) {
	if ipv4Peer {
		return maxIPv4Payload, ipv4Overhead
	}
	return maxIPv6Payload, ipv6Overhead
}
