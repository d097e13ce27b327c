//go:build !portable

package engine

import (
	"fmt"
	"os"
	"unsafe"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
	"golang.org/x/sys/unix"
)

// The Data Phase batch calls. Neither allocates: the message arrays live in
// the Socket, the datagrams in the executor's SendBuffer and RecvBatch, and
// control messages are built and parsed in place (unix.ParseSocketControlMessage
// allocates a slice per call, x/net's ReadBatch two objects per datagram).

var (
	cmsgHdrLen   = unix.CmsgLen(0)   // offset of a control message's data
	segCtlLen    = unix.CmsgSpace(2) // one UDP_SEGMENT control message (u16)
	rctlLen      = rctlWords * 8
	sizeTimespec = int(unsafe.Sizeof(unix.Timespec{}))
)

// recvFlags: MSG_DONTWAIT so an empty socket returns EAGAIN at once, and
// MSG_TRUNC, with which Linux returns a UDP datagram's real length in
// msg_len even when it was cut to the buffer (udp_recvmsg: "if (flags &
// MSG_TRUNC) err = ulen"). Header-only reads copy 208 bytes, not 9 KB.
const recvFlags = unix.MSG_DONTWAIT | unix.MSG_TRUNC

// sendBatch is SendBatch past its checks of b (1 to len(b.Dgrams)
// datagrams).
func (s *Socket) sendBatch(b *dataphase.SendBuffer) (sent int, err error) {
	x := &s.sys
	x.lastBackpressure = 0
	err = x.withFd(func(fd int) (err error) {
		if !s.peer.IsValid() {
			return ErrNotConnected
		}
		sent, err = s.sendmmsg(b, fd, 0, 0)
		return err
	})
	return sent, err
}

// sendmmsg sends b's plan from datagram from on fd, GSO runs grouped;
// with mu held shared. It returns the first datagram the kernel has not
// taken (b.N when all went). refused, when not 0, is what a send of the
// message at from already met (through an Engine Thread's ring): the send
// policy judges it as it would this call's own, before any system call.
func (s *Socket) sendmmsg(b *dataphase.SendBuffer, fd, from int, refused unix.Errno) (int, error) {
	x := &s.sys
	n := b.N
	next := from  // first datagram the kernel has not taken
	calls := 0    // sendmmsg calls that took something
	gsoMsgs := 0  // GSO messages among what they took
	retried := -1 // datagram whose send was retried after a path error
	pathErrs := 0 // path errors met in this call
	givenUp := 0  // datagrams given up after repeated path errors
	// A first EMSGSIZE on a GSO message is a pending ICMP error or the
	// kernel refusing the message: the retry tells (the first is gone
	// after one report), so it is counted once that is known.
	tooBigAt := -1
	mtuReplanned := false
	defer func() {
		if tooBigAt >= 0 {
			s.stats.countPath(CountMessageTooBig)
		}
		if calls > 0 {
			s.stats[CountSendCalls].Add(uint64(calls))
		}
		if gsoMsgs > 0 {
			s.stats[CountGSOMessages].Add(uint64(gsoMsgs))
		}
		if next-from > givenUp {
			s.stats[CountSentDatagrams].Add(uint64(next - from - givenUp))
		}
		if givenUp > 0 {
			s.stats[CountGivenUp].Add(uint64(givenUp))
		}
	}()
replan:
	for next < n {
		nm := s.buildMessages(b, next)
		for m := 0; m < nm; {
			var k int
			var e unix.Errno
			switch {
			case refused != 0:
				e, refused = refused, 0
			case x.sendFn == nil:
				k, e = sendmmsg(fd, x.msgs[m:nm])
			default:
				k, e = x.sendFn(fd, x.msgs[m:nm])
			}
			if e == 0 && k == 0 {
				e = unix.EAGAIN // not expected with vlen > 0; never spin on it
			}
			if e == 0 {
				if tooBigAt >= 0 {
					tooBigAt = -1
					s.stats.countPath(CountMessageTooBig)
				}
				calls++
				for _, r := range x.runs[m : m+k] {
					if r.segSize > 0 {
						gsoMsgs++
					}
				}
				m += k
				r := x.runs[m-1]
				next = x.runBase + r.start + r.count
				continue
			}
			r := x.runs[m]
			act := sendPolicy(sendStep{kind: sendErrKindOf(e), gso: r.segSize > 0,
				tooBigAgain: tooBigAt == next, retried: retried == next,
				pathErrs: pathErrs, mtuReplanned: mtuReplanned})
			switch act {
			case sendAgain:
				continue
			case sendBackpressure:
				x.lastBackpressure = e
				s.stats[CountBackpressure].Add(1)
				s.stats[CountRefusedDatagrams].Add(uint64(n - next))
				return next, nil
			case sendTooBigRefused:
				tooBigAt = -1
				s.stats[CountGSORefusals].Add(1)
				s.disableGSO(e, r)
				continue replan
			case sendTooBigReplan:
				// A router sends one ICMP error per packet too big, so
				// more may be pending: take them before the retry, so
				// that it meets only what this message itself causes.
				tooBigAt = next
				x.refreshMTU()
				s.takePending()
				continue replan
			case sendPathGiveUp:
				s.stats.countPath(pathClassOf(e))
				givenUp += n - next
				next = n
				return next, nil
			case sendPathSkip:
				s.stats.countPath(pathClassOf(e))
				pathErrs++
				givenUp += r.count
				m++
				next = x.runBase + r.start + r.count
			case sendPathRetry, sendPathReplan:
				s.stats.countPath(pathClassOf(e))
				pathErrs++
				retried = next
				s.takePending()
				if act == sendPathReplan {
					x.refreshMTU()
					continue replan
				}
			case sendGSOCheckMTU:
				s.stats[CountGSORefusals].Add(1)
				mtuReplanned = true
				old := x.mtu.Load()
				x.refreshMTU()
				if x.mtu.Load() != old && r.segSize > x.mtuPayload() {
					continue replan
				}
				s.disableGSO(e, r)
				continue replan
			case sendGSOOff:
				s.stats[CountGSORefusals].Add(1)
				s.disableGSO(e, r)
				continue replan
			default:
				return next, fmt.Errorf("send %d-byte datagram to %v: %w", b.Dgrams[next].Len, s.peer, os.NewSyscallError("sendmmsg", e))
			}
		}
	}
	return next, nil
}

