//go:build !linux || portable

package engine

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
)

// Off Linux (macOS, Windows, the BSDs) a Socket is a net.UDPConn driven one
// datagram per system call: no sendmmsg/recvmmsg, no UDP GSO, no kernel
// receive timestamps (a datagram's Time is when the engine read it), no
// TOS on receive. It is enough for a client, not for a server at scale.
//
// Connect is emulated: the socket stays unconnected (net.UDPConn cannot be
// connected after it was opened), sends go to the recorded peer and
// datagrams from anyone else are dropped on receive. So ICMP errors are not
// reported (no ECONNREFUSED), which for a speed test is no loss.

type sysSocket struct {
	conn *net.UDPConn
	rc   syscall.RawConn

	peer4 bool

	// A datagram read ahead by the executor's wait, which blocks in a read
	// (there is no portable readiness wait), for the next RecvBatch. Only
	// the executor's goroutine touches these.
	stash     []byte // 64 KiB, so the real length is known
	stashLen  int
	stashPair clock.Pair
	stashed   bool
	readErr   error // a read error met by the wait, for the next RecvBatch

	raw  rawReader // tryRead's (sockopt_*.go)
	wbuf []byte    // one datagram assembled for the write
	fill randomFiller

	// sendFn, when set, replaces the write of datagram i of a plan of n,
	// so that tests can play a system that refuses sends (loopback never
	// does): the Data Phase's backpressure and partial sends.
	sendFn func(p []byte, to netip.AddrPort, i, n int) error

	lastBackpressure error
}

func (s *Socket) open(p bindPlan, o SocketOptions) error {
	x := &s.sys
	network := "udp4"
	switch {
	case p.v6 && !p.v6only && p.addr.Addr().IsUnspecified():
		// Go opens "udp" on a wildcard address as a dual-stack AF_INET6
		// socket (IPV6_V6ONLY=0) where the system supports it.
		network = "udp"
	case p.v6:
		network = "udp6"
	}
	c, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(p.addr))
	if err != nil {
		return fmt.Errorf("bind %v: %w", p.addr, err)
	}
	rc, err := c.SyscallConn()
	if err != nil {
		c.Close()
		return fmt.Errorf("bind %v: %w", p.addr, err)
	}
	x.conn, x.rc = c, rc
	s.v6 = p.v6
	if o.SockBuf > 0 {
		_ = c.SetWriteBuffer(o.SockBuf)
		_ = c.SetReadBuffer(o.SockBuf)
	}
	_ = rc.Control(func(fd uintptr) {
		s.granted[0], _ = getsockoptInt(fd, sysSOLSocket, sysSOSndbuf)
		s.granted[1], _ = getsockoptInt(fd, sysSOLSocket, sysSORcvbuf)
	})
	s.laddr = unmapAddrPort(c.LocalAddr().(*net.UDPAddr).AddrPort())
	x.stash = make([]byte, fillPoolLen)
	x.wbuf = make([]byte, fillPoolLen)
	x.fill.init(uint64(time.Now().UnixNano()))
	return nil
}

func (s *Socket) fd() int {
	if s.closed.Load() {
		return -1
	}
	fd := -1
	_ = s.sys.rc.Control(func(f uintptr) { fd = int(f) })
	return fd
}

func (s *Socket) close() error {
	if err := s.sys.conn.Close(); err != nil {
		return fmt.Errorf("close %v: %w", s.laddr, err)
	}
	return nil
}

func (s *Socket) connect(peer netip.AddrPort) error {
	if s.closed.Load() {
		return net.ErrClosed
	}
	if _, err := addrForSocket(peer, s.v6); err != nil {
		return fmt.Errorf("connect %v: %w", s.laddr, err)
	}
	s.peer = unmapAddrPort(peer)
	s.sys.peer4 = IsIPv4Peer(peer)
	return nil
}

// PathMTU returns 0: the path MTU is not read off Linux (there is no GSO to
// bound).
func (s *Socket) PathMTU() int { return 0 }

func (s *Socket) sendTo(b []byte, to netip.AddrPort) error {
	a, err := addrForSocket(to, s.v6)
	if err != nil {
		return fmt.Errorf("send to %v: %w", to, err)
	}
	if _, err := s.sys.conn.WriteToUDPAddrPort(b, a); err != nil {
		return fmt.Errorf("send to %v: %w", to, err)
	}
	return nil
}

func (s *Socket) send(b []byte) error {
	if !s.peer.IsValid() {
		return ErrNotConnected
	}
	return s.sendTo(b, s.peer)
}

func (s *Socket) recvFrom(b []byte, deadline time.Time) (int, netip.AddrPort, error) {
	c := s.sys.conn
	if err := c.SetReadDeadline(deadline); err != nil {
		return 0, netip.AddrPort{}, fmt.Errorf("recv on %v: %w", s.laddr, err)
	}
	for {
		n, from, err := c.ReadFromUDPAddrPort(b)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return 0, netip.AddrPort{}, net.ErrClosed
			}
			return 0, netip.AddrPort{}, fmt.Errorf("recv on %v: %w", s.laddr, err)
		}
		from = unmapAddrPort(from)
		if s.peer.IsValid() && from != s.peer {
			continue // emulated connect
		}
		return n, from, nil
	}
}

