//go:build !portable

package engine

import (
	"fmt"
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
// locked thread: the engine calls it on each of its threads.
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

// maxWaitFDs bounds the sockets of one wait, so the poll set lives on the
// stack.
const maxWaitFDs = 4

// wait blocks in one ppoll until one of fds is readable (or writable when
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
	if len(fds) > maxWaitFDs {
		return fmt.Errorf("wait on %d sockets, at most %d", len(fds), maxWaitFDs)
	}
	// Each socket's mu is held shared across the ppoll, so Close cannot
	// close a descriptor being polled; Close first makes cancelFd readable,
	// which ends the ppoll.
	locked := 0
	defer func() {
		for i := range locked {
			fds[i].sock.sys.mu.RUnlock()
		}
	}()
	var p [2*maxWaitFDs + 1]unix.PollFd
	k := 0
	for i := range fds {
		f := &fds[i]
		f.reset()
		x := &f.sock.sys
		x.mu.RLock()
		locked++
		if x.fd < 0 {
			f.closed = true
			return nil
		}
		ev := int16(unix.POLLIN)
		if f.out {
			ev |= unix.POLLOUT
		}
		p[k] = unix.PollFd{Fd: int32(x.fd), Events: ev}
		p[k+1] = unix.PollFd{Fd: int32(x.cancelFd), Events: unix.POLLIN}
		k += 2
	}
	wi := -1
	if wk != nil {
		wi = k
		p[k] = unix.PollFd{Fd: int32(wk.fd), Events: unix.POLLIN}
		k++
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
	if _, err := unix.Ppoll(p[:k], ts, nil); err != nil {
		if err == unix.EINTR {
			return nil
		}
		return os.NewSyscallError("ppoll", err)
	}
	for i := range fds {
		f := &fds[i]
		r := p[2*i].Revents
		f.in = r&unix.POLLIN != 0
		f.errored = r&(unix.POLLERR|unix.POLLHUP) != 0
		f.closed = r&unix.POLLNVAL != 0 || p[2*i+1].Revents != 0
	}
	if wi >= 0 && p[wi].Revents != 0 {
		wk.drain()
	}
	return nil
}
