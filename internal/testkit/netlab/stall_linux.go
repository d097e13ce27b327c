package netlab

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// stallWatch tells the machine's stalls from the relay's: a thread per CPU
// of the process, pinned to it, at a real-time priority above the relay
// threads', wakes every stallPeriod and records how late it woke. The
// relay cannot delay it (a busy relay thread is preempted by it), so a
// late wake-up is the machine's: the CPU ran nothing of ours for that long
// (a virtual CPU the hypervisor did not run, a kernel section that did
// not yield). This VM's CPUs stop now and then with nothing else
// running: a lone sleeper like these woke 9 ms and 50 ms late within
// 20 s, and watchers saw from 0.3 ms to 19 ms in a 2 s baseline row; a
// 12 ms stall made 2.6 % of a 50 Mbit/s row leave 5 ms late or more.
type stallWatch struct {
	stopFd int // eventfd: readable once stop was called
	wg     sync.WaitGroup
	worst  atomic.Int64 // the latest wake-up, ns late
}

// watchStalls starts a watcher on every CPU the process may run on. It
// returns nil (watching nothing) if it cannot: an eventfd or the CPU mask
// is not to be had.
func watchStalls() *stallWatch {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil
	}
	w := &stallWatch{stopFd: fd}
	for cpu := 0; cpu < 1024; cpu++ {
		if set.IsSet(cpu) {
			w.wg.Add(1)
			go w.watch(cpu)
		}
	}
	return w
}

// watch is the watcher of one CPU. It keeps its OS thread, which exits
// with it (its affinity and priority never reach another goroutine).
func (w *stallWatch) watch(cpu int) {
	defer w.wg.Done()
	runtime.LockOSThread() // never unlocked, see above
	var one unix.CPUSet
	one.Set(cpu)
	if unix.SchedSetaffinity(0, &one) != nil {
		return
	}
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	// Above the relay's SCHED_FIFO 1; where real-time priority is not
	// allowed, the watcher runs as the relay does and still sees the
	// machine's stalls, with the CPU's other work mixed in.
	_ = unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 2}, 0)
	fds := []unix.PollFd{{Fd: int32(w.stopFd), Events: unix.POLLIN}}
	for {
		// Set every time: ppoll writes back the time left (0 on timeout).
		ts := unix.NsecToTimespec(int64(stallPeriod))
		start := time.Now()
		n, err := unix.Ppoll(fds, &ts, nil)
		if n > 0 || (err != nil && err != unix.EINTR) {
			return
		}
		late := int64(time.Since(start) - stallPeriod)
		for {
			worst := w.worst.Load()
			if late <= worst || w.worst.CompareAndSwap(worst, late) {
				break
			}
		}
	}
}

// stop ends the watchers and returns the longest stall any of them saw.
func (w *stallWatch) stop() time.Duration {
	if w == nil {
		return 0
	}
	one := [8]byte{1}
	_, _ = unix.Write(w.stopFd, one[:])
	w.wg.Wait()
	unix.Close(w.stopFd)
	return time.Duration(w.worst.Load())
}
