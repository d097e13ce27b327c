package control

import (
	"net/netip"
	"time"

	"github.com/udpstp/udpstp/dataphase"
)

// Socket is the Control Phase's view of one UDP socket. The engine's
// sockets implement it; the Control Phase only sends and receives control
// PDUs on it, then hands it to the Network to run the Data Phase.
type Socket interface {
	SendTo(b []byte, to netip.AddrPort) error
	Send(b []byte) error // on a connected socket
	// RecvFrom waits for one datagram until deadline (a zero deadline:
	// without limit); past it, it returns an error for which
	// errors.Is(err, os.ErrDeadlineExceeded) holds. Close ends the wait
	// with an error.
	RecvFrom(b []byte, deadline time.Time) (int, netip.AddrPort, error)
	Connect(peer netip.AddrPort) error
	SetTOS(tos uint8, ipv4Peer bool) error
	EnableRecvTOS(ipv4Peer bool) error
	LocalAddr() netip.AddrPort
	Close() error
}

// SocketOptions are what the Control Phase asks of a new socket.
type SocketOptions struct {
	Family  dataphase.Family
	V6Only  bool // an AF_INET6 socket that does not take IPv4 (-6)
	SockBuf int  // SO_SNDBUF/SO_RCVBUF request; 0 = system default
}

// DataPhase is a running Data Phase.
type DataPhase interface {
	Stop()                 // ask it to end; safe from any goroutine, idempotent
	Done() <-chan struct{} // closed after its last event was delivered
}

// Network opens sockets and runs Data Phases: the engine, in production.
type Network interface {
	ListenUDP(laddr netip.AddrPort, o SocketOptions) (Socket, error)
	// RunDataPhase drives core over sock until it ends, calling onEvent for
	// each event on the executor's thread (onEvent must not block).
	RunDataPhase(sock Socket, core *dataphase.Conn, onEvent func(dataphase.Event)) DataPhase
}

// IsIPv4 reports whether a peer is IPv4, including an IPv4-mapped address
// on a dual-stack socket: OB-UDPST treats those as IPv4 for payload sizes
// and TOS (see the package doc).
func IsIPv4(a netip.AddrPort) bool {
	return a.Addr().Unmap().Is4()
}
