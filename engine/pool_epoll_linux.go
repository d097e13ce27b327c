//go:build !portable

package engine

// The epoll plumbing of an Engine Thread of the pool: its sockets'
// registrations, the readiness they report, and the wait for a deadline,
// readiness or a command.

import (
	"os"
	"time"

	"github.com/udpstp/udpstp/clock"
	"golang.org/x/sys/unix"
)

const (
	// maxEpollEvents is how many readiness events one epoll_wait takes;
	// more are collected by calling again.
	maxEpollEvents = 256
	// maxGroupVisit bounds the heap entries a grouped wait looks at.
	maxGroupVisit = 512
	// epollIn is what every socket is registered for: readable, edge
	// triggered (EPOLLERR and EPOLLHUP are always reported). EPOLLOUT is
	// added only while a Test Connection waits for room after EAGAIN:
	// registered for good, every datagram the kernel frees would wake
	// the thread (sock_wfree -> sk_write_space).
	epollIn = unix.EPOLLIN | unix.EPOLLET
)

// epollAdd puts c's socket and its close signal into the epoll set. The
// close signal is the socket's cancel eventfd, which Close makes readable
// before it closes both descriptors; the thread registers its own
// duplicate of it, so the registration, and the event Close raised,
// outlive Close's close (an epoll registration ends when the last
// descriptor of its file is closed).
func (t *poolThread) epollAdd(c *PoolConn) error {
	x := &c.sock.sys
	return x.withFd(func(fd int) error {
		cfd, err := unix.FcntlInt(uintptr(x.cancelFd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return os.NewSyscallError("fcntl(F_DUPFD_CLOEXEC)", err)
		}
		ev := unix.EpollEvent{Events: epollIn, Fd: c.slot, Pad: c.gen << 1}
		if err := unix.EpollCtl(t.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			unix.Close(cfd)
			return os.NewSyscallError("epoll_ctl", err)
		}
		ev = unix.EpollEvent{Events: epollIn, Fd: c.slot, Pad: c.gen<<1 | 1}
		if err := unix.EpollCtl(t.epfd, unix.EPOLL_CTL_ADD, cfd, &ev); err != nil {
			_ = unix.EpollCtl(t.epfd, unix.EPOLL_CTL_DEL, fd, nil)
			unix.Close(cfd)
			return os.NewSyscallError("epoll_ctl", err)
		}
		c.cancelFd = cfd
		return nil
	})
}

// epollDel takes c's socket and close signal out of the epoll set. A
// closed socket left it already, and its descriptor number may belong to
// another one now, so it is left alone (the socket's lock keeps Close out
// meanwhile).
func (t *poolThread) epollDel(c *PoolConn) {
	if c.cancelFd >= 0 {
		// Our descriptor is a duplicate of the socket's close signal:
		// closing it alone would leave the registration in place while the
		// socket's own descriptor lives, so take it out first.
		unix.EpollCtl(t.epfd, unix.EPOLL_CTL_DEL, c.cancelFd, nil)
		unix.Close(c.cancelFd)
		c.cancelFd = -1
	}
	_ = c.sock.sys.withFd(func(fd int) error {
		return unix.EpollCtl(t.epfd, unix.EPOLL_CTL_DEL, fd, nil)
	})
}

// watchOut adds or removes EPOLLOUT for c's socket.
func (t *poolThread) watchOut(c *PoolConn, on bool) {
	c.wantOut = on
	ev := unix.EpollEvent{Events: epollIn, Fd: c.slot, Pad: c.gen << 1}
	if on {
		ev.Events |= unix.EPOLLOUT
	}
	_ = c.sock.sys.withFd(func(fd int) error {
		return unix.EpollCtl(t.epfd, unix.EPOLL_CTL_MOD, fd, &ev)
	})
}

func (t *poolThread) markReady(c *PoolConn) {
	if !c.inReady {
		c.inReady = true
		t.ready = append(t.ready, c)
	}
}

// collectReadiness takes the epoll set's events without waiting.
func (t *poolThread) collectReadiness() {
	for {
		n, err := unix.EpollWait(t.epfd, t.events[:], 0)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			t.log.Error("engine: epoll_wait", "err", err)
			return
		}
		for i := 0; i < n; i++ {
			t.onReady(&t.events[i])
		}
		if n < len(t.events) {
			return
		}
	}
}

