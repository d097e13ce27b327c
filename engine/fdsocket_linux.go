//go:build !portable

package engine

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// SocketFromFD makes a Socket of a UDP socket that is already open and
// bound, such as a control socket systemd passes with socket activation,
// and takes ownership of fd: Close closes it, and so does SocketFromFD when
// it fails. The descriptor is switched to non-blocking mode and
// close-on-exec, as OpenUDP's sockets are, and gets the same receive
// timestamps; its buffer sizes stay what its opener chose (systemd's
// ReceiveBuffer=, SendBuffer=).
func SocketFromFD(fd int) (*Socket, error) {
	fail := func(err error) (*Socket, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("socket from descriptor %d: %w", fd, err)
	}
	if typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil {
		return fail(os.NewSyscallError("getsockopt SO_TYPE", err))
	} else if typ != unix.SOCK_DGRAM {
		return fail(errors.New("not a datagram socket"))
	}
	dom, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return fail(os.NewSyscallError("getsockopt SO_DOMAIN", err))
	}
	if dom != unix.AF_INET && dom != unix.AF_INET6 {
		return fail(errors.New("not an IPv4 or IPv6 socket"))
	}
	if proto, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL); err == nil && proto != unix.IPPROTO_UDP {
		return fail(errors.New("not a UDP socket"))
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return fail(os.NewSyscallError("getsockname", err))
	}
	laddr := addrPortOf(sa)
	if laddr.Port() == 0 {
		return fail(errors.New("socket is not bound to a port"))
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		return fail(os.NewSyscallError("fcntl O_NONBLOCK", err))
	}
	unix.CloseOnExec(fd)
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		return fail(os.NewSyscallError("setsockopt SO_TIMESTAMPNS", err))
	}
	s := &Socket{laddr: laddr, v6: dom == unix.AF_INET6}
	s.adopt(fd, SocketOptions{})
	return s, nil
}

// SocketFromFile is SocketFromFD for a descriptor held by f (systemd's
// activation.Files): it takes a duplicate of f's descriptor without
// switching f to blocking mode, as f.Fd() would, and closes f.
func SocketFromFile(f *os.File) (*Socket, error) {
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("socket from %s: %w", f.Name(), err)
	}
	nfd := -1
	var derr error
	if err := rc.Control(func(fd uintptr) {
		nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, fmt.Errorf("socket from %s: %w", f.Name(), err)
	}
	if derr != nil {
		return nil, fmt.Errorf("socket from %s: %w", f.Name(), os.NewSyscallError("fcntl F_DUPFD_CLOEXEC", derr))
	}
	return SocketFromFD(nfd)
}
