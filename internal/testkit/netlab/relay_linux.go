package netlab

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// relayDir is one direction of the relay: the TUN device the router routes
// the direction's packets into, and the OS thread that reads them, holds
// them in a delay line and writes them back, so that the kernel forwards
// them on (see Relay in the package doc).
type relayDir struct {
	dir     Direction
	fd      int // the TUN device, non-blocking
	stopFd  int // eventfd: readable once the relay is closed
	line    *delayLine
	model   impairModel
	next    atomic.Pointer[Impairment] // set by Impair, taken by the thread
	scratch []byte                     // reads when the delay line is full
	epoch   time.Time                  // the thread's clock: ns since epoch (monotonic)
	mtu     int

	matchSeq uint64 // matching packets read so far
	maxSeq   uint64 // highest matching arrival index written so far

	c        relayCounters
	started  bool        // run was started; only then does close wait for done
	stopping atomic.Bool // close was called
	done     chan struct{}
	err      error // why the thread ended early, read after done
}

// relayCounters are the thread's counters; other goroutines read them.
type relayCounters struct {
	read, written, matched                     atomic.Int64
	lost, duplicated, reordered                atomic.Int64
	queueFull, readErrors, writeErrors, oversz atomic.Int64
	queued, maxQueued, ignored                 atomic.Int64
	lateMax, lateSum, lateN, lateSlips         atomic.Int64 // release lateness, ns
	realTime                                   atomic.Bool  // the thread runs SCHED_FIFO
}

// relayBatch bounds the reads (and the releases) between two looks at the
// other side, so a burst of input never holds back packets that are due,
// nor the reverse.
const relayBatch = 64

// openTUN creates TUN device name (no packet information header) in the
// calling thread's network namespace and returns its descriptor,
// non-blocking.
func openTUN(name string) (int, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return -1, fmt.Errorf("%w: opening /dev/net/tun: %v", ErrUnavailable, err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("netlab: TUN name %q: %w", name, err)
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("%w: TUNSETIFF %s: %v", ErrUnavailable, name, err)
	}
	return fd, nil
}

// newRelayDir wraps the TUN descriptor fd for dir with a delay line of
// slots packets of up to mtu bytes.
func newRelayDir(dir Direction, fd int, mtu, slots int, m Impairment, seed uint64) (*relayDir, error) {
	stop, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	// A slot holds one byte more than the MTU, so that a packet that does
	// not fit is seen (n > mtu) rather than cut silently.
	return &relayDir{
		dir: dir, fd: fd, stopFd: stop, mtu: mtu,
		line:    newDelayLine(slots, mtu+1),
		model:   newImpairModel(m, seed, dir),
		scratch: make([]byte, 65536),
		epoch:   time.Now(),
		done:    make(chan struct{}),
	}, nil
}

// now reads the thread's clock: the runtime's monotonic clock (vDSO, no
// system call), the clock ppoll's relative timeout runs on.
func (r *relayDir) now() int64 { return int64(time.Since(r.epoch)) }

// run is the relay thread. It keeps its OS thread, with timer slack 1 ns
// so that a ppoll ends within tens of µs of the next release time rather
// than the default 50 µs later (engine.SetTimerSlack measured this), and,
// where the kernel allows, real-time priority (SCHED_FIFO 1): a router
// forwards whatever else the machine does, and on a busy 2-core machine a
// relay thread of normal priority waited up to 90 ms for a CPU (measured:
// 6 % of a 1 Gbit/s blast lost in the TUN queue, releases 25 ms late at
// 50 Mbit/s). The thread never unlocks: it exits with the goroutine, so
// its policy never reaches another goroutine. The kernel's RT throttling
// (sched_rt_runtime_us) still leaves the other tasks 5 % of each CPU.
func (r *relayDir) run() {
	defer close(r.done)
	runtime.LockOSThread() // never unlocked, see above
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		r.err = os.NewSyscallError("prctl(PR_SET_TIMERSLACK)", err)
		return
	}
	if err := unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 1}, 0); err == nil {
		r.c.realTime.Store(true)
	}
	for !r.stopping.Load() { // the eventfd ends a wait; this, a busy loop
		if m := r.next.Swap(nil); m != nil {
			r.model.m = *m
		}
		got, err := r.readSome()
		if err != nil {
			r.err = err
			return
		}
		released := r.releaseDue(r.now())
		if got == relayBatch || released == relayBatch {
			continue
		}
		stop, err := r.wait()
		if err != nil {
			r.err = err
			return
		}
		if stop {
			return
		}
	}
}

