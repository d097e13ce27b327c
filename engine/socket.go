package engine

import (
	"errors"
	"net/netip"
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
	stats   [NumSocketCounters]atomic.Uint64

	sys sysSocket // platform part
}

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
func (s *Socket) Fd() int { return s.fd() }

// Close closes the socket. It is idempotent, and a RecvFrom or executor
// wait blocked on the socket in another goroutine returns promptly.
func (s *Socket) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.close()
}

// Connect fixes the socket's peer: the kernel then drops datagrams from
// anyone else, Send and SendBatch go there, and ICMP errors for it are
// reported (the path counters, socket_counters.go). On Linux, datagrams
// already waiting on the socket arrived before that filter and may come
// from anyone: Connect discards them (both ends connect before they send
// the Test Activation that starts the peer's Data Phase, so none of the
// peer's Data Phase is among them), and it reads the path MTU that bounds
// GSO. A plain IPv4 peer on an AF_INET6 socket is mapped.
func (s *Socket) Connect(peer netip.AddrPort) error { return s.connect(peer) }

// SendTo sends one datagram to to (control phase).
func (s *Socket) SendTo(b []byte, to netip.AddrPort) error { return s.sendTo(b, to) }

// Send sends one datagram to the connected peer (control phase).
func (s *Socket) Send(b []byte) error { return s.send(b) }

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
func (s *Socket) SetTOS(tos uint8, ipv4Peer bool) error { return s.setTOS(tos, ipv4Peer) }

// EnableRecvTOS asks for the TOS / Traffic Class of each received datagram:
// IP_RECVTOS for IPv4 peers (also on an AF_INET6 socket), IPV6_RECVTCLASS
// for IPv6 peers. Off Linux it does nothing: TOS is not received there.
func (s *Socket) EnableRecvTOS(ipv4Peer bool) error { return s.enableRecvTOS(ipv4Peer) }

// SetRecvErr turns IP_RECVERR (and on an AF_INET6 socket IPV6_RECVERR) on
// or off. With it on, an unconnected socket too reports an ICMP error for
// a datagram it sent on its next receive: a client's Setup Request to a
// port where nothing listens gets ECONNREFUSED at once. Turning it off
// empties the error queue it filled. Off Linux it does nothing.
func (s *Socket) SetRecvErr(on bool) error { return s.setRecvErr(on) }

// SendBatch sends b.Dgrams[0:b.N] to the connected peer: datagram i is
// b.Slot(i) followed by Len-HdrLen filler bytes (zeros, or pseudo-random
// bytes when b.RandomFill is set). It returns how many datagrams the kernel
// accepted, in order; the others were refused by backpressure (EAGAIN,
// ENOBUFS: counted, not an error) and are the caller's to defer. An error
// is returned only for a failure the socket cannot recover from. It
// allocates nothing.
func (s *Socket) SendBatch(b *dataphase.SendBuffer) (sent int, err error) {
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
