package engine

import (
	"fmt"
	"log/slog"
	"time"
)

// The pool of Engine Threads: the executor of a Linux server, and of a Linux
// client (enginenet.NewClient; UDPSTP_CLIENT_THREADS bounds its threads).
//
// A Pool starts Engine Threads as Test Connections arrive, up to as many as
// the CPUs the process may use (AllowedCPUs: its affinity mask and its
// cgroup v2 quota) or PoolOptions.Threads. They are not pinned: a server
// administrator places them with the service's CPU affinity or a
// container's CPU limit, which the pool then follows. A new Test
// Connection goes to the Engine Thread serving the fewest and stays there.
//
// Each Engine Thread keeps all its sockets in one edge-triggered epoll set
// and its Test Connections in a deadline heap, and runs turns:
//
//  1. read the clock pair once (then advance it with the runtime's cheap
//     monotonic clock, as Conn does);
//  2. take commands (new Test Connections, stops) from its queue;
//  3. collect readiness from the epoll set (epoll_wait with no timeout),
//     unless the wait just before reported the epoll fd idle or left it
//     out because reads could wait (below);
//  4. sends: every Test Connection whose deadline has come, earliest
//     first, polls and sends its Send Plans; a turn's sends are bounded to
//     1 ms (sendBudget), after which the turn moves on to its reads and the
//     next turn starts at once;
//  5. reads: every readable Test Connection gets one recvmmsg of at most
//     256 datagrams (maxReadsPerTurn), so one flooded socket cannot starve
//     pacing; a socket not drained stays on the ready list and the next
//     turn starts at once, sends first;
//  6. each Test Connection's events are delivered right after its work,
//     and its deadline is put back into the heap;
//  7. wait in ppoll on the epoll fd and the thread's eventfd until the
//     earliest deadline, at nanosecond resolution with timer slack 1 ns.
//     No spinning and no idle polling: a turn that found nothing to do
//     waits.
//
// The receive hold-off: after a turn that read, when more than one
// datagram is expected within it (the datagrams the thread read over the
// last 100 to 200 ms, as a rate), arrivals do not end the next wait until
// a fixed end: the hold-off is at most PoolOptions.HoldOff (250 µs by
// default) and less than a quarter of the time any recently read socket's
// receive buffer holds at its recent arrival rate, minus the thread's
// longest recent turn. During it the wait leaves the epoll fd out; a
// deadline still ends it, and the turn it starts collects readiness.
// Outside a hold-off the wait leaves the epoll fd out too while what
// arrived since the set was last known idle can wait for the deadline:
// at most 1 ms (readDefer) after it, and within the same buffer bound.
// The turn such a wait ends collects nothing. Once reads can wait no
// longer, a wait that an arrival would likely end (one in twenty or more
// at the thread's recent read rate) still leaves the fd out if its
// deadline is within readDefer, and its turn collects; any other wait
// takes the fd and returns at once if anything came. So a sending thread
// whose sockets are quiet makes no epoll_wait per turn. The
// buffer share counts payload bytes (half of SO_RCVBUF as read back),
// not the kernel's truesize, so on loopback and veth, which charge far
// more per datagram, the margin is smaller than it looks.
//
// Commands reach an Engine Thread through a mutex-protected queue and its
// eventfd; no channel operation or hand-off to another goroutine happens
// per datagram. A panic in one Test Connection's work (its core, its
// socket calls or its onEvent) retires that Test Connection alone: its
// core fails, its last events are delivered, and its Done closes, so the
// server releases its Admission. Every Test Connection reports its end
// (an EvEnd, made up with EndFailure if need be) whatever happens to its
// thread. Ending a Test Connection costs its thread two epoll_ctl calls
// and a channel close, nothing that waits.

// DefaultHoldOff bounds the receive hold-off when PoolOptions.HoldOff is 0.
const DefaultHoldOff = 250 * time.Microsecond

