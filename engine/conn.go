package engine

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
)

// Core is a Test Connection's Data Phase logic as an executor drives it.
type Core = dataphase.Core

const (
	// sendBudget bounds a turn's sends, so a core that keeps finding
	// datagrams due (catching up after a stall) still lets the turn read.
	sendBudget = time.Millisecond
	// maxReadsPerTurn bounds a turn's reads, so a flooded socket cannot
	// starve pacing: the turn then loops at once, sends first.
	maxReadsPerTurn = dataphase.MaxRecv
	// maxPollOutWait bounds a wait for POLLOUT after EAGAIN. Linux raises
	// POLLOUT on a UDP socket once half its send buffer is free
	// (sock_writeable), so this is only a guard.
	maxPollOutWait = time.Millisecond
	// refusedBackoff is the least wait after ENOBUFS or EPERM, which no
	// readiness ends (a full qdisc or a firewall says nothing when it lets
	// packets through again) and which must not make the thread spin.
	refusedBackoff = 50 * time.Microsecond
	// idleBackoff is the least wait after a turn that did nothing although
	// the core's deadline had already passed when it began: a core that
	// will not act on its deadline must not make the thread spin.
	idleBackoff = 50 * time.Microsecond
)

// ConnStats is a snapshot of an executor's counters.
type ConnStats struct {
	Turns   uint64 // turns run
	Wakeups uint64 // waits that ended (timeout, readiness or Waker)
	Socket  SocketStats
}

// Conn runs one Test Connection's core on its own Engine Thread: a
// goroutine locked to an OS thread, timer slack 1 ns, waiting in ppoll until
// the core's next deadline or a datagram. It is the executor of every
// endpoint off Linux (and of a Linux client run with
// UDPSTP_CLIENT_THREADS=0); on Linux, server and client run the Pool.
type Conn struct {
	coreState
	log *slog.Logger
	wk  *Waker // nil if the eventfd could not be made: Stop then waits for a turn

	stopReq atomic.Bool
	done    chan struct{}
	turns   atomic.Uint64
	wakeups atomic.Uint64

	// The Engine Thread's own state; the buffers are large arrays
	// (dataphase.MaxPlan and dataphase.MaxRecv datagrams), allocated once
	// with the Conn.
	send     dataphase.SendBuffer
	recv     dataphase.RecvBatch
	gro      groScratch // made at the first read of a GRO socket
	fds      [1]waitFD
	clk      turnClock
	progress *Progress
	readable bool // read in the next turn
}

// RunConn starts driving core over sock on a new Engine Thread and returns
// at once. onEvent receives the core's events on that thread, in order, the
// last one an EvEnd: it must be cheap and must not block (hand the event to
// a channel with room, or copy it under a short lock), since pacing stops
// while it runs. log (nil: discard) gets the rare messages: a recovered
// panic, GSO turned off (unless sock.OnGSODisabled is set already), timer
// slack refused. The caller keeps owning sock: close it after Done.
func RunConn(sock *Socket, core Core, onEvent func(dataphase.Event), log *slog.Logger) *Conn {
	c := newConn(sock, core, onEvent, log)
	go c.run()
	return c
}

func newConn(sock *Socket, core Core, onEvent func(dataphase.Event), log *slog.Logger) *Conn {
	sock.sys.leaveNetpoller() // the Engine Thread's ppoll watches it from now on
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if onEvent == nil {
		onEvent = func(dataphase.Event) {}
	}
	c := &Conn{coreState: newCoreState(sock, core, onEvent), log: log, done: make(chan struct{}), readable: true}
	c.fds[0].sock = sock
	wk, err := NewWaker()
	if err != nil {
		log.Warn("engine: no waker; a stop takes effect at the next turn", "err", err)
	} else {
		c.wk = wk
	}
	if sock.OnGSODisabled == nil {
		sock.OnGSODisabled = func(msg string) { log.Warn(msg) }
	}
	return c
}

// Stop asks the core to end. It is safe from any goroutine, idempotent, and
// returns at once; the core ends on a later turn (watch Done).
func (c *Conn) Stop() {
	c.stopReq.Store(true)
	if c.wk != nil {
		c.wk.Wake()
	}
}

// Done is closed after the last event was delivered and the Engine Thread
// has finished with the socket.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Stats returns a snapshot of the executor's and its socket's counters; it
// is safe from any goroutine.
func (c *Conn) Stats() ConnStats {
	return ConnStats{Turns: c.turns.Load(), Wakeups: c.wakeups.Load(), Socket: c.sock.Stats()}
}

// turnClock reads the clock pair once per turn, and then advances it with
// the runtime's monotonic clock (a vDSO read, about 35 ns) where the turn
// needs a later time: after each send, and for the wait's timeout. Reading
// CLOCK_MONOTONIC_RAW again would be a system call (about 400 ns through
// x/sys, a Pair about 450 ns), and over the at most ~1 ms of a turn the
// two monotonic clocks differ by less than a microsecond even under NTP's
// largest slew (500 ppm).
type turnClock struct {
	start clock.Pair
	at    time.Duration // runtime monotonic time of start
}

var monoBase = time.Now()

func (t *turnClock) read() clock.Pair {
	// The runtime's reading comes from the pair's own bracket: one taken
	// after it would, when the thread is preempted between the two, put the
	// turn's clock behind the real one by the time lost, and a kernel
	// receive time converted with the pair after it.
	var at time.Time
	t.start, at = clock.NowAt()
	t.at = at.Sub(monoBase)
	return t.start
}