// wait blocks until the TUN device has a packet, the next packet is due
// or the relay is closed; stop reports the last.
func (r *relayDir) wait() (stop bool, err error) {
	fds := [2]unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}, {Fd: int32(r.stopFd), Events: unix.POLLIN}}
	var ts *unix.Timespec
	if at, ok := r.line.next(); ok {
		d := at - r.now()
		if d <= 0 {
			return false, nil
		}
		t := unix.NsecToTimespec(d)
		ts = &t
	}
	if _, err := unix.Ppoll(fds[:], ts, nil); err != nil && err != unix.EINTR {
		return false, os.NewSyscallError("ppoll", err)
	}
	return fds[1].Revents != 0, nil
}

// readSome reads up to relayBatch packets and queues them; it returns how
// many it read. Only an unexpected error of the device is returned.
func (r *relayDir) readSome() (int, error) {
	for i := 0; i < relayBatch; i++ {
		s, ok := r.line.take()
		buf := r.scratch
		if ok {
			buf = r.line.slot(s)
		}
		n, err := unix.Read(r.fd, buf)
		if err != nil {
			if ok {
				r.line.giveBack(s)
			}
			switch err {
			case unix.EAGAIN:
				return i, nil
			case unix.EINTR:
				continue
			}
			r.c.readErrors.Add(1)
			return i, os.NewSyscallError("read "+r.dir.String()+" TUN", err)
		}
		now := r.now()
		if n > 0 && multicast(buf[:n]) {
			// The router's own chatter on the TUN link (MLD reports for
			// the groups a forwarding IPv6 device joins): nobody is on
			// the other side of it, and written back it would come in
			// again.
			r.c.ignored.Add(1)
			if ok {
				r.line.giveBack(s)
			}
			continue
		}
		r.c.read.Add(1)
		if !ok {
			r.c.queueFull.Add(1) // dropped, but read: the device's queue moves on
			continue
		}
		if n > r.mtu {
			// Cannot happen below the device's MTU; a packet that may
			// have been cut is dropped, never forwarded as whole.
			r.c.oversz.Add(1)
			r.line.giveBack(s)
			continue
		}
		p := buf[:n]
		matching := r.model.m.usesMatch() && matches(p, r.model.m.Scope)
		f := r.model.decide(now, matching)
		var seq uint64
		if matching {
			r.c.matched.Add(1)
			r.matchSeq++
			seq = r.matchSeq
		}
		if f.lost {
			r.c.lost.Add(1)
			r.line.giveBack(s)
			continue
		}
		copies := int32(1)
		if f.dup {
			copies = 2
		}
		r.line.push(s, n, f.at, seq, copies)
		q := int64(r.line.len())
		r.c.queued.Store(q)
		if q > r.c.maxQueued.Load() {
			r.c.maxQueued.Store(q)
		}
	}
	return relayBatch, nil
}

// releaseDue writes back up to relayBatch packets whose time has come and
// returns how many.
func (r *relayDir) releaseDue(now int64) int {
	n := 0
	for ; n < relayBatch; n++ {
		at, ok := r.line.next()
		if !ok || at > now {
			break
		}
		e, p := r.line.pop()
		late := now - at
		r.c.lateSum.Add(late)
		r.c.lateN.Add(1)
		if late > r.c.lateMax.Load() {
			r.c.lateMax.Store(late)
		}
		if late >= int64(RelaySlip) {
			r.c.lateSlips.Add(1)
		}
		for range e.copies {
			// A TUN write does not block (its socket's send buffer is
			// unlimited): it fails only if the device is going away.
			if _, err := unix.Write(r.fd, p); err != nil {
				r.c.writeErrors.Add(1)
			} else {
				r.c.written.Add(1)
			}
		}
		if e.copies > 1 {
			r.c.duplicated.Add(int64(e.copies - 1))
		}
		if e.seq != 0 {
			if e.seq < r.maxSeq {
				r.c.reordered.Add(1)
			} else {
				r.maxSeq = e.seq
			}
		}
		r.line.release(e)
	}
	r.c.queued.Store(int64(r.line.len()))
	return n
}

// close stops the thread and releases the descriptors. The TUN device
// disappears with its descriptor (and holds the router namespace alive
// until then).
func (r *relayDir) close() error {
	if r.started {
		r.stopping.Store(true)
		one := [8]byte{1}
		_, _ = unix.Write(r.stopFd, one[:])
		<-r.done
	}
	err := errors.Join(unix.Close(r.fd), unix.Close(r.stopFd))
	if r.err != nil {
		err = errors.Join(fmt.Errorf("netlab: %v relay: %w", r.dir, r.err), err)
	}
	return err
}

