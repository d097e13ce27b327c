//go:build !linux || portable

package engine

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
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
// datagrams from anyone else are dropped on receive (peerFilter, addr.go,
// at every read). So ICMP errors are not reported (no ECONNREFUSED), which
// for a speed test is no loss.

type sysSocket struct {
	conn *net.UDPConn
	rc   syscall.RawConn

	peer4  bool
	filter peerFilter // the emulated connect

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

// handle is Fd's: -1 once closed (Control fails).
func (x *sysSocket) handle() int {
	fd := -1
	_ = x.rc.Control(func(f uintptr) { fd = int(f) })
	return fd
}

func (x *sysSocket) close() error { return x.conn.Close() }

// connect records the peer (Connect checked it) for sends and the filter.
func (s *Socket) connect(peer, _ netip.AddrPort) error {
	s.sys.filter = newPeerFilter(peer)
	s.sys.peer4 = IsIPv4Peer(peer)
	return nil
}

// pathMTU is 0: the path MTU is not read off Linux (there is no GSO to
// bound).
func (x *sysSocket) pathMTU() int { return 0 }

// sendTo sends b to a, an address in the socket's family form (SendTo
// checked it).
func (s *Socket) sendTo(b []byte, a netip.AddrPort) error {
	_, err := s.sys.conn.WriteToUDPAddrPort(b, a)
	return err
}

// send sends b to the recorded peer.
func (s *Socket) send(b []byte) error { return s.sendTo(b, s.peer) }

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
		if !s.sys.filter.accepts(from) {
			continue
		}
		return n, unmapAddrPort(from), nil
	}
}

// The traffic class options, for the shared choice of SetTOS and
// EnableRecvTOS (socket.go). None receives TOS here: that needs control
// messages, which net.UDPConn does not give without x/net.
var (
	tosSend = tosOptions{v4: sysIPTOS, name4: "IP_TOS", v6: sysIPv6TClass, name6: "IPV6_TCLASS"}
	tosRecv = tosOptions{v4: -1, name4: "IP_RECVTOS", v6: -1, name6: "IPV6_RECVTCLASS"}
)

// setsockoptInt sets an integer socket option.
func (x *sysSocket) setsockoptInt(level, opt, v int) error {
	var serr error
	if err := x.rc.Control(func(fd uintptr) { serr = setsockoptInt(fd, level, opt, v) }); err != nil {
		return err
	}
	return serr
}

// setRecvErr does nothing: ICMP errors are not reported here.
func (x *sysSocket) setRecvErr(_, _ bool) error { return nil }

// clearError does nothing: the socket is never connected, so no ICMP
// error is left pending on it.
func (s *Socket) clearError() {}

func (x *sysSocket) lastSendWouldBlock() bool { return false }

func (x *sysSocket) lastSendBackpressure() bool { return x.lastBackpressure != nil }

// sendBatch is SendBatch past its checks of b (1 to len(b.Dgrams)
// datagrams): one write per datagram, its header and filler
// (randomFiller.datagram) copied into one buffer.
func (s *Socket) sendBatch(b *dataphase.SendBuffer) (int, error) {
	x := &s.sys
	x.lastBackpressure = nil
	if s.closed.Load() {
		return 0, net.ErrClosed
	}
	if !s.peer.IsValid() {
		return 0, ErrNotConnected
	}
	n := b.N
	for i := 0; i < n; i++ {
		head, fill := x.fill.datagram(b, i)
		p := x.wbuf[:len(head)+len(fill)]
		copy(p[copy(p, head):], fill)
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
			return i, fmt.Errorf("send %d-byte datagram to %v: %w", len(p), s.peer, err)
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

// recv is recvBatch past its checks: limit is 1 to MaxRecv, b.N is 0.
func (s *Socket) recv(b *dataphase.RecvBatch, limit int, clk *turnClock, _ *groScratch) error {
	x := &s.sys
	if err := x.readErr; err != nil {
		x.readErr = nil
		return err
	}
	n := 0
	if x.stashed {
		x.stashed = false
		b.Pair = x.stashPair
		copy(b.Buf(n), x.stash[:x.stashLen])
		b.Dgrams[n] = dataphase.InDatagram{Len: x.stashLen, Time: x.stashPair.Mono}
		n++
	}
	var pair clock.Pair
	havePair := false
	for n < limit {
		l, from, ok, err := x.tryRead(x.stash)
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
		if !x.filter.accepts(from) {
			continue
		}
		if !havePair {
			pair, havePair = readNow(clk), true
			b.Pair = pair
		}
		copy(b.Buf(n), x.stash[:l])
		b.Dgrams[n] = dataphase.InDatagram{Len: l, Time: pair.Mono}
		n++
	}
	b.N = n
	if n > 0 {
		s.stats[CountRecvCalls].Add(uint64(n))
		s.stats[CountRecvDatagrams].Add(uint64(n))
	}
	return nil
}

// leaveNetpoller does nothing here: net.UDPConn waits in the netpoller
// already, and no executor of another epoll set takes the socket.
func (x *sysSocket) leaveNetpoller() {}
