//go:build !portable

package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
	"golang.org/x/sys/unix"
)

// poolThread is one Engine Thread of a Pool.
type poolThread struct {
	pool *Pool
	id   int
	log  *slog.Logger
	epfd int
	wk   *Waker
	done chan struct{}

	load    atomic.Int32 // Test Connections placed on it and not yet retired
	turns   atomic.Uint64
	wakeups atomic.Uint64
	ringed  atomic.Uint64 // send plans handed over through the ring (PoolStats.RingPlans)
	// The time out of waits (PoolStats.Busy): busy adds up the stretches
	// of turns between two waits, busyFrom is when the current one began
	// (a turn's clock reading, 0 while waiting). Each costs an atomic
	// operation per wait, none per turn that does not wait.
	busy     atomic.Int64
	busyFrom atomic.Int64

	// Commands, from any goroutine.
	cmdMu                 sync.Mutex
	adds, stops           []*PoolConn
	addsSpare, stopsSpare []*PoolConn
	pending               atomic.Bool
	quit                  bool // Close: stop everything, then end
	dead                  bool // no more commands are taken
	quitReq               bool // the thread's copy of quit

	// The thread's own state.
	slots    []*PoolConn
	slotGen  []int32
	free     []int32
	live     int
	heap     deadlineHeap[*PoolConn]
	ready    []*PoolConn
	events   [maxEpollEvents]unix.EpollEvent
	send     dataphase.SendBuffer
	recv     dataphase.RecvBatch
	gro      groScratch // made at the first read of a GRO socket, shared by all
	clk      turnClock
	progress *Progress
	collect  bool // collect readiness in the next turn
	// readSeen is when the epoll set was last known idle: the last
	// collect, or the start of a wait on it that ended without readiness.
	// Reads are deferred (waitTurn) at most readDefer from it.
	readSeen clock.Time
	quitting bool
	group    clock.Time // the grouping window; 0: none
	// groupByLoad: group follows live (groupFor); groupMax is the widest
	// window the thread has used, for PoolStats.GroupMax.
	groupByLoad bool
	groupMax    atomic.Int64
	readN       int // datagrams read in the current turn
	hold        holdOff
	phases      gridPhases
	// ring batches the turn's sends of all its due Test Connections in one
	// system call (PoolOptions.Ring; ringsend_linux.go); nil: a sendmmsg
	// each. ringKept holds a ring given up with sends still in it.
	ring, ringKept *ringSends
}

func newPoolThread(p *Pool, id int) (*poolThread, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	wk, err := NewWaker()
	if err != nil {
		unix.Close(epfd)
		return nil, err
	}
	t := &poolThread{pool: p, id: id, log: p.opts.Log.With("engine_thread", id), epfd: epfd, wk: wk,
		done: make(chan struct{}), collect: true}
	t.hold.max = clock.Time(max(p.opts.HoldOff, 0))
	t.group = clock.Time(max(p.opts.Group, 0))
	t.groupByLoad = p.opts.Group == GroupByLoad
	t.groupMax.Store(int64(t.group))
	t.phases.per = p.phaseConns()
	if p.opts.Ring {
		rs, err := newRingSends()
		if err != nil {
			t.log.Warn("engine: no io_uring; each Test Connection's sends take a system call", "err", err)
		} else {
			t.ring = rs
		}
	}
	return t, nil
}

// enqueue hands the thread a new Test Connection or a stop. It reports
// false when the thread takes no more commands.
func (t *poolThread) enqueue(c *PoolConn, stop bool) bool {
	t.cmdMu.Lock()
	if t.dead {
		t.cmdMu.Unlock()
		return false
	}
	if stop {
		t.stops = append(t.stops, c)
	} else {
		t.adds = append(t.adds, c)
	}
	t.pending.Store(true)
	t.cmdMu.Unlock()
	t.wk.Wake()
	return true
}

