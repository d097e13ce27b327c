package engine

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"time"

	"github.com/udpstp/udpstp/dataphase"
)

// SocketOptions configure OpenUDP.
type SocketOptions struct {
	// Family is FamilyV4 (AF_INET), FamilyV6 (AF_INET6, IPv6 only) or
	// FamilyAny: AF_INET for a plain IPv4 local address, otherwise AF_INET6
	// with IPV6_V6ONLY=V6Only, which for an unspecified address is the
	// dual-stack [::].
	Family dataphase.Family
	// V6Only sets IPV6_V6ONLY on a FamilyAny AF_INET6 socket.
	V6Only bool
	// SockBuf is requested for both SO_SNDBUF and SO_RCVBUF; 0 leaves the
	// system defaults. Read the result with Granted: the kernel caps the
	// request at net.core.wmem_max / rmem_max unless the process may use
	// SO_SNDBUFFORCE / SO_RCVBUFFORCE (CAP_NET_ADMIN), and Linux reports
	// twice what it was asked for, the other half being its bookkeeping
	// (socket(7)).
	SockBuf int
	// NoGSO keeps UDP GSO off (the CLI's --no-gso). GSO can fail silently
	// on some paths (OpenWrt PPPoE on 6.6.47 and later sends GSO messages
	// without error yet throughput collapses), where only a switch helps.
	NoGSO bool
	// GRO asks for UDP GRO on receive (UDP_GRO, Linux 5.0+; experimental,
	// off by default): the kernel may then hand over many datagrams of
	// the flow as one message, which the receive path cuts up again
	// (gro.go). A GSO message over loopback or a veth arrives whole, and
	// a NIC's GRO merges up to 64 datagrams. It costs a copy of every
	// payload into the executor's 64 KiB message buffers where the plain
	// path copies 208 bytes a datagram. A kernel that refuses the option
	// leaves the socket reading as without it (Stats, GROEnabled). Off
	// Linux it does nothing.
	GRO bool

	// setGRO, if set, stands for setsockopt(UDP_GRO) (gro_linux.go): the
	// tests play a kernel that refuses it.
	//lint:ignore U1000 read by gro_linux.go only: off Linux there is no GRO to refuse
	setGRO func(fd int) error
}

// ErrNotConnected is returned by the connected-socket operations before
// Connect.
var ErrNotConnected = errors.New("socket not connected")

// Socket is one non-blocking UDP socket. The control-phase helpers (SendTo,
// Send, RecvFrom) may be called from any goroutine; the Data Phase batch
// calls (SendBatch, RecvBatch) belong to one goroutine at a time, the
// executor's, because they share the Socket's preallocated message arrays.
// Close may be called from any goroutine at any time.
type Socket struct {
	// OnGSODisabled, if set before the Data Phase starts, is called once,
	// on the executor's thread, when the kernel refuses a GSO send and GSO
	// is turned off for this socket.
	OnGSODisabled func(msg string)

	laddr   netip.AddrPort
	v6      bool           // AF_INET6 socket
	peer    netip.AddrPort // connected peer, unmapped; invalid before Connect
	granted [2]int         // SO_SNDBUF, SO_RCVBUF read back
	gso     atomic.Bool
	gro     bool // UDP GRO is on, fixed at open
	closed  atomic.Bool
	stats   socketStats

	sys sysSocket // platform part
}

// The platform layer: socket_linux.go and its neighbours (raw system
// calls), or socket_other.go (net.UDPConn: off Linux, and with -tags
// portable). Socket's methods in this file hold what both share: the
// checks of the arguments and of a closed socket, the choice of options,
// the wording of errors. They call the platform through the narrow
// interfaces below, which each build checks, so that neither side can
// grow an operation the other lacks. What a platform does with its own
// state alone is a method of its sysSocket; what needs the Socket (its
// counters, addresses, GSO switch) is a method of Socket in its files.
type (
	// platformSocket is what a sysSocket gives.
	platformSocket interface {
		handle() int // the descriptor, -1 once closed
		close() error
		setsockoptInt(level, opt, v int) error
		setRecvErr(on, v6 bool) error
		pathMTU() int
		leaveNetpoller()
		lastSendWouldBlock() bool
		lastSendBackpressure() bool
	}
	// platformOps is what each platform adds to Socket.
	platformOps interface {
		open(p bindPlan, o SocketOptions) error
		connect(peer, a netip.AddrPort) error
		sendTo(b []byte, a netip.AddrPort) error
		send(b []byte) error
		recvFrom(b []byte, deadline time.Time) (int, netip.AddrPort, error)
		sendBatch(b *dataphase.SendBuffer) (int, error)
		recv(b *dataphase.RecvBatch, n int, clk *turnClock, gro *groScratch) error
		clearError()
		EnablePktInfo() error
		RecvFromTo(b []byte, deadline time.Time) (int, netip.AddrPort, netip.Addr, error)
		SendToFrom(b []byte, to netip.AddrPort, from netip.Addr) error
	}
)

var (
	_ platformSocket = (*sysSocket)(nil)
	_ platformOps    = (*Socket)(nil)
)

