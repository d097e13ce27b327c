//go:build !portable

package engine

import (
	"time"

	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
)

// PoolSupported tells whether this platform has the pool (Linux).
const PoolSupported = true

// poolSys is the Linux part of a Pool: its threads.
type poolSys struct {
	// gone keeps the counters of threads that died, so that the pool's
	// stay monotonic.
	gone    PoolStats
	mu      sync.Mutex
	threads []*poolThread // live threads
	closed  bool
	nextID  int
}

// PoolConn is a Test Connection run by a Pool. Its exported methods are
// safe from any goroutine.
type PoolConn struct {
	coreState
	hn       heapNode // the thread's deadline heap: when it next needs a turn
	th       *poolThread
	fallback *Conn // set when no Engine Thread could take it: its own thread

	stopQueued atomic.Bool
	done       chan struct{}
	turns      atomic.Uint64

	// The Engine Thread's state.
	slot, gen int32
	phase     int8       // its phase of the grid (gridphase.go); -1: none
	readable  bool       // read at the next read phase
	inReady   bool       // on the thread's ready list
	wantOut   bool       // registered for EPOLLOUT after EAGAIN
	notBefore clock.Time // the guard's bound from its last service that sent, 0: none
	closing   bool       // Close was called on the socket
	retired   bool       // off the thread; done is closed
	cancelFd  int        // the thread's duplicate of the socket's close signal; -1: none
	holdSock             // the receive hold-off's view of the socket
}

func (c *PoolConn) node() *heapNode { return &c.hn }

// Stop asks the core to end. It is safe from any goroutine, idempotent, and
// returns at once; the core ends on a later turn (watch Done).
func (c *PoolConn) Stop() {
	if c.fallback != nil {
		c.fallback.Stop()
		return
	}
	if !c.stopQueued.Swap(true) {
		c.th.enqueue(c, true)
	}
}

// Done is closed after the last event was delivered and the Engine Thread
// has finished with the socket.
func (c *PoolConn) Done() <-chan struct{} {
	if c.fallback != nil {
		return c.fallback.Done()
	}
	return c.done
}

// Stats returns the turns this Test Connection was served in, its Engine
// Thread's wake-ups, and its socket's counters.
func (c *PoolConn) Stats() ConnStats {
	if c.fallback != nil {
		return c.fallback.Stats()
	}
	return ConnStats{Turns: c.turns.Load(), Wakeups: c.th.wakeups.Load(), Socket: c.sock.Stats()}
}

// Run starts driving core over sock on the Engine Thread serving the
// fewest Test Connections (starting a new one while fewer than MaxThreads
// run) and returns at once. onEvent receives the core's events on that
// thread, in order, the last one an EvEnd: it must be cheap and must not
// block, since every Test Connection of the thread waits while it runs.
// The caller keeps owning sock: close it after Done.
func (p *Pool) Run(sock *Socket, core Core, onEvent func(dataphase.Event)) *PoolConn {
	if sock.OnGSODisabled == nil {
		log := p.opts.Log
		sock.OnGSODisabled = func(msg string) { log.Warn(msg) }
	}
	c := newPoolConn(sock, core, onEvent)
	for {
		t, err := p.place()
		if err != nil {
			// No thread: the Test Connection still runs, on its own.
			p.opts.Log.Error("engine: no Engine Thread of the pool; running the Test Connection on its own", "err", err)
			c.fallback = RunConn(sock, core, c.onEvent, p.opts.Log)
			return c
		}
		c.th = t
		if t.enqueue(c, false) {
			return c
		}
		t.load.Add(-1) // the thread died in between: place again
	}
}

func newPoolConn(sock *Socket, core Core, onEvent func(dataphase.Event)) *PoolConn {
	sock.sys.leaveNetpoller() // the Engine Thread's epoll set watches it from now on, with its close signal
	if onEvent == nil {
		onEvent = func(dataphase.Event) {}
	}
	c := &PoolConn{coreState: newCoreState(sock, core, onEvent), done: make(chan struct{}), cancelFd: -1, phase: -1}
	c.hn.pos = -1
	return c
}

// place picks the live thread serving the fewest, starting one while the
// pool may, and counts the new Test Connection on it.
func (p *Pool) place() (*poolThread, error) {
	s := &p.sys
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("pool closed")
	}
	var best *poolThread
	for _, t := range s.threads {
		if best == nil || t.load.Load() < best.load.Load() {
			best = t
		}
	}
	if (best == nil || best.load.Load() > 0) && len(s.threads) < p.max {
		t, err := newPoolThread(p, s.nextID)
		if err != nil {
			if best == nil {
				return nil, err
			}
			p.opts.Log.Warn("engine: cannot start another Engine Thread", "err", err)
		} else {
			s.nextID++
			s.threads = append(s.threads, t)
			ensureProcs(len(s.threads) + 1)
			go t.run()
			best = t
		}
	}
	best.load.Add(1)
	return best, nil
}

// ensureProcs raises GOMAXPROCS to at least n: one P for each Engine
// Thread and one for everything else. An Engine Thread is a locked
// goroutine that spends its life entering and leaving system calls; with
// no idle P left, sysmon takes its P away whenever a wait spans two of
// its ticks (20 µs while it is busy) and hands it to a spinning M, which
// costs wake-ups at every wait (measured here with GOMAXPROCS=1, as
// `taskset -c 0` gives: three wake-ups in the process per wait of the
// Engine Thread; with a P to spare, about 1.2). Setting GOMAXPROCS stops
// the runtime's own updates of it (from the cgroup quota); the pool's
// size follows the same quota, so nothing is lost.
func ensureProcs(n int) {
	if runtime.GOMAXPROCS(0) < n {
		runtime.GOMAXPROCS(n)
	}
}

// Stats returns a snapshot of the pool's counters.
func (p *Pool) Stats() PoolStats {
	s := &p.sys
	s.mu.Lock()
	defer s.mu.Unlock()
	st := PoolStats{MaxThreads: p.max, Threads: len(s.threads), Turns: s.gone.Turns, Wakeups: s.gone.Wakeups, Busy: s.gone.Busy,
		RingPlans: s.gone.RingPlans}
	now := clock.Mono()
	for _, t := range s.threads {
		st.Conns += int(t.load.Load())
		st.Turns += t.turns.Load()
		st.Wakeups += t.wakeups.Load()
		st.RingPlans += t.ringed.Load()
		st.Busy += t.busyTime(now)
		st.GroupMax = max(st.GroupMax, time.Duration(t.groupMax.Load()))
	}
	st.GroupMax = max(st.GroupMax, s.gone.GroupMax)
	return st
}

// Close stops every Test Connection of the pool, waits for their ends and
// ends its threads. Test Connections Run after Close run on their own
// Engine Threads.
func (p *Pool) Close() {
	s := &p.sys
	s.mu.Lock()
	s.closed = true
	ths := append([]*poolThread(nil), s.threads...)
	s.mu.Unlock()
	for _, t := range ths {
		t.cmdMu.Lock()
		t.quit = true
		t.pending.Store(true)
		t.cmdMu.Unlock()
		t.wk.Wake()
	}
	for _, t := range ths {
		<-t.done
	}
}