// run is the Engine Thread.
func (t *poolThread) run() {
	t.progress = becomeEngineThread(t.log)
	defer close(t.done)
	defer t.progress.unregister()
	defer func() {
		if r := recover(); r != nil {
			t.ringAbandon()
			t.die(r, debug.Stack())
		}
		if t.ring != nil {
			t.ring.close()
		}
		unix.Close(t.epfd)
		t.wk.Close()
	}()
	var y yielder
	for !t.quitting {
		again := t.turn()
		t.progress.idle()
		y.afterTurn(t.clk.start.Mono)
		if !again && !t.quitting {
			t.waitTurn()
		}
	}
}

// turn runs one turn: clock, commands, readiness, sends, reads. It reports
// whether the thread should start the next turn at once.
func (t *poolThread) turn() (again bool) {
	t.turns.Add(1)
	t.clk.read()
	t.progress.busy(t.clk.at)
	if t.busyFrom.Load() == 0 {
		t.busyFrom.Store(int64(t.clk.start.Mono) | 1) // never 0
	}
	if t.pending.Load() {
		t.takeCommands()
	}
	if t.collect {
		t.collectReadiness()
		t.readSeen = t.clk.start.Mono
	}
	t.collect = true // unless the wait says the epoll set is idle
	t.readN = 0

	// Sends first, earliest deadline first, within the turn's budget.
	for {
		c, ok := t.heap.min()
		if !ok {
			break
		}
		now := t.clk.now()
		if c.hn.key > now.Mono {
			break
		}
		if now.Mono.Sub(t.clk.start.Mono) >= sendBudget {
			again = true
			break
		}
		if t.ring != nil && t.ringTake(c, now) {
			continue
		}
		t.serve(c, now, true)
	}
	t.ringFlush()

	// Then one bounded read per readable Test Connection; those not
	// drained stay on the list, in order.
	n := len(t.ready)
	keep := 0
	for i := 0; i < n; i++ {
		c := t.ready[i]
		if !c.retired && c.readable {
			t.serve(c, clock.Pair{}, false)
		}
		if !c.retired && c.readable {
			t.ready[keep] = c
			keep++
		} else {
			c.inReady = false
		}
	}
	// Entries appended during the loop (none today) are kept after.
	keep += copy(t.ready[keep:], t.ready[n:])
	clear(t.ready[keep:])
	t.ready = t.ready[:keep]
	if keep > 0 {
		again = true
	}
	if t.quitReq && t.live == 0 {
		t.finishQuit()
		return false
	}
	if t.readN > 0 {
		t.hold.afterRead(t.clk.now().Mono, t.readN, t.clk.start.Mono)
	} else {
		t.hold.turnEnded(t.clk.now().Mono, t.clk.start.Mono)
	}
	return again
}

// serve runs one Test Connection's sends (sends, polling the core from
// now: the turn's clock as the send phase found c due) or read, delivers
// its events and puts it back into the heap, or retires it once it is done.
// A read takes no time argument (now is unused), so it costs no clock
// read. A panic retires this Test Connection only.
func (t *poolThread) serve(c *PoolConn, now clock.Pair, sends bool) {
	defer func() {
		if r := recover(); r != nil {
			t.retire(c, r, debug.Stack())
		}
	}()
	c.turns.Add(1)
	c.worked = false
	switch {
	case c.closing:
		// Close was called on the socket: what the executor does next
		// would fail with net.ErrClosed, and the socket may be gone
		// before any read reports it.
		c.fail(t.log, net.ErrClosed)
	case sends:
		// After backpressure reschedule backs off or watches EPOLLOUT; a
		// spent budget leaves c due, served again next turn.
		c.sendPlans(&t.clk, &t.send, now, t.log)
	default:
		t.readConn(c)
	}
	t.finish(c, now.Mono, sends)
}

// finish ends a service of c: its events, then its next deadline, or its
// retirement once it is done; begin and polled as reschedule's.
func (t *poolThread) finish(c *PoolConn, begin clock.Time, polled bool) {
	if !c.failed {
		c.deliver()
	}
	if c.failed || c.core.Done() {
		t.remove(c)
		return
	}
	t.reschedule(c, begin, polled)
}

