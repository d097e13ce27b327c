//go:build !portable

package engine

import (
	"unsafe"

	"github.com/udpstp/udpstp/dataphase"
	"golang.org/x/sys/unix"
)

// setGRO asks the kernel for UDP GRO on fd. Tests pass another
// (SocketOptions.setGRO) to play a kernel that refuses (ENOPROTOOPT
// before 5.0).
func setGRO(fd int) error {
	return unix.SetsockoptInt(fd, unix.IPPROTO_UDP, unix.UDP_GRO, 1)
}

// groCtlWords holds a GRO read's control messages: those of rctlWords
// (the timestamp and the TOS, 56 bytes) and UDP_GRO (CmsgSpace(4) = 24 on
// 64-bit Linux), rounded up.
const groCtlWords = rctlWords + 4

// groScratch is an executor's buffers for GRO reads, shared by every GRO
// socket it reads: a server has hundreds of sockets, and a message buffer
// must hold a whole 64 KiB message. They are allocated at the executor's
// first GRO read, so an executor without GRO sockets pays nothing:
// groScratchMsgs (4) messages of groBufLen, 256 KiB and a few hundred
// bytes of headers. What a read leaves of a message cannot stay here,
// since the next read may be another socket's: it goes to the socket's
// groRest.
type groScratch struct {
	m *groMsgs
}

type groMsgs struct {
	msgs [groScratchMsgs]unix.Mmsghdr
	iovs [groScratchMsgs]unix.Iovec
	ctl  [groScratchMsgs][groCtlWords]uint64
	bufs [groScratchMsgs][groBufLen]byte
}

// get returns the buffers, making them at the first call.
func (g *groScratch) get() *groMsgs {
	if g.m == nil {
		m := new(groMsgs)
		for i := range m.msgs {
			m.iovs[i].Base = &m.bufs[i][0]
			m.iovs[i].SetLen(groBufLen)
			h := &m.msgs[i].Hdr
			h.Iov = &m.iovs[i]
			h.SetIovlen(1)
			h.Control = (*byte)(unsafe.Pointer(&m.ctl[i][0]))
			h.SetControllen(groCtlWords * 8)
		}
		g.m = m
	}
	return g.m
}

// enableGRO turns UDP GRO on for fd if o asks for it. A kernel that
// refuses it (before 5.0: ENOPROTOOPT) leaves the socket as it was, read
// datagram by datagram; Stats says which.
func (s *Socket) enableGRO(fd int, o SocketOptions) {
	set := setGRO
	if o.setGRO != nil {
		set = o.setGRO
	}
	if o.GRO && set(fd) == nil {
		s.gro = true
	}
}

// recvGRO is recvBatch on a GRO socket; the caller holds mu shared and
// has checked fd and limit (1 to MaxRecv). It first hands out what the
// last read left (groRest), then reads messages into g (the executor's
// scratch; nil: the socket's own, for RecvBatch outside an executor) and
// cuts them into b's datagrams. The kernel copies every payload whole into
// g, a plain datagram's too, where the plain path has it copy RecvSlotLen
// bytes of each datagram: that copy is what GRO trades for fewer trips
// through the receive path, and what a measurement must weigh.
//
// It returns fewer than limit datagrams only when the socket is drained
// (or a path error stopped it), as the plain path's single recvmmsg does:
// the pool's edge-triggered epoll set raises no new edge for datagrams
// left queued. So it reads again while b has room, each read asking for
// groReadCount messages.
func (s *Socket) recvGRO(b *dataphase.RecvBatch, limit int, clk *turnClock, g *groScratch) error {
	x := &s.sys
	if g == nil {
		g = &x.ownGRO
	}
	havePair := false
	if x.rest.pending() {
		b.Pair, havePair = readNow(clk), true
		x.rest.deliver(b, limit)
	}
	calls, merged := 0, 0
	defer func() {
		if calls > 0 {
			s.stats[CountRecvCalls].Add(uint64(calls))
		}
		if merged > 0 {
			s.stats[CountGROMessages].Add(uint64(merged))
		}
		if b.N > 0 {
			s.stats[CountRecvDatagrams].Add(uint64(b.N))
		}
	}()
	m := g.get()
	refused := false
	for b.N < limit {
		k := groReadCount(limit - b.N)
		r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(x.fd), uintptr(unsafe.Pointer(&m.msgs[0])), uintptr(k), recvFlags, 0, 0)
		if e != 0 {
			again, err := s.recvErrno(e, &refused)
			if again {
				continue
			}
			if err != nil && b.N > 0 {
				return nil // the datagrams first; the next read meets the error again
			}
			return err
		}
		got := int(r)
		if got <= 0 {
			return nil
		}
		calls++
		if !havePair {
			b.Pair, havePair = readNow(clk), true
		}
		for i := 0; i < got; i++ {
			mm := &m.msgs[i]
			l := int(mm.Len)
			d := dataphase.InDatagram{Time: b.Pair.Mono}
			seg := 0
			if cl := int(mm.Hdr.Controllen); cl > 0 {
				seg = parseRecvCmsgs(cmsgBytes(m.ctl[i][:])[:min(cl, groCtlWords*8)], b.Pair, &d)
			}
			mm.Hdr.SetControllen(groCtlWords * 8)
			mm.Hdr.Flags = 0
			if groSegments(l, seg) > 1 {
				merged++
			}
			data := m.bufs[i][:min(l, groBufLen)]
			if next := expandGRO(b, limit, data, l, seg, d, 0); next < groSegments(l, seg) {
				x.rest.save(data, l, seg, d, next)
			}
		}
		if got < k {
			return nil // drained
		}
	}
	return nil
}

// groBufLen is the buffer of one GRO message: the largest UDP payload (an
// IPv6 one, 65,527 bytes), rounded up. A message longer than its buffer
// would lose the segments past it even with MSG_TRUNC, which reports the
// length but copies no more.
const groBufLen = 1 << 16