// disableGSO turns GSO off for good after the kernel refused a GSO message,
// and says so once.
func (s *Socket) disableGSO(e unix.Errno, r gsoRun) {
	if s.gso.Swap(false) && s.OnGSODisabled != nil {
		s.OnGSODisabled(fmt.Sprintf("UDP GSO turned off for %v -> %v: the kernel refused %d segments of %d bytes (%v); sending without GSO",
			s.laddr, s.peer, r.count, r.segSize, e))
	}
}

// sendmmsg sends msgs on fd. The socket is non-blocking, so no flags.
func sendmmsg(fd int, msgs []unix.Mmsghdr) (int, unix.Errno) {
	r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), uintptr(len(msgs)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// buildMessages plans datagrams [from, b.N) of b into messages (planGSO)
// and fills the message, iovec and control arrays; it returns the number of
// messages.
func (s *Socket) buildMessages(b *dataphase.SendBuffer, from int) int {
	x := &s.sys
	maxSegs := 1
	if s.gso.Load() {
		maxSegs = udpMaxSegments
	}
	maxBytes, _ := gsoLimits(x.peer4)
	if x.gsoMaxBytes > 0 {
		maxBytes = x.gsoMaxBytes
	}
	runs := planGSO(b.Dgrams[from:b.N], maxSegs, maxBytes, x.mtuPayload(), x.runs[:0])
	x.runBase = from
	iov := 0
	for m, r := range runs {
		first := iov
		for i := from + r.start; i < from+r.start+r.count; i++ {
			iov = x.datagramIovecs(b, i, iov)
		}
		h := &x.msgs[m].Hdr
		h.Iov = nil
		if iov > first {
			h.Iov = &x.iovs[first]
		}
		h.SetIovlen(iov - first)
		if r.segSize > 0 {
			setUDPSegment(h, x.segCtl[m][:], r.segSize)
		} else {
			h.Control = nil
			h.SetControllen(0)
		}
		x.msgs[m].Len = 0
	}
	return len(runs)
}

// setUDPSegment makes h a UDP GSO message of segments of seg bytes: it
// writes one UDP_SEGMENT control message into w (segCtlWords words) and
// points h's control buffer at it.
func setUDPSegment(h *unix.Msghdr, w []uint64, seg int) {
	ctl := cmsgBytes(w)
	c := (*unix.Cmsghdr)(unsafe.Pointer(&ctl[0]))
	c.Level = unix.IPPROTO_UDP // SOL_UDP
	c.Type = unix.UDP_SEGMENT
	c.SetLen(unix.CmsgLen(2))
	*(*uint16)(unsafe.Pointer(&ctl[cmsgHdrLen])) = uint16(seg)
	h.Control = &ctl[0]
	h.SetControllen(segCtlLen)
}

// datagramIovecs points iovecs iov and iov+1 at datagram i of b: its slot
// and its filler (randomFiller.datagram). It returns the next free iovec.
func (x *sysSocket) datagramIovecs(b *dataphase.SendBuffer, i, iov int) int {
	head, fill := x.fill.datagram(b, i)
	for _, p := range [2][]byte{head, fill} {
		if len(p) > 0 {
			x.iovs[iov].Base = &p[0]
			x.iovs[iov].SetLen(len(p))
			iov++
		}
	}
	return iov
}

// recv is recvBatch past its checks: n is 1 to MaxRecv, b.N is 0.
func (s *Socket) recv(b *dataphase.RecvBatch, n int, clk *turnClock, gro *groScratch) error {
	return s.sys.withFd(func(fd int) error {
		if s.gro {
			return s.recvGRO(b, n, clk, gro)
		}
		return s.recvmmsg(b, n, clk, fd)
	})
}

// recvmmsg reads up to n datagrams into b with one recvmmsg on fd (EINTR
// and a first path error aside); with mu held shared.
func (s *Socket) recvmmsg(b *dataphase.RecvBatch, n int, clk *turnClock, fd int) error {
	x := &s.sys
	if x.rbatch != b {
		x.rbatch, x.rready = b, 0
	}
	// The kernel writes msg_len, msg_controllen and msg_flags of the
	// messages it fills; the rest stays set up from earlier calls.
	for i := x.rready; i < n; i++ {
		buf := b.Buf(i)
		x.riovs[i].Base = &buf[0]
		x.riovs[i].SetLen(len(buf))
		h := &x.rmsgs[i].Hdr
		h.Iov = &x.riovs[i]
		h.SetIovlen(1)
		h.Control = (*byte)(unsafe.Pointer(&x.rctl[i][0]))
		h.SetControllen(rctlLen)
		h.Flags = 0
	}
	x.rready = max(x.rready, n)
	var got int
	refused := false
	for {
		r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&x.rmsgs[0])), uintptr(n), recvFlags, 0, 0)
		if e == 0 {
			got = int(r)
			break
		}
		again, err := s.recvErrno(e, &refused)
		if again {
			continue
		}
		return err
	}
	if got <= 0 {
		return nil
	}
	b.Pair = readNow(clk)
	for i := 0; i < got; i++ {
		m := &x.rmsgs[i]
		d := &b.Dgrams[i]
		*d = dataphase.InDatagram{Len: int(m.Len), Time: b.Pair.Mono}
		if cl := int(m.Hdr.Controllen); cl > 0 {
			parseRecvCmsgs(cmsgBytes(x.rctl[i][:])[:min(cl, rctlLen)], b.Pair, d)
		}
		m.Hdr.SetControllen(rctlLen)
		m.Hdr.Flags = 0
	}
	b.N = got
	s.stats[CountRecvCalls].Add(1)
	s.stats[CountRecvDatagrams].Add(uint64(got))
	return nil
}