func (t *poolThread) onReady(ev *unix.EpollEvent) {
	slot := ev.Fd
	if slot < 0 || int(slot) >= len(t.slots) {
		return
	}
	c := t.slots[slot]
	if c == nil || c.gen != ev.Pad>>1 {
		return // an event of a retired Test Connection
	}
	if ev.Pad&1 != 0 {
		// The socket's close signal: Close has begun.
		c.closing = true
		c.readable = true
		t.markReady(c)
		return
	}
	if ev.Events&unix.EPOLLOUT != 0 && c.wantOut {
		t.watchOut(c, false)
		c.notBefore = 0
		t.heap.set(c, min(c.hn.key, t.clk.start.Mono))
	}
	if ev.Events&unix.EPOLLERR != 0 {
		c.sock.clearError()
	}
	if ev.Events&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
		c.readable = true
		t.markReady(c)
	}
}

// waitTurn sleeps until the earliest deadline, readiness, or a command.
// During a receive hold-off, readiness does not end the wait: the epoll
// fd is left out of the ppoll, and the turn that ends it collects
// readiness. Between hold-offs, readiness is left out too while the reads
// it would bring can wait for the deadline (holdOff.canDefer, counted from
// readSeen, when the set was last known idle), and the turn that ends such
// a wait collects nothing. Once they can wait no longer, a wait that is
// likely to see an arrival (holdOff.quiet) still leaves the fd out when
// the deadline is within readDefer, and its turn collects; any other wait
// takes the fd and ends at once if anything arrived. So a thread whose
// sockets are quiet pays no epoll_wait per turn.
func (t *poolThread) waitTurn() {
	if t.pending.Load() {
		return // commands are waiting: take them at once
	}
	now := t.clk.now().Mono
	dl := t.heap.minKey()
	if dl <= now {
		return
	}
	if g := t.group; g > 0 && dl != clock.Never {
		// Wait for the last deadline within the window of the earliest.
		dl = t.heap.lastWithin(dl+g, maxGroupVisit)
	}
	// collectAfter: the epoll fd is left out and the next turn collects.
	collectAfter := t.hold.until > now
	deferred := false
	switch {
	case collectAfter:
		dl = min(dl, t.hold.until)
	case t.hold.canDefer(t.readSeen, dl):
		deferred = true
	case t.hold.canDefer(now, dl) && !t.hold.quiet(now, dl-now):
		collectAfter = true
	}
	p := [2]unix.PollFd{{Fd: int32(t.wk.fd), Events: unix.POLLIN}, {Fd: int32(t.epfd), Events: unix.POLLIN}}
	k := 2
	if collectAfter || deferred {
		k = 1
	}
	var ts *unix.Timespec
	var tv unix.Timespec
	if dl != clock.Never {
		tv = unix.NsecToTimespec(int64(dl - now))
		ts = &tv
	}
	if b := t.busyFrom.Swap(0); b != 0 {
		t.busy.Add(int64(now) - b)
	}
	_, err := unix.Ppoll(p[:k], ts, nil)
	t.wakeups.Add(1)
	if err != nil && err != unix.EINTR {
		// Not expected (the fds are the thread's own); do not spin on it.
		t.log.Error("engine: ppoll", "err", err)
		time.Sleep(time.Millisecond)
	}
	if p[0].Revents != 0 {
		t.wk.drain()
	}
	switch {
	case collectAfter:
		t.collect = true
	case deferred:
		t.collect = false
	case err != nil || p[1].Revents != 0:
		// Readable, or unknown: an interrupted ppoll reports nothing.
		t.collect = true
	default:
		// The set was idle when the wait ended, so at least since it
		// began.
		t.collect = false
		t.readSeen = now
	}
}