func (t *poolThread) readConn(c *PoolConn) {
	if err := c.sock.recvBatch(&t.recv, maxReadsPerTurn, &t.clk, &t.gro); err != nil {
		c.fail(t.log, err)
		return
	}
	n := t.recv.N
	if n < maxReadsPerTurn {
		c.readable = false // drained: the next arrival raises an edge
	}
	if n == 0 {
		return
	}
	t.hold.noteRead(&c.holdSock, &t.recv)
	t.readN += n
	c.core.Receive(&t.recv)
	c.worked = true
}

// reschedule puts c's next deadline into the heap. After a service that
// sent, Conn's guard applies (EPOLLOUT after EAGAIN, a back-off after
// ENOBUFS/EPERM or when the core did nothing although due) and its result
// is kept as c.notBefore; a service that only read (the core was not polled)
// keeps that bound instead of judging again, so reads never push an overdue
// send back.
func (t *poolThread) reschedule(c *PoolConn, begin clock.Time, polled bool) {
	dl := c.core.Deadline()
	if !polled {
		t.heap.set(c, max(dl, c.notBefore))
		return
	}
	g, out := guard(dl, t.clk.now().Mono, begin, c.bp, c.worked)
	if out && !c.wantOut {
		t.watchOut(c, true)
	}
	c.notBefore = 0
	if g != dl {
		c.notBefore = g
	}
	t.heap.set(c, g)
}

// retire ends c after a panic in its work: Fail with the panic as the
// error, its events delivered, an EvEnd made up if that panics too; then
// it leaves the thread.
func (t *poolThread) retire(c *PoolConn, r any, stack []byte) {
	t.log.Error("engine: Test Connection retired after a panic",
		"local", c.sock.LocalAddr(), "peer", c.sock.Peer(), "panic", fmt.Sprint(r), "stack", string(stack))
	c.abandon(fmt.Errorf("engine: panic: %v", r))
	t.remove(c)
}

// remove takes c off the thread: out of the heap and the epoll set, its
// end reported if the core did not, its slot freed, Done closed. Nothing
// here waits.
func (t *poolThread) remove(c *PoolConn) {
	if c.retired {
		return
	}
	c.retired = true
	t.heap.remove(c)
	t.epollDel(c)
	if !c.endDelivered {
		if !c.failed {
			t.log.Error("engine: core ended without EvEnd", "local", c.sock.LocalAddr(), "peer", c.sock.Peer())
		}
		c.ensureEnd()
	}
	if c.slot >= 0 && int(c.slot) < len(t.slots) && t.slots[c.slot] == c {
		t.slots[c.slot] = nil
		t.slotGen[c.slot]++
		t.free = append(t.free, c.slot)
		t.live--
		t.regroup()
	}
	if c.phase >= 0 {
		t.phases.give(int(c.phase))
		c.phase = -1
	}
	c.readable = false
	t.load.Add(-1)
	close(c.done)
}

// takeCommands takes the queued new Test Connections and stops.
func (t *poolThread) takeCommands() {
	t.cmdMu.Lock()
	adds, stops := t.adds, t.stops
	t.adds, t.stops = t.addsSpare[:0], t.stopsSpare[:0]
	t.addsSpare, t.stopsSpare = adds, stops
	t.pending.Store(false)
	quit := t.quit
	t.cmdMu.Unlock()
	for i, c := range adds {
		t.add(c)
		adds[i] = nil
	}
	for i, c := range stops {
		t.stop(c)
		stops[i] = nil
	}
	if quit {
		t.quitReq = true
	}
	if t.quitReq {
		for _, c := range t.slots {
			if c != nil {
				t.stop(c)
			}
		}
	}
}

// errPoolClosed ends Test Connections placed on a thread as its pool
// closed.
var errPoolClosed = errors.New("engine: pool closed")

// finishQuit ends the thread once Close asked and its last Test
// Connection is gone. A Test Connection queued meanwhile is ended at once.
func (t *poolThread) finishQuit() {
	t.cmdMu.Lock()
	t.dead = true
	late := t.adds
	t.adds = nil
	t.cmdMu.Unlock()
	for _, c := range late {
		c.abandon(errPoolClosed)
		c.retired = true
		t.load.Add(-1)
		close(c.done)
	}
	t.quitting = true
}