// PoolOptions configure NewPool.
type PoolOptions struct {
	// Threads is the most Engine Threads the pool starts; 0 sizes it by
	// AllowedCPUs (an experimental override: the server reads it from
	// UDPSTP_ENGINE_THREADS).
	Threads int
	// HoldOff bounds the receive hold-off: 0 means DefaultHoldOff, a
	// negative value turns it off.
	HoldOff time.Duration
	// Group is the grouping window (experimental; 0, the default, is
	// none): a thread whose next deadlines fall within Group of the
	// earliest sleeps until the last of them and serves them in one turn,
	// so each is at most Group late (Load PDUs are still stamped when they
	// leave). It trades wake-ups for lateness, as OB-UDPST's fixed 100 µs
	// tick does. GroupByLoad lets each thread choose it from the Test
	// Connections it carries (group.go).
	Group time.Duration
	// PhaseConns is how many Test Connections of a thread share a phase
	// of the grid before it opens another (gridphase.go): 0 means
	// DefaultPhaseConns, a negative value keeps one phase (experimental).
	PhaseConns int
	// Ring (experimental, off by default) sends the due Test Connections
	// of a turn through one io_uring per Engine Thread, in one system
	// call, where the kernel allows a ring; a thread it refuses sends as
	// without, saying why once.
	Ring bool
	// Log (nil: discard) gets the rare messages: a recovered panic, a
	// socket failure, GSO turned off, timer slack refused.
	Log *slog.Logger
}

// PoolStats is a snapshot of a Pool's counters.
type PoolStats struct {
	MaxThreads int    // the most Engine Threads it may start
	Threads    int    // Engine Threads started and running
	Conns      int    // Test Connections being served
	Turns      uint64 // turns run by all its threads
	Wakeups    uint64 // waits that ended, over all its threads
	// Busy is the time its threads spent out of their waits, added up:
	// its increase over an interval, divided by the interval, is how many
	// threads' worth of work the pool did (0 off Linux, where it is not
	// measured).
	Busy time.Duration
	// GroupMax is the widest grouping window any of its threads used
	// (PoolOptions.Group); 0: none.
	GroupMax time.Duration
	// RingPlans counts the send plans its threads handed to the kernel
	// through io_uring (PoolOptions.Ring); 0 without.
	RingPlans uint64
}

// Pool is a pool of Engine Threads. Its methods are safe for concurrent
// use.
type Pool struct {
	opts  PoolOptions
	limit CPULimit
	max   int
	sys   poolSys
}

// NewPool returns a pool; it starts no thread until the first Run.
func NewPool(o PoolOptions) *Pool {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.HoldOff == 0 {
		o.HoldOff = DefaultHoldOff
	}
	p := &Pool{opts: o, limit: AllowedCPUs()}
	p.max = p.limit.Threads()
	if o.Threads > 0 {
		p.max = o.Threads
	}
	return p
}

// MaxThreads returns the most Engine Threads the pool may start.
func (p *Pool) MaxThreads() int { return p.max }

// Limit returns the CPU limit the pool was sized by.
func (p *Pool) Limit() CPULimit { return p.limit }

// HoldOff returns the receive hold-off bound (0: off).
func (p *Pool) HoldOff() time.Duration { return max(p.opts.HoldOff, 0) }

// Describe says how the pool runs, for a server's start-up log line.
// phaseConns is PoolOptions.PhaseConns with its default applied; <= 0:
// one phase.
func (p *Pool) phaseConns() int {
	if p.opts.PhaseConns == 0 {
		return DefaultPhaseConns
	}
	return p.opts.PhaseConns
}

func (p *Pool) Describe() string {
	if !PoolSupported {
		return "one Engine Thread per Test Connection (no pool on this platform)"
	}
	how := p.limit.String()
	if p.opts.Threads > 0 {
		how = fmt.Sprintf("set by the experimental override; %s", how)
	}
	hold := "receive hold-off off"
	if h := p.HoldOff(); h > 0 {
		hold = fmt.Sprintf("receive hold-off up to %v", h)
	}
	hold += ", " + describeGroup(p.opts.Group)
	if n := p.phaseConns(); n > 0 {
		hold += fmt.Sprintf(", a phase of the grid per %d Test Connections of a thread", n)
	} else {
		hold += ", one phase of the grid"
	}
	if p.opts.Ring {
		hold += ", sends through io_uring (experimental)"
	}
	return fmt.Sprintf("pool of up to %d Engine Threads (%s), %s", p.max, how, hold)
}
