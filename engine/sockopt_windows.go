package engine

import (
	"errors"
	"net/netip"
	"os"
	"syscall"
	"unsafe"
)

const (
	sysSOLSocket   = syscall.SOL_SOCKET
	sysSOSndbuf    = syscall.SO_SNDBUF
	sysSORcvbuf    = syscall.SO_RCVBUF
	sysIPProtoIP   = syscall.IPPROTO_IP
	sysIPTOS       = syscall.IP_TOS
	sysIPProtoIPv6 = syscall.IPPROTO_IPV6
	sysIPv6TClass  = 39 // IPV6_TCLASS, ws2ipdef.h
	// Windows ignores IP_TOS unless the QoS policy allows it; setting it
	// then succeeds without effect.

	wsaEWOULDBLOCK = syscall.Errno(10035)
	wsaENOBUFS     = syscall.Errno(10055)
	fionread       = 0x4004667f // FIONREAD, winsock.h

	// sysENOBUFS is a send refused for a full queue (tests play it).
	sysENOBUFS = wsaENOBUFS
)

func getsockoptInt(fd uintptr, level, opt int) (int, error) {
	return syscall.GetsockoptInt(syscall.Handle(fd), level, opt)
}

func setsockoptInt(fd uintptr, level, opt, v int) error {
	return syscall.SetsockoptInt(syscall.Handle(fd), level, opt, v)
}

// isBackpressureErr reports a send the system could not take now.
func isBackpressureErr(err error) bool {
	return errors.Is(err, wsaENOBUFS) || errors.Is(err, wsaEWOULDBLOCK)
}

// rawReader is tryRead's FIONREAD query, its function made once per
// socket: a closure made at each read escapes to the heap with what it
// captures.
type rawReader struct {
	fn         func(fd uintptr)
	avail, ret uint32
	err        error
}

// tryRead reads one waiting datagram without waiting. Go's Windows sockets
// are in blocking mode (it reads with overlapped I/O), so it asks FIONREAD
// first and reads only when a datagram is queued.
func (x *sysSocket) tryRead(buf []byte) (n int, from netip.AddrPort, ok bool, err error) {
	r := &x.raw
	if r.fn == nil {
		r.fn = func(fd uintptr) {
			r.err = syscall.WSAIoctl(syscall.Handle(fd), fionread, nil, 0,
				(*byte)(unsafe.Pointer(&r.avail)), uint32(unsafe.Sizeof(r.avail)), &r.ret, nil, 0)
		}
	}
	r.avail, r.err = 0, nil
	if err := x.rc.Control(r.fn); err != nil {
		return 0, netip.AddrPort{}, false, err
	}
	avail, ierr := r.avail, r.err
	if ierr != nil {
		return 0, netip.AddrPort{}, false, os.NewSyscallError("WSAIoctl(FIONREAD)", ierr)
	}
	if avail == 0 {
		return 0, netip.AddrPort{}, false, nil
	}
	n, from, err = x.conn.ReadFromUDPAddrPort(buf)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, netip.AddrPort{}, false, nil // a Wake's past deadline
		}
		return 0, netip.AddrPort{}, false, err
	}
	return n, from, true, nil
}