// add registers a new Test Connection: a slot, its socket and the socket's
// close signal in the epoll set, due at once.
func (t *poolThread) add(c *PoolConn) {
	var slot int32
	if k := len(t.free); k > 0 {
		slot = t.free[k-1]
		t.free = t.free[:k-1]
	} else {
		slot = int32(len(t.slots))
		t.slots = append(t.slots, nil)
		t.slotGen = append(t.slotGen, 0)
	}
	t.slots[slot] = c
	t.live++
	t.regroup()
	c.slot, c.gen = slot, t.slotGen[slot]
	_, rcv := c.sock.Granted()
	c.rcvPayload = int64(rcv / 2)
	if cap(t.ready) < len(t.slots) {
		r := make([]*PoolConn, len(t.ready), 2*len(t.slots))
		copy(r, t.ready)
		t.ready = r
	}
	if err := t.epollAdd(c); err != nil {
		t.heap.push(c, 0)
		protect(func() { c.fail(t.log, err) })
		t.remove(c)
		return
	}
	if gp, ok := c.core.(gridPhaser); ok {
		// Before its first Poll, so that no Burst of it falls due off
		// its phase.
		k := t.phases.take()
		if protect(func() { gp.SetGridPhase(phaseOf(k)) }) {
			c.phase = int8(k)
		} else {
			t.phases.give(k)
		}
	}
	t.heap.push(c, 0) // a first turn at once, as Conn's
	c.readable = true // datagrams may be queued already
	t.markReady(c)
}

// stop passes a stop to c's core and makes it due at once.
func (t *poolThread) stop(c *PoolConn) {
	if c.retired || c.stopped || c.th != t {
		return
	}
	c.stopped = true
	if !protect(c.core.Stop) {
		t.retire(c, "core.Stop panicked", nil)
		return
	}
	t.heap.set(c, 0)
}

// regroup sets the grouping window by load after the thread took or let
// go a Test Connection.
func (t *poolThread) regroup() {
	if !t.groupByLoad {
		return
	}
	t.group = groupFor(t.live)
	if int64(t.group) > t.groupMax.Load() {
		t.groupMax.Store(int64(t.group))
	}
}

// busyTime is the thread's time out of waits until now.
func (t *poolThread) busyTime(now clock.Time) time.Duration {
	b := t.busy.Load()
	if from := t.busyFrom.Load(); from != 0 {
		b += max(int64(now)-from, 0)
	}
	return time.Duration(b)
}

// die ends every Test Connection of a thread whose own code panicked
// (outside any Test Connection's work, which serve recovers): each one
// reports its end and its Done closes; the thread leaves the pool, and
// new Test Connections go to the others or to a new thread.
func (t *poolThread) die(r any, stack []byte) {
	t.log.Error("engine: Engine Thread failed; ending its Test Connections", "panic", fmt.Sprint(r), "stack", string(stack))
	s := &t.pool.sys
	s.mu.Lock()
	for i, x := range s.threads {
		if x == t {
			s.threads = append(s.threads[:i], s.threads[i+1:]...)
			s.gone.Turns += t.turns.Load()
			s.gone.Wakeups += t.wakeups.Load()
			s.gone.RingPlans += t.ringed.Load()
			s.gone.Busy += t.busyTime(clock.Mono())
			s.gone.GroupMax = max(s.gone.GroupMax, time.Duration(t.groupMax.Load()))
			break
		}
	}
	s.mu.Unlock()
	t.cmdMu.Lock()
	t.dead = true
	adds := t.adds
	t.adds = nil
	t.cmdMu.Unlock()
	err := fmt.Errorf("engine: Engine Thread failed: %v", r)
	end := func(c *PoolConn) {
		if c.retired {
			return
		}
		c.retired = true
		c.abandon(err)
		protect(func() { t.epollDel(c) })
		close(c.done)
	}
	for _, c := range t.slots {
		if c != nil {
			end(c)
		}
	}
	for _, c := range adds {
		end(c)
	}
}
