//go:build !portable

package engine

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// The Control Phase's I/O on a Socket: single datagrams sent with a short
// wait for room, and received through the Go runtime's netpoller, so that
// a socket awaiting its Test Activation parks a goroutine, never an OS
// thread. The Data Phase's batch calls are in batch_linux.go.

// sendTo sends b to a, an address in the socket's family form (SendTo
// checked it).
func (s *Socket) sendTo(b []byte, a netip.AddrPort) error {
	sa := sockaddrOf(a, s.v6)
	return s.sys.withFd(func(fd int) error {
		return s.sendRetry(func() error { return unix.Sendto(fd, b, 0, sa) })
	})
}

// send sends b to the connected peer.
func (s *Socket) send(b []byte) error {
	return s.sys.withFd(func(fd int) error {
		return s.sendRetry(func() error { return unix.Sendto(fd, b, 0, nil) })
	})
}

// sendRetry runs a control-phase send, waiting up to controlSendWait for
// room when the send buffer is full (the Data Phase never waits: it counts
// backpressure). The caller holds mu shared.
func (s *Socket) sendRetry(send func() error) error {
	end := time.Now().Add(controlSendWait)
	for {
		err := send()
		switch err {
		case nil:
			return nil
		case unix.EINTR:
			continue
		case unix.EAGAIN, unix.ENOBUFS:
			d := time.Until(end)
			if d <= 0 {
				return os.NewSyscallError("sendto", err)
			}
			events := int16(unix.POLLOUT)
			if err == unix.ENOBUFS {
				// A queue further down refused it: the socket stays
				// writable, so POLLOUT would return at once. Wait a
				// little (only Close ends it early) instead of spinning.
				events, d = 0, min(d, controlRefusedWait)
			}
			if closed, perr := s.pollFd(events, d); perr != nil {
				return perr
			} else if closed {
				return net.ErrClosed
			}
			continue
		}
		return os.NewSyscallError("sendto", err)
	}
}

// pollFd waits up to d (negative: no limit) for events on the socket or for
// Close. The caller holds mu shared.
func (s *Socket) pollFd(events int16, d time.Duration) (closed bool, err error) {
	x := &s.sys
	if x.cancelFd < 0 && (d < 0 || d > noCancelSlice) {
		// No close signal yet (a socket no executor took): wait in short
		// slices, so that Close, which waits for mu, is not held long.
		d = noCancelSlice
	}
	var ts *unix.Timespec
	if d >= 0 {
		t := unix.NsecToTimespec(int64(d))
		ts = &t
	}
	p := [2]unix.PollFd{{Fd: int32(x.fd), Events: events}, {Fd: int32(x.cancelFd), Events: unix.POLLIN}}
	if _, err := unix.Ppoll(p[:], ts, nil); err != nil && err != unix.EINTR {
		return false, os.NewSyscallError("ppoll", err)
	}
	return p[1].Revents != 0 || s.closed.Load(), nil
}

// noCancelSlice bounds a control-phase send's wait on a socket without a
// close signal.
const noCancelSlice = 20 * time.Millisecond

func (s *Socket) recvFrom(b []byte, deadline time.Time) (int, netip.AddrPort, error) {
	var (
		n  int
		sa unix.Sockaddr
	)
	err := s.controlRead(deadline, func(fd int) (err error) {
		n, sa, err = unix.Recvfrom(fd, b, 0)
		return err
	})
	if err != nil {
		return 0, netip.AddrPort{}, err
	}
	return n, addrPortOf(sa), nil
}

// controlRead runs read, a non-blocking receive on the descriptor, once a
// datagram is there: at once when one is queued (a flooded control socket
// never waits), else after a wait in the runtime's netpoller until
// deadline (zero: without limit). It turns the outcome into RecvFrom's
// errors.
func (s *Socket) controlRead(deadline time.Time, read func(fd int) error) error {
	var err error
	if cerr := s.sys.withFd(func(fd int) error {
		err = retryEINTR(fd, read)
		if err == unix.EAGAIN {
			err = s.waitRead(deadline, read)
		}
		return nil
	}); cerr != nil {
		return cerr
	}
	switch {
	case err == nil:
		return nil
	case s.closed.Load():
		return net.ErrClosed // Close ended the wait with a past deadline
	case isPathError(err):
		s.stats.countPath(pathClassOf(err.(unix.Errno)))
		return fmt.Errorf("recv on %v from %v: %w", s.laddr, s.peer, os.NewSyscallError("recvfrom", err))
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("recv on %v: %w", s.laddr, os.ErrDeadlineExceeded)
	case s.closed.Load():
		return net.ErrClosed
	case errors.As(err, new(unix.Errno)):
		return fmt.Errorf("recv on %v: %w", s.laddr, os.NewSyscallError("recvfrom", err))
	}
	return fmt.Errorf("recv on %v: %w", s.laddr, err)
}

// retryEINTR runs read on fd again while it is interrupted.
func retryEINTR(fd int, read func(fd int) error) error {
	for {
		if err := read(fd); err != unix.EINTR {
			return err
		}
	}
}

// waitRead runs read through the runtime's netpoller, waiting until
// deadline. The caller holds mu shared.
func (s *Socket) waitRead(deadline time.Time, read func(fd int) error) error {
	f, err := s.netpollerFile(deadline)
	if err != nil {
		return err
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		rerr = retryEINTR(int(fd), read)
		return rerr != unix.EAGAIN
	}); err != nil {
		return err
	}
	return rerr
}

// netpollerFile returns the socket's descriptor in the netpoller, making
// it at the first wait, with its read deadline set. The deadline is set
// under waitMu after closed is checked, so a Close that came first is
// seen and one that comes later overrides it with its past deadline.
func (s *Socket) netpollerFile(deadline time.Time) (*os.File, error) {
	x := &s.sys
	x.waitMu.Lock()
	defer x.waitMu.Unlock()
	if s.closed.Load() {
		return nil, net.ErrClosed
	}
	if x.waitFile == nil {
		// fd is O_NONBLOCK, so os.NewFile registers it with the
		// netpoller; the File owns fd from now on (close).
		x.waitFile = os.NewFile(uintptr(x.fd), "udp "+s.laddr.String())
	}
	if err := x.waitFile.SetReadDeadline(deadline); err != nil {
		return nil, err
	}
	return x.waitFile, nil
}

// leaveNetpoller readies the socket for an executor, which calls it when
// it takes the socket: it makes the close signal the executor's wait
// watches, and takes fd out of the netpoller (its own epoll set or ppoll
// watches the socket from then on, and the runtime must not wake for
// every datagram of the Data Phase). fd moves to a duplicate, with mu held
// exclusively so no one uses the old number meanwhile, and the netpoller's
// File, which owns the old number, is closed.
func (x *sysSocket) leaveNetpoller() {
	x.waitMu.Lock()
	if x.waitFile != nil {
		_ = x.waitFile.SetReadDeadline(pastDeadline) // a RecvFrom still waiting lets go of mu
	}
	x.waitMu.Unlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	x.waitMu.Lock()
	defer x.waitMu.Unlock()
	if x.fd < 0 {
		return
	}
	if x.cancelFd < 0 {
		// Without it, an executor's wait ends at its next deadline rather
		// than at Close; only a process out of descriptors gets here.
		if cfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err == nil {
			x.cancelFd = cfd
		}
	}
	if x.waitFile == nil {
		return
	}
	dup, err := unix.FcntlInt(uintptr(x.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return // fd stays in the netpoller: only spurious wake-ups
	}
	old := x.waitFile
	x.fd, x.waitFile = dup, nil
	old.Close()
}