// recvErrno judges a failed recvmmsg: again when the read should be tried
// at once (EINTR, or a first pending ICMP error: reported and cleared by
// this read, what is queued behind it still to be read; it is counted
// here); neither again nor an error when the turn's reading is over
// (EAGAIN, or a second ICMP error in a row, which waits for the next
// turn); else the socket's error. refused carries the ICMP error seen
// across one read's attempts.
func (s *Socket) recvErrno(e unix.Errno, refused *bool) (again bool, err error) {
	switch e {
	case unix.EINTR:
		return true, nil
	case unix.EAGAIN:
		return false, nil
	}
	if k := pathClassOf(e); k != noPathError {
		s.stats.countPath(k)
		if e == unix.EMSGSIZE {
			s.sys.refreshMTU()
		}
		if !*refused {
			*refused = true
			return true, nil
		}
		return false, nil
	}
	return false, fmt.Errorf("recv on %v: %w", s.laddr, os.NewSyscallError("recvmmsg", e))
}

// parseRecvCmsgs walks a received control buffer in place, fills d's
// receive time and TOS, and returns the UDP GRO segment size (0: none, the
// message is one datagram).
func parseRecvCmsgs(ctl []byte, pair clock.Pair, d *dataphase.InDatagram) (seg int) {
	for len(ctl) >= cmsgHdrLen {
		c := (*unix.Cmsghdr)(unsafe.Pointer(&ctl[0]))
		l := int(c.Len)
		if l < cmsgHdrLen || l > len(ctl) {
			return seg
		}
		data := ctl[cmsgHdrLen:l]
		switch {
		case c.Level == unix.SOL_SOCKET && c.Type == unix.SCM_TIMESTAMPNS && len(data) >= sizeTimespec:
			ts := (*unix.Timespec)(unsafe.Pointer(&data[0]))
			if wall := ts.Nano(); wall != 0 {
				d.Time = pair.MonoAt(wall)
			}
		case c.Level == unix.IPPROTO_IP && c.Type == unix.IP_TOS && len(data) >= 1:
			// One byte (ip_cmsg_recv_tos; quic-go 6239effc7).
			d.TOS, d.HasTOS = data[0], true
		case c.Level == unix.IPPROTO_IPV6 && c.Type == unix.IPV6_TCLASS && len(data) >= 4:
			// A native-endian int (quic-go 21e5646e5).
			d.TOS, d.HasTOS = uint8(*(*int32)(unsafe.Pointer(&data[0]))), true
		case c.Level == unix.IPPROTO_UDP && c.Type == unix.UDP_GRO && len(data) >= 4:
			// A native-endian int, the skb's gso_size (udp_cmsg_recv).
			seg = int(*(*int32)(unsafe.Pointer(&data[0])))
		}
		sp := unix.CmsgSpace(l - cmsgHdrLen)
		if sp >= len(ctl) {
			return seg
		}
		ctl = ctl[sp:]
	}
	return seg
}
