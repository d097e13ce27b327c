//go:build unix && (!linux || portable)

package engine

import (
	"errors"
	"net/netip"
	"os"
	"syscall"
)

const (
	sysSOLSocket   = syscall.SOL_SOCKET
	sysSOSndbuf    = syscall.SO_SNDBUF
	sysSORcvbuf    = syscall.SO_RCVBUF
	sysIPProtoIP   = syscall.IPPROTO_IP
	sysIPTOS       = syscall.IP_TOS
	sysIPProtoIPv6 = syscall.IPPROTO_IPV6
	sysIPv6TClass  = syscall.IPV6_TCLASS

	// sysENOBUFS is a send refused for a full queue (tests play it).
	sysENOBUFS = syscall.ENOBUFS
)

func getsockoptInt(fd uintptr, level, opt int) (int, error) {
	return syscall.GetsockoptInt(int(fd), level, opt)
}

func setsockoptInt(fd uintptr, level, opt, v int) error {
	return syscall.SetsockoptInt(int(fd), level, opt, v)
}

// isBackpressureErr reports a send the system could not take now: ENOBUFS
// (macOS returns it when an interface queue is full, where Linux would
// block or drop) or EAGAIN.
func isBackpressureErr(err error) bool {
	return errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.EAGAIN)
}

// rawReader is tryRead's read, its function made once per socket: a
// closure made at each read escapes to the heap with what it captures
// (four allocations per read, a receive batch's mostly).
type rawReader struct {
	fn  func(fd uintptr) bool
	buf []byte
	n   int
	sa  syscall.Sockaddr // syscall.Recvfrom allocates it: one per datagram
	err error
}

// tryRead reads one waiting datagram without waiting: Go keeps its sockets
// non-blocking on Unix, and returning true from the raw read function tells
// it not to park the goroutine.
func (x *sysSocket) tryRead(buf []byte) (n int, from netip.AddrPort, ok bool, err error) {
	r := &x.raw
	if r.fn == nil {
		r.fn = func(fd uintptr) bool {
			r.n, r.sa, r.err = syscall.Recvfrom(int(fd), r.buf, 0)
			return true
		}
	}
	r.buf = buf
	err = x.rc.Read(r.fn)
	n, sa, rerr := r.n, r.sa, r.err
	r.buf, r.sa, r.err = nil, nil, nil
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, netip.AddrPort{}, false, nil // a Wake's past deadline
		}
		return 0, netip.AddrPort{}, false, err
	}
	switch {
	case rerr == nil:
	case errors.Is(rerr, syscall.EAGAIN), errors.Is(rerr, syscall.EINTR):
		return 0, netip.AddrPort{}, false, nil
	default:
		return 0, netip.AddrPort{}, false, os.NewSyscallError("recvfrom", rerr)
	}
	return n, fromSockaddr(sa), true, nil
}

// fromSockaddr converts the source address of a datagram read, its zone
// (a link-local peer's interface) kept.
func fromSockaddr(sa syscall.Sockaddr) netip.AddrPort {
	switch sa := sa.(type) {
	case *syscall.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *syscall.SockaddrInet6:
		return addrPort6(sa.Addr, sa.Port, sa.ZoneId)
	}
	return netip.AddrPort{}
}