// OpenUDP opens a non-blocking UDP socket bound to laddr (see SocketOptions
// for the family rules; an unset laddr with FamilyAny binds [::] dual-stack,
// falling back to 0.0.0.0 where the system has no IPv6).
func OpenUDP(laddr netip.AddrPort, o SocketOptions) (*Socket, error) {
	p, err := planBind(laddr, o)
	if err != nil {
		return nil, err
	}
	s := &Socket{}
	if err := s.open(p, o); err != nil {
		return nil, err
	}
	return s, nil
}

// LocalAddr returns the bound address (an IPv4-mapped one unmapped); after
// Connect, the source address the kernel chose for the peer.
func (s *Socket) LocalAddr() netip.AddrPort { return s.laddr }

// Peer returns the connected peer (unmapped), or the zero AddrPort.
func (s *Socket) Peer() netip.AddrPort { return s.peer }

// Granted returns SO_SNDBUF and SO_RCVBUF as the kernel reports them after
// OpenUDP's request (on Linux twice the usable payload, see SockBuf; 0 where
// the platform cannot read them back).
func (s *Socket) Granted() (snd, rcv int) { return s.granted[0], s.granted[1] }

// GSOEnabled reports whether SendBatch may use UDP GSO: the probe at open
// succeeded, NoGSO was not set, and the kernel has not refused a GSO send.
func (s *Socket) GSOEnabled() bool { return s.gso.Load() }

// GROEnabled reports whether RecvBatch reads with UDP GRO: SocketOptions
// asked for it and the kernel took the option.
func (s *Socket) GROEnabled() bool { return s.gro }

// Stats returns a snapshot of the socket's counters.
func (s *Socket) Stats() SocketStats {
	st := SocketStats{GSO: s.gso.Load(), GRO: s.gro}
	for i := range s.stats {
		st.Counts[i] = s.stats[i].Load()
	}
	return st
}

// Fd returns the socket's file descriptor (a SOCKET handle on Windows), or
// -1 once closed. The Socket keeps owning it.
func (s *Socket) Fd() int {
	if s.closed.Load() {
		return -1
	}
	return s.sys.handle()
}

// Close closes the socket. It is idempotent, and a RecvFrom or executor
// wait blocked on the socket in another goroutine returns promptly.
func (s *Socket) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if err := s.sys.close(); err != nil {
		return fmt.Errorf("close %v: %w", s.laddr, err)
	}
	return nil
}

// Connect fixes the socket's peer: the kernel then drops datagrams from
// anyone else, Send and SendBatch go there, and ICMP errors for it are
// reported (the path counters, socket_counters.go). On Linux, datagrams
// already waiting on the socket arrived before that filter and may come
// from anyone: Connect discards them (both ends connect before they send
// the Test Activation that starts the peer's Data Phase, so none of the
// peer's Data Phase is among them), and it reads the path MTU that bounds
// GSO. A plain IPv4 peer on an AF_INET6 socket is mapped.
// Off Linux, Connect is emulated (socket_other.go): the datagrams of
// anyone else are dropped on receive, by peerFilter (addr.go).
func (s *Socket) Connect(peer netip.AddrPort) error {
	if s.closed.Load() {
		return net.ErrClosed
	}
	a, err := addrForSocket(peer, s.v6)
	if err != nil {
		return fmt.Errorf("connect %v: %w", s.laddr, err)
	}
	if err := s.connect(peer, a); err != nil {
		return err
	}
	s.peer = unmapAddrPort(peer)
	return nil
}

// PathMTU returns the path MTU read from the kernel at Connect (refreshed
// after EMSGSIZE), 0 if unknown or off Linux. Datagrams whose packets
// exceed it are sent without GSO, so the kernel fragments them.
func (s *Socket) PathMTU() int { return s.sys.pathMTU() }

// SendTo sends one datagram to to (control phase).
func (s *Socket) SendTo(b []byte, to netip.AddrPort) error {
	if s.closed.Load() {
		return net.ErrClosed
	}
	a, err := addrForSocket(to, s.v6)
	if err != nil {
		return fmt.Errorf("send to %v: %w", to, err)
	}
	if err := s.sendTo(b, a); err != nil {
		return fmt.Errorf("send to %v: %w", to, err)
	}
	return nil
}

// Send sends one datagram to the connected peer (control phase).
func (s *Socket) Send(b []byte) error {
	if s.closed.Load() {
		return net.ErrClosed
	}
	if !s.peer.IsValid() {
		return ErrNotConnected
	}
	if err := s.send(b); err != nil {
		return fmt.Errorf("send to %v: %w", s.peer, err)
	}
	return nil
}

// RecvFrom reads one datagram into b, waiting until one arrives, the
// deadline passes (an error for which errors.Is(err,
// os.ErrDeadlineExceeded) holds) or the socket is closed (net.ErrClosed).
// A zero deadline waits without limit. from is unmapped. A datagram longer
// than b is truncated to len(b) and n is len(b).
func (s *Socket) RecvFrom(b []byte, deadline time.Time) (n int, from netip.AddrPort, err error) {
	return s.recvFrom(b, deadline)
}

