package engine

import "github.com/udpstp/udpstp/dataphase"

// UDP GRO on receive (UDP_GRO, Linux 5.0+): a socket that asks for it may
// get several datagrams of one flow as ONE message, all of the same size
// but a possibly shorter last one, with a control message (SOL_UDP,
// UDP_GRO) giving that segment size. A GSO message sent over loopback or a
// veth then arrives whole instead of being cut up at the receiving socket
// (udp_rcv_segment), and the receive side of a NIC merges up to
// UDP_GRO_CNT_MAX (64) datagrams of a flow. One receive timestamp and one
// TOS hold for every segment.
//
// The arithmetic of cutting a message back into its datagrams, and the
// remainder a batch could not take, are here, without a build tag, so
// they are tested on every platform; the system calls are in
// gro_linux.go.

const (
	// groFitSegs is the most datagrams a GRO message is counted on to hold
	// when deciding how many messages one read may ask for: UDP_GRO_CNT_MAX,
	// what a NIC's GRO merges, and udpMaxSegments, what this engine's GSO
	// sends (and what the kernel allowed senders until 2024). A loopback
	// GSO message of a sender on a newer kernel may hold 128 (gso.go); what
	// does not fit the batch then goes to the remainder, which grows for it.
	groFitSegs = udpMaxSegments
	// groScratchMsgs is how many messages an executor's GRO scratch holds:
	// the most one read asks for, a full batch of messages of groFitSegs
	// datagrams.
	groScratchMsgs = dataphase.MaxRecv / groFitSegs
)

// groSegments is how many datagrams a message of l bytes received with
// UDP_GRO segment size seg holds: one if seg is 0 (no UDP_GRO control
// message: a plain datagram) or not below l.
func groSegments(l, seg int) int {
	if seg <= 0 || seg >= l {
		return 1
	}
	return (l + seg - 1) / seg
}

// groSegment returns the offset and length of datagram i of a message of
// l bytes with segment size seg (groSegments): every one seg bytes long
// but the last, which holds what is left.
func groSegment(l, seg, i int) (off, n int) {
	if seg <= 0 || seg >= l {
		return 0, l
	}
	off = i * seg
	return off, min(seg, l-off)
}

// groReadCount is how many messages a GRO read may ask for when the batch
// has room for room more datagrams: as many as surely fit at groFitSegs
// datagrams each, at least one, at most the scratch's. Only a message of
// the last read can then overflow the batch, in the common case, and the
// remainder holds fewer than groFitSegs datagrams. wireguard-go's GRO
// reads make the same choice (IdealBatchSize / udpSegmentMaxDatagrams
// messages), and fail a read whose messages overflow the batch, where
// this one keeps them. The price is more system calls for datagrams that
// come unmerged, each one a message.
func groReadCount(room int) int {
	return max(1, min(room/groFitSegs, groScratchMsgs))
}

// expandGRO writes datagrams from, from+1, ... of a received message into
// b from b.N on, until b holds limit datagrams: each keeps its first
// RecvSlotLen bytes, its length and d's receive time and TOS. data is what
// the read copied of the message, l its real length (MSG_TRUNC) and seg
// its UDP_GRO segment size (0: none). It returns the first datagram not
// written, groSegments(l, seg) when all were.
func expandGRO(b *dataphase.RecvBatch, limit int, data []byte, l, seg int, d dataphase.InDatagram, from int) int {
	n := groSegments(l, seg)
	i := from
	for ; i < n && b.N < limit; i++ {
		off, sl := groSegment(l, seg, i)
		keepBytes(b.Buf(b.N), data, off, sl)
		d.Len = sl
		b.Dgrams[b.N] = d
		b.N++
	}
	return i
}

// keepBytes copies the first RecvSlotLen bytes (at most sl) of the
// datagram at off of data into dst. Bytes the read did not copy (a message
// longer than its buffer, which a UDP length cannot be) read as zeros, not
// as an earlier datagram's.
func keepBytes(dst, data []byte, off, sl int) {
	k := min(sl, dataphase.RecvSlotLen)
	c := 0
	if off < len(data) {
		c = copy(dst[:k], data[off:min(off+k, len(data))])
	}
	clear(dst[c:k])
}

// groRest holds the datagrams of GRO messages that a batch could not take,
// for the socket's next read: their kept bytes and descriptions. It lives
// in the Socket, because the message buffers are the executor's and the
// executor's next read, of another socket perhaps, reuses them. It is
// empty but for a read whose last message straddled the batch's end, so
// it is allocated at the first such read, for groFitSegs datagrams (about
// 15 KiB), and grows only for a message of more (a loopback GSO message of
// up to 128).
type groRest struct {
	kept   [][dataphase.RecvSlotLen]byte
	dgrams []dataphase.InDatagram
	next   int // the first not delivered yet
}

// pending reports whether datagrams wait in r.
func (r *groRest) pending() bool { return r.next < len(r.dgrams) }

// save keeps datagrams from, from+1, ... of a message (as expandGRO takes
// it) after those r holds already.
func (r *groRest) save(data []byte, l, seg int, d dataphase.InDatagram, from int) {
	n := groSegments(l, seg)
	if need := len(r.dgrams) + n - from; need > cap(r.dgrams) {
		r.grow(need)
	}
	for i := from; i < n; i++ {
		off, sl := groSegment(l, seg, i)
		k := len(r.dgrams)
		r.kept = r.kept[:k+1]
		keepBytes(r.kept[k][:], data, off, sl)
		d.Len = sl
		r.dgrams = append(r.dgrams, d)
	}
}

// grow makes room for need datagrams, at least groFitSegs.
func (r *groRest) grow(need int) {
	c := max(need, groFitSegs, 2*cap(r.dgrams))
	kept := make([][dataphase.RecvSlotLen]byte, len(r.kept), c)
	copy(kept, r.kept)
	dgrams := make([]dataphase.InDatagram, len(r.dgrams), c)
	copy(dgrams, r.dgrams)
	r.kept, r.dgrams = kept, dgrams
}

// deliver moves the datagrams of r, in order, into b from b.N on until b
// holds limit datagrams.
func (r *groRest) deliver(b *dataphase.RecvBatch, limit int) {
	for b.N < limit && r.next < len(r.dgrams) {
		d := r.dgrams[r.next]
		copy(b.Buf(b.N), r.kept[r.next][:min(d.Len, dataphase.RecvSlotLen)])
		b.Dgrams[b.N] = d
		b.N++
		r.next++
	}
	if r.next == len(r.dgrams) {
		r.kept, r.dgrams, r.next = r.kept[:0], r.dgrams[:0], 0
	}
}
