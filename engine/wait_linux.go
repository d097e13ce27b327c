//go:build !portable

package engine

import (
	"errors"
	"net"
	"os"
	"sync"

	"github.com/udpstp/udpstp/clock"
	"golang.org/x/sys/unix"
)

// SetTimerSlack sets the calling thread's timer slack (PR_SET_TIMERSLACK):
// how much later than asked the kernel may end its timed waits, to group
// wake-ups. The default of 50 µs is a third of OB-UDPST's 100 µs base
// interval; 1 ns took the median overshoot of a 100 µs ppoll from 89 µs to
// 22 µs on the measuring VM. The setting is per thread, so call it on a
// locked thread: the engine calls it on each of its threads. 0 sets the
// thread's default back.
func SetTimerSlack(ns int) error {
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(ns), 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl(PR_SET_TIMERSLACK)", err)
	}
	return nil
}

// Waker ends an executor's wait from another goroutine: an eventfd that
// the wait polls along with its sockets.
type Waker struct {
	mu     sync.Mutex // orders Wake against Close, so fd is never reused
	fd     int
	closed bool
}

// NewWaker returns a Waker.
func NewWaker() (*Waker, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	return &Waker{fd: fd}, nil
}

// Wake ends the current or next wait. It is safe from any goroutine and
// does nothing once the Waker is closed.
func (w *Waker) Wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	one := [8]byte{1}
	// EAGAIN only when the counter would overflow: a wake is pending anyway.
	_, _ = unix.Write(w.fd, one[:])
}

// drain resets the eventfd after a wait saw it readable. Only the waiting
// thread calls it, and only before Close.
func (w *Waker) drain() {
	var buf [8]byte
	_, _ = unix.Read(w.fd, buf[:])
}

// Close releases the eventfd.
func (w *Waker) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	return unix.Close(w.fd)
}

// wait blocks in one ppoll until the socket of fds (at most one) is readable (or writable when
// asked, or in error), wk is woken, or deadline passes on the Test Time
// Base; clock.Never waits without limit. now is the caller's reading of the
// Test Time Base just before the call: the turn's pair advanced by the
// runtime's cheap monotonic clock, where reading CLOCK_MONOTONIC_RAW again
// would cost a system call (about 400 ns through x/sys) per wait. The
// timeout has nanosecond resolution; with timer slack 1 ns the kernel ends
// it within tens of µs. It is relative, so it runs on CLOCK_MONOTONIC; the
// difference to the RAW Test Time Base over one wait is a few ppm, and the
// executor re-checks its deadlines against the RAW clock on waking.
// EINTR is not an error: the wait just ends early. The readiness found is
// stored in fds.
func wait(fds []waitFD, wk *Waker, deadline, now clock.Time) error {
	if err := checkWaitFDs(fds); err != nil {
		return err
	}
	var p [3]unix.PollFd // the socket, its close signal, the Waker
	k := 0
	if wk != nil {
		p[2] = unix.PollFd{Fd: int32(wk.fd), Events: unix.POLLIN}
		k = 1
	}
	var ts *unix.Timespec
	var t unix.Timespec
	if deadline != clock.Never {
		d := int64(deadline - now)
		if d < 0 {
			d = 0
		}
		t = unix.NsecToTimespec(d)
		ts = &t
	}
	if len(fds) == 0 {
		return ppollWait(p[2:2+k], ts, wk)
	}
	f := &fds[0]
	f.reset()
	// The socket's mu is held shared across the ppoll, so Close cannot
	// close a descriptor being polled; Close first makes cancelFd
	// readable, which ends the ppoll.
	err := f.sock.sys.withFd(func(fd int) error {
		ev := int16(unix.POLLIN)
		if f.out {
			ev |= unix.POLLOUT
		}
		p[0] = unix.PollFd{Fd: int32(fd), Events: ev}
		p[1] = unix.PollFd{Fd: int32(f.sock.sys.cancelFd), Events: unix.POLLIN}
		if err := ppollWait(p[:2+k], ts, wk); err != nil {
			return err
		}
		r := p[0].Revents
		f.in = r&unix.POLLIN != 0
		f.errored = r&(unix.POLLERR|unix.POLLHUP) != 0
		f.closed = r&unix.POLLNVAL != 0 || p[1].Revents != 0
		return nil
	})
	if errors.Is(err, net.ErrClosed) {
		f.closed = true
		return nil
	}
	return err
}

// ppollWait waits in one ppoll on p, whose last entry is wk's when wk is
// set, and drains wk if it was woken. EINTR is not an error: the wait just
// ends early.
func ppollWait(p []unix.PollFd, ts *unix.Timespec, wk *Waker) error {
	if _, err := unix.Ppoll(p, ts, nil); err != nil {
		if err == unix.EINTR {
			return nil
		}
		return os.NewSyscallError("ppoll", err)
	}
	if wk != nil && p[len(p)-1].Revents != 0 {
		wk.drain()
	}
	return nil
}