func (t *turnClock) now() clock.Pair {
	d := time.Since(monoBase) - t.at
	return clock.Pair{Mono: t.start.Mono.Add(d), Wall: t.start.Wall + int64(d)}
}

// readNow is the pair a read that returned datagrams is stamped with (their
// receive time where the kernel gives none, and the pair that converts a
// kernel timestamp to the Test Time Base): an executor's turn clock
// advanced, so that a turn costs one system call for the clock however many
// reads it makes; a fresh reading without one (Socket.RecvBatch). Against a
// fresh pair, the turn's converts a kernel timestamp with the wall clock's
// offset from the start of the turn: off by the wall clock's drift over
// at most a turn (~1 ms), a few µs even at this VM's thousands of ppm, and
// the same order as the offset's drift between arrival and read that a
// fresh pair leaves anyway.
func readNow(clk *turnClock) clock.Pair {
	if clk != nil {
		return clk.now()
	}
	return clock.Now()
}

// turn runs one turn: clock, commands, sends, reads, events. It reports
// whether a budget was hit, so the thread should loop at once.
func (c *Conn) turn() (again bool) {
	c.turns.Add(1)
	c.worked = false
	pair := c.clk.read()
	c.progress.busy(c.clk.at)

	if c.stopReq.Load() && !c.stopped {
		c.stopped = true
		c.core.Stop()
	}

	// Sends first: pacing matters more than reading promptly, and reads
	// are bounded below. After backpressure the wait below watches POLLOUT
	// or backs off.
	again = c.sendPlans(&c.clk, &c.send, pair, c.log)
	if c.failed {
		return false
	}

	if c.readable {
		// One batch is the turn's whole read budget (maxReadsPerTurn ==
		// dataphase.MaxRecv): a full one means more may be waiting.
		c.readable = false
		if err := c.sock.recvBatch(&c.recv, maxReadsPerTurn, &c.clk, &c.gro); err != nil {
			c.fail(c.log, err)
			return false
		}
		if n := c.recv.N; n > 0 {
			c.core.Receive(&c.recv)
			c.worked = true
			if n == maxReadsPerTurn {
				again = true
			}
		}
	}

	c.deliver()
	return again
}

// backpressure is what a Test Connection's last send attempt ran into. It
// is taken from the socket right after a short SendBatch and holds only
// until that connection's next send attempt: a stale value read later (after
// a turn that only read, say) would keep asking for POLLOUT on a writable
// socket and spin, or keep pushing an overdue send back.
type backpressure uint8

const (
	bpNone    backpressure = iota
	bpFull                 // EAGAIN: the send buffer is full; POLLOUT ends it
	bpRefused              // ENOBUFS or EPERM: only time ends it
)

// sendPlans runs a Test Connection's sends of one turn, for both
// executors: it polls the core from now and sends each plan, advancing the
// turn's clock after every send, until the core has none due, the kernel
// takes a plan short (bp says why; the kernel's count is the core's only
// backpressure signal) or a send fails (the core is failed). It reports
// whether the turn's send budget ran out while the core was still sending:
// it is due still and gets the next turn at once.
func (s *coreState) sendPlans(clk *turnClock, b *dataphase.SendBuffer, now clock.Pair, log *slog.Logger) (budgetSpent bool) {
	s.bp = bpNone
	for s.core.Poll(now, b) {
		n, err := s.sock.SendBatch(b)
		now = clk.now()
		if err != nil {
			s.fail(log, err)
			return false
		}
		s.core.Sent(n)
		s.worked = true
		if n < b.N {
			s.bp = backpressureOf(s.sock)
			return false
		}
		if now.Mono.Sub(clk.start.Mono) >= sendBudget {
			return true
		}
	}
	return false
}

func backpressureOf(s *Socket) backpressure {
	switch {
	case s.sys.lastSendWouldBlock():
		return bpFull
	case s.sys.lastSendBackpressure():
		return bpRefused
	}
	return bpNone
}

// guard returns when a Test Connection that just had a turn with sends
// (polled) next needs one, from its core's deadline dl, and whether to
// watch for room to send: after EAGAIN until POLLOUT (at most
// maxPollOutWait), after ENOBUFS/EPERM not before refusedBackoff, and a core
// that did nothing although its deadline had passed not before idleBackoff,
// so a thread never spins on it.
func guard(dl, now, begin clock.Time, bp backpressure, worked bool) (clock.Time, bool) {
	switch {
	case bp == bpFull:
		if dl <= now {
			dl = now.Add(maxPollOutWait)
		}
		return dl, true
	case bp == bpRefused:
		return max(dl, now.Add(refusedBackoff)), false
	case !worked && dl <= begin:
		return max(dl, now.Add(idleBackoff)), false
	}
	return dl, false
}

// waitTurn sleeps until the core's deadline, a datagram, a Stop, or (after
// backpressure) room to send.
func (c *Conn) waitTurn() {
	now := c.clk.now().Mono
	f := &c.fds[0]
	dl, out := guard(c.core.Deadline(), now, c.clk.start.Mono, c.bp, c.worked)
	f.out = out
	if c.stopReq.Load() && !c.stopped {
		return // take the stop at once
	}
	if dl <= now {
		c.readable = true // due already: the next turn reads too
		return
	}
	err := wait(c.fds[:], c.wk, dl, now)
	c.wakeups.Add(1)
	if err != nil {
		c.fail(c.log, err)
		return
	}
	if f.errored {
		c.sock.clearError()
	}
	// A closed socket reads as ErrClosed, which retires the core.
	c.readable = f.in || f.errored || f.closed
}
