package engine

import (
	"sync"
	"sync/atomic"
	"time"
)

// Every Engine Thread registers a Progress and marks when each turn starts
// and when it goes back to waiting. A supervisor (the server's systemd
// watchdog) asks Stalled: a thread that has been inside one turn for longer
// than a threshold is wedged, because a turn's sends are bounded to 1 ms and
// its reads to 256 datagrams per Test Connection. A thread that waits is
// fine whatever it waits for: the kernel wakes it at its deadline.
type Progress struct {
	busySince atomic.Int64 // monotonic ns since monoBase when the turn began; 0 while waiting
}

var threads struct {
	mu  sync.Mutex
	set map[*Progress]struct{}
}

func registerProgress() *Progress {
	p := &Progress{}
	threads.mu.Lock()
	if threads.set == nil {
		threads.set = map[*Progress]struct{}{}
	}
	threads.set[p] = struct{}{}
	threads.mu.Unlock()
	return p
}

func (p *Progress) unregister() {
	threads.mu.Lock()
	delete(threads.set, p)
	threads.mu.Unlock()
}

// busy marks the start of a turn whose clock was read at at (turnClock.at,
// time since monoBase): the turn's own reading, so marking it costs no
// second clock read per turn. A nil Progress (a test driving turns itself)
// marks nothing.
func (p *Progress) busy(at time.Duration) {
	if p != nil {
		p.busySince.Store(int64(at) | 1) // never 0
	}
}

// idle marks the start of a wait.
func (p *Progress) idle() { p.busySince.Store(0) }

// ThreadCount returns the number of live Engine Threads.
func ThreadCount() int {
	threads.mu.Lock()
	defer threads.mu.Unlock()
	return len(threads.set)
}

// Stalled returns how many live Engine Threads have been inside one turn
// for longer than limit.
func Stalled(limit time.Duration) int {
	now := int64(time.Since(monoBase))
	n := 0
	threads.mu.Lock()
	defer threads.mu.Unlock()
	for p := range threads.set {
		if b := p.busySince.Load(); b != 0 && now-b > int64(limit) {
			n++
		}
	}
	return n
}