// SetTOS sets the TOS / Traffic Class byte of the datagrams sent: IP_TOS
// for IPv4 peers (also on an AF_INET6 socket talking to an IPv4-mapped
// peer, where Linux takes the IPv4 header's TOS from IP_TOS and ignores
// IPV6_TCLASS), IPV6_TCLASS for IPv6 peers.
func (s *Socket) SetTOS(tos uint8, ipv4Peer bool) error {
	return s.setTOSOption(tosSend, ipv4Peer, int(tos))
}

// EnableRecvTOS asks for the TOS / Traffic Class of each received datagram:
// IP_RECVTOS for IPv4 peers (also on an AF_INET6 socket), IPV6_RECVTCLASS
// for IPv6 peers. Off Linux it does nothing: TOS is not received there.
func (s *Socket) EnableRecvTOS(ipv4Peer bool) error {
	return s.setTOSOption(tosRecv, ipv4Peer, 1)
}

// tosOptions are the options of one traffic class setting, by the peer's
// IP version: v4 at the IP level, v6 at the IPv6 level, which an AF_INET
// socket does not have. -1: the platform has no such option, and setting
// it does nothing (after the same checks).
type tosOptions struct {
	v4, v6       int
	name4, name6 string
}

// setTOSOption sets the option of o for packets to an IPv4 peer
// (ipv4Peer) or an IPv6 one to v. Errors name the option chosen.
func (s *Socket) setTOSOption(o tosOptions, ipv4Peer bool, v int) error {
	if s.closed.Load() {
		return net.ErrClosed
	}
	level, opt, name := sysIPProtoIP, o.v4, o.name4
	if !ipv4Peer {
		if !s.v6 {
			return fmt.Errorf("%s on IPv4 socket %v", o.name6, s.laddr)
		}
		level, opt, name = sysIPProtoIPv6, o.v6, o.name6
	}
	if opt < 0 {
		return nil
	}
	if err := s.sys.setsockoptInt(level, opt, v); err != nil {
		if errors.Is(err, net.ErrClosed) {
			return net.ErrClosed
		}
		return fmt.Errorf("%s %#x on %v: %w", name, v, s.laddr, os.NewSyscallError("setsockopt", err))
	}
	return nil
}

// SetRecvErr turns IP_RECVERR (and on an AF_INET6 socket IPV6_RECVERR) on
// or off. With it on, an unconnected socket too reports an ICMP error for
// a datagram it sent on its next receive: a client's Setup Request to a
// port where nothing listens gets ECONNREFUSED at once. Turning it off
// empties the error queue it filled. Off Linux it does nothing.
func (s *Socket) SetRecvErr(on bool) error {
	if s.closed.Load() {
		return net.ErrClosed
	}
	if err := s.sys.setRecvErr(on, s.v6); err != nil {
		if errors.Is(err, net.ErrClosed) {
			return net.ErrClosed
		}
		return fmt.Errorf("ICMP errors on receive, %v: %w", s.laddr, err)
	}
	return nil
}

// SendBatch sends b.Dgrams[0:b.N] to the connected peer: datagram i is
// b.Slot(i) followed by Len-HdrLen filler bytes (zeros, or pseudo-random
// bytes when b.RandomFill is set). It returns how many datagrams the kernel
// accepted, in order; the others were refused by backpressure (EAGAIN,
// ENOBUFS: counted, not an error) and are the caller's to defer. An error
// is returned only for a failure the socket cannot recover from. It
// allocates nothing.
func (s *Socket) SendBatch(b *dataphase.SendBuffer) (sent int, err error) {
	n := b.N
	if n <= 0 {
		return 0, nil
	}
	if n > len(b.Dgrams) {
		return 0, fmt.Errorf("send plan of %d datagrams, at most %d", n, len(b.Dgrams))
	}
	return s.sendBatch(b)
}

// RecvBatch reads the datagrams waiting on the socket, at most
// min(max, dataphase.MaxRecv), into b without waiting: b.N is 0 when none
// was waiting. Each datagram keeps its first dataphase.RecvSlotLen bytes
// and its real length, its kernel receive time converted to the Test Time
// Base (b.Pair.Mono where the platform gives none) and its TOS when
// EnableRecvTOS was called. b.Pair is read right after the read returns
// datagrams. It allocates nothing, but on a GRO socket its first read
// makes the message buffers an executor shares among its sockets, here
// the socket's own (256 KiB).
func (s *Socket) RecvBatch(b *dataphase.RecvBatch, max int) error {
	return s.recvBatch(b, max, nil, nil)
}

// recvBatch is RecvBatch for the executors: clk is the turn's clock (nil:
// read the clock pair afresh), gro the executor's GRO scratch (nil: the
// socket's own, made at its first GRO read).
func (s *Socket) recvBatch(b *dataphase.RecvBatch, limit int, clk *turnClock, gro *groScratch) error {
	b.N = 0
	n := min(limit, dataphase.MaxRecv)
	if n <= 0 {
		return nil
	}
	return s.recv(b, n, clk, gro)
}