func (s *Socket) setTOS(tos uint8, ipv4Peer bool) error {
	level, opt, name := sysIPProtoIP, sysIPTOS, "IP_TOS"
	if !ipv4Peer {
		level, opt, name = sysIPProtoIPv6, sysIPv6TClass, "IPV6_TCLASS"
	}
	var serr error
	if err := s.sys.rc.Control(func(fd uintptr) { serr = setsockoptInt(fd, level, opt, int(tos)) }); err != nil {
		serr = err
	}
	if serr != nil {
		return fmt.Errorf("%s %#x on %v: %w", name, tos, s.laddr, os.NewSyscallError("setsockopt", serr))
	}
	return nil
}

// enableRecvTOS does nothing: receiving TOS needs control messages, which
// net.UDPConn does not give without x/net.
func (s *Socket) enableRecvTOS(bool) error { return nil }

func (s *Socket) setRecvErr(bool) error { return nil }

// clearError does nothing: the socket is never connected, so no ICMP
// error is left pending on it.
func (s *Socket) clearError() {}

func (s *Socket) lastSendWouldBlock() bool { return false }

func (s *Socket) lastSendBackpressure() bool { return s.sys.lastBackpressure != nil }

func (s *Socket) sendBatch(b *dataphase.SendBuffer) (int, error) {
	x := &s.sys
	x.lastBackpressure = nil
	if !s.peer.IsValid() {
		return 0, ErrNotConnected
	}
	n := b.N
	for i := 0; i < n; i++ {
		d := b.Dgrams[i]
		l, h := int(d.Len), min(int(d.HdrLen), int(d.Len))
		p := x.wbuf[:l]
		copy(p, b.Slot(i)[:h])
		if b.RandomFill {
			x.fill.rng.fillRandom(p[h:min(l, h+freshFill)])
			if h+freshFill < l {
				copy(p[h+freshFill:], x.fill.window(l-h-freshFill))
			}
		} else {
			clear(p[h:])
		}
		var err error
		if x.sendFn != nil {
			err = x.sendFn(p, s.peer, i, n)
		} else {
			_, err = x.conn.WriteToUDPAddrPort(p, s.peer)
		}
		if err != nil {
			if isBackpressureErr(err) {
				x.lastBackpressure = err
				s.stats[CountBackpressure].Add(1)
				s.stats[CountRefusedDatagrams].Add(uint64(n - i))
				s.countSent(i)
				return i, nil
			}
			s.countSent(i)
			if errors.Is(err, net.ErrClosed) {
				return i, net.ErrClosed
			}
			return i, fmt.Errorf("send %d-byte datagram to %v: %w", l, s.peer, err)
		}
	}
	s.countSent(n)
	return n, nil
}

func (s *Socket) countSent(n int) {
	if n > 0 {
		s.stats[CountSendCalls].Add(uint64(n))
		s.stats[CountSentDatagrams].Add(uint64(n))
	}
}

// groScratch is empty here: there is no UDP GRO off Linux.
type groScratch struct{}

func (s *Socket) recvBatch(b *dataphase.RecvBatch, limit int, clk *turnClock, _ *groScratch) error {
	x := &s.sys
	b.N = 0
	limit = min(limit, dataphase.MaxRecv)
	if limit <= 0 {
		return nil
	}
	if err := x.readErr; err != nil {
		x.readErr = nil
		return err
	}
	n := 0
	if x.stashed {
		x.stashed = false
		b.Pair = x.stashPair
		s.deliver(b, n, x.stash[:x.stashLen], x.stashPair.Mono)
		n++
	}
	var pair clock.Pair
	havePair := false
	for n < limit {
		l, from, ok, err := s.tryRead(x.stash)
		if err != nil {
			if n > 0 {
				break // report it with the next read
			}
			if errors.Is(err, net.ErrClosed) {
				return net.ErrClosed
			}
			return fmt.Errorf("recv on %v: %w", s.laddr, err)
		}
		if !ok {
			break
		}
		if s.peer.IsValid() && unmapAddrPort(from) != s.peer {
			continue
		}
		if !havePair {
			pair, havePair = readNow(clk), true
			b.Pair = pair
		}
		s.deliver(b, n, x.stash[:l], pair.Mono)
		n++
	}
	b.N = n
	if n > 0 {
		s.stats[CountRecvCalls].Add(uint64(n))
		s.stats[CountRecvDatagrams].Add(uint64(n))
	}
	return nil
}

func (s *Socket) deliver(b *dataphase.RecvBatch, i int, p []byte, t clock.Time) {
	copy(b.Buf(i), p)
	b.Dgrams[i] = dataphase.InDatagram{Len: len(p), Time: t}
}

// leaveNetpoller does nothing here: net.UDPConn waits in the netpoller
// already, and no executor of another epoll set takes the socket.
func (s *Socket) leaveNetpoller() {}