// stats returns a snapshot of the counters.
func (r *relayDir) stats() RelayStats {
	c := &r.c
	s := RelayStats{
		Read: c.read.Load(), Written: c.written.Load(), Matched: c.matched.Load(),
		Lost: c.lost.Load(), Duplicated: c.duplicated.Load(), Reordered: c.reordered.Load(),
		QueueFull: c.queueFull.Load(), ReadErrors: c.readErrors.Load(), WriteErrors: c.writeErrors.Load(),
		Oversize: c.oversz.Load(), Ignored: c.ignored.Load(),
		Queued: c.queued.Load(), MaxQueued: c.maxQueued.Load(),
		LateMax:   time.Duration(c.lateMax.Load()),
		RealTime:  c.realTime.Load(),
		LateSlips: c.lateSlips.Load(),
	}
	if n := c.lateN.Load(); n > 0 {
		s.LateMean = time.Duration(c.lateSum.Load() / n)
	}
	return s
}

// relay is both directions' relay threads.
type relay struct {
	dirs  [2]*relayDir // by Direction
	procs bool         // holds relayProcs extra Ps (see addProcs)
}

// relayProcs is how many Ps (GOMAXPROCS) a running relay adds to the
// process. A relay thread that returns from ppoll must get a P before it
// runs again; with GOMAXPROCS at the CPU count, the test's other
// goroutines and the blaster hold them, the returning thread queues for
// a P behind normal-priority threads, and its real-time priority is
// lost: on this busy 2-core machine releases were up to 28 ms late at
// 500 Mbit/s with GOMAXPROCS 2, 1.2 ms with 6 (2 per relay thread). Idle
// Ps cost nothing.
const relayProcs = 4

// procs counts the extra Ps of the running relays, over base.
var procs struct {
	sync.Mutex
	extra, base int
}

// addProcs raises GOMAXPROCS by n (n < 0 lowers it back; the last relay
// to close restores the value the first one found).
func addProcs(n int) {
	procs.Lock()
	defer procs.Unlock()
	if procs.extra == 0 {
		procs.base = runtime.GOMAXPROCS(0)
	}
	procs.extra += n
	runtime.GOMAXPROCS(procs.base + procs.extra)
}

// newRelay creates the TUN devices in l's router namespace (a TUN device
// belongs to the namespace of the thread that creates it) with delay
// lines of slots packets of up to mtu bytes. The threads start with start.
func newRelay(l *Lab, mtu, slots int, m [2]Impairment, seed uint64) (*relay, error) {
	r := &relay{}
	for _, dir := range []Direction{Down, Up} {
		var fd int
		err := l.Do(l.RouterNS, func() error {
			var err error
			fd, err = openTUN(tunDev(dir))
			return err
		})
		if err == nil {
			r.dirs[dir], err = newRelayDir(dir, fd, mtu, slots, m[dir], seed)
			if err != nil {
				unix.Close(fd)
			}
		}
		if err != nil {
			for _, d := range r.dirs {
				if d != nil {
					d.close()
				}
			}
			return nil, err
		}
	}
	return r, nil
}

// start starts the relay threads.
func (r *relay) start() {
	addProcs(relayProcs)
	r.procs = true
	for _, d := range r.dirs {
		d.started = true
		go d.run()
	}
}

// close stops the threads (if started) and closes the devices.
func (r *relay) close() error {
	var errs []error
	for _, d := range r.dirs {
		errs = append(errs, d.close())
	}
	if r.procs {
		addProcs(-relayProcs)
		r.procs = false
	}
	return errors.Join(errs...)
}

// impair hands m to dir's thread.
func (r *relay) impair(dir Direction, m Impairment) { r.dirs[dir].next.Store(&m) }

// stats returns dir's counters, and why its thread stopped if it did.
func (r *relay) stats(dir Direction) (RelayStats, error) {
	d := r.dirs[dir]
	select {
	case <-d.done:
		if d.err != nil {
			return d.stats(), fmt.Errorf("netlab: %v relay stopped: %w", dir, d.err)
		}
	default:
	}
	return d.stats(), nil
}

// probeTUN reports whether TUN devices can be made: /dev/net/tun opens.
func probeTUN() error {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%w: the relay needs /dev/net/tun: %v (modprobe tun)", ErrUnavailable, err)
	}
	unix.Close(fd)
	return nil
}

// usesMatch reports whether any per-packet decision needs the scope.
func (m Impairment) usesMatch() bool {
	return m.ReorderPct > 0 || m.DupPct > 0 || m.Loss != GilbertElliott{}
}
