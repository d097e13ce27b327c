//go:build !portable

package engine

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/race"
	"golang.org/x/sys/unix"
)

// A new Test Connection goes to the thread serving the fewest, a new
// thread starts only while every running one serves some, and a Test
// Connection stays on its thread.
func TestPoolPlacement(t *testing.T) {
	p := NewPool(PoolOptions{Threads: 3})
	defer p.Close()
	run := func() *PoolConn {
		a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
		return p.Run(a, newFakeCore(0, 0), nil)
	}
	var cs []*PoolConn
	for range 5 {
		cs = append(cs, run())
	}
	loads := map[*poolThread]int{}
	placed := map[*PoolConn]*poolThread{}
	for _, c := range cs {
		loads[c.th]++
		placed[c] = c.th
	}
	if len(loads) != 3 {
		t.Fatalf("%d threads for 5 Test Connections, want 3", len(loads))
	}
	// 2, 2, 1: end one on a thread serving two; the next goes to one of
	// the two threads serving one.
	var ended *PoolConn
	for _, c := range cs {
		if loads[c.th] == 2 {
			ended = c
			break
		}
	}
	ended.Stop()
	waitDone(t, ended)
	n := run()
	if n.th.load.Load() != 2 || loads[n.th] != 1 && n.th != ended.th {
		t.Errorf("new Test Connection on a thread with %d (it served %d)", n.th.load.Load(), loads[n.th])
	}
	if st := p.Stats(); st.Threads != 3 || st.Conns != 5 {
		t.Errorf("stats %+v", st)
	}
	// Ending one and starting another moved none of the others.
	for _, c := range cs {
		if c != ended && c.th != placed[c] {
			t.Error("a Test Connection moved")
		}
	}
}

// A panic in one Test Connection's core or onEvent retires it alone: its
// end is reported as a failure, and the others on the thread go on to
// their normal end.
func TestPoolPanicIsolation(t *testing.T) {
	p := NewPool(PoolOptions{Threads: 1})
	defer p.Close()
	mk := func(run time.Duration) (*fakeCore, *eventLog) {
		return newFakeCore(time.Millisecond, run), &eventLog{}
	}
	// Healthy ones.
	var good []*PoolConn
	var goodLogs []*eventLog
	var goodCores []*fakeCore
	for range 3 {
		a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
		core, log := mk(100 * time.Millisecond)
		good = append(good, p.Run(a, core, log.add))
		goodLogs, goodCores = append(goodLogs, log), append(goodCores, core)
	}
	// A core that panics in Poll, one that panics in Fail too, and an
	// onEvent that panics.
	a1, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
	c1, l1 := mk(0)
	c1.panicOnPoll = 5
	b1 := p.Run(a1, c1, l1.add)
	a2, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
	c2, l2 := mk(0)
	c2.panicOnPoll, c2.panicInFail = 5, true
	b2 := p.Run(a2, c2, l2.add)
	a3, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
	c3, l3 := mk(20 * time.Millisecond)
	b3 := p.Run(a3, c3, func(ev dataphase.Event) {
		l3.add(ev)
		panic("onEvent: boom")
	})
	waitDone(t, b1)
	waitDone(t, b2)
	waitDone(t, b3)
	l1.checkEnd(t, dataphase.EndFailure)
	if c1.failErr == nil || !strings.Contains(c1.failErr.Error(), "boom") {
		t.Errorf("Fail(%v)", c1.failErr)
	}
	l2.checkEnd(t, dataphase.EndFailure)
	l3.checkEnd(t, dataphase.EndStopped) // the EvEnd was delivered, then onEvent panicked
	// The healthy ones reach their end, which takes a turn after their
	// 100 ms, long after the panics: the thread went on serving them. How
	// much they sent in between is the machine's business.
	for i, c := range good {
		waitDone(t, c)
		goodLogs[i].checkEnd(t, dataphase.EndStopped)
		if goodCores[i].sentOK == 0 {
			t.Errorf("healthy Test Connection %d sent nothing", i)
		}
	}
	if a1.Fd() < 0 {
		t.Error("the executor closed a socket")
	}
	if st := p.Stats(); st.Threads != 1 || st.Conns != 0 {
		t.Errorf("stats %+v", st)
	}
}

// A Test Connection whose socket is closed before its thread takes it
// ends with a failure too.
func TestPoolSocketClosedBeforeStart(t *testing.T) {
	p := NewPool(PoolOptions{Threads: 1})
	defer p.Close()
	a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
	a.Close()
	var log eventLog
	c := p.Run(a, newFakeCore(time.Millisecond, 0), log.add)
	waitDone(t, c)
	log.checkEnd(t, dataphase.EndFailure)
}

// budgetCore counts the datagrams it receives per turn of its thread.
type budgetCore struct {
	*fakeCore
	th        *poolThread
	lastTurn  uint64
	thisTurn  int
	maxPerTrn atomic.Int64
}

func (b *budgetCore) Receive(r *dataphase.RecvBatch) {
	if tn := b.th.turns.Load(); tn != b.lastTurn {
		b.lastTurn, b.thisTurn = tn, 0
	}
	b.thisTurn += r.N
	if int64(b.thisTurn) > b.maxPerTrn.Load() {
		b.maxPerTrn.Store(int64(b.thisTurn))
	}
	b.fakeCore.Receive(r)
}

// A flooded socket is read at most 256 datagrams per turn, and a sender
// on the same thread keeps sending meanwhile.
func TestPoolReadBudget(t *testing.T) {
	p := NewPool(PoolOptions{Threads: 1})
	defer p.Close()
	rx, flood := openPair(t, "127.0.0.1:0", SocketOptions{SockBuf: 8 << 20})
	sa, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
	sender := newFakeCore(time.Millisecond, 0)
	sc := p.Run(sa, sender, nil)
	// The receiver starts once the flood is queued.
	var sb dataphase.SendBuffer
	const total = 3000
	for i := 0; i < total/100; i++ {
		fillPlan(&sb, 1, uint32(i*100), lens(100, 200)...)
		if n, err := flood.SendBatch(&sb); err != nil || n != 100 {
			t.Fatalf("sent %d, %v", n, err)
		}
	}
	core := &budgetCore{fakeCore: newFakeCore(0, 0), th: sc.th}
	rc := p.Run(rx, core, nil)
	await.Within(await.Deadline, func() bool { return core.received.Load() >= total })
	rc.Stop()
	sc.Stop()
	waitDone(t, rc)
	waitDone(t, sc)
	t.Logf("received %d, at most %d in one turn; sender sent %d", core.received.Load(), core.maxPerTrn.Load(), sender.sentOK)
	if core.received.Load() != total {
		t.Errorf("received %d of %d", core.received.Load(), total)
	}
	if m := core.maxPerTrn.Load(); m > maxReadsPerTurn || m == 0 {
		t.Errorf("read %d datagrams in one turn", m)
	}
	if sender.sentOK == 0 {
		t.Error("the sender sent nothing")
	}
}

// Closing a pool ends its threads.
func TestPoolCloseEndsThreads(t *testing.T) {
	// Threads of earlier tests may still be on their way out.
	await.Within(await.Deadline, func() bool { return ThreadCount() == 0 })
	before := ThreadCount()
	p := NewPool(PoolOptions{Threads: 2})
	var cs []*PoolConn
	for range 4 {
		a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
		cs = append(cs, p.Run(a, newFakeCore(time.Millisecond, 0), nil))
	}
	// The pool starts its threads as Test Connections come; they register
	// when they run. More than two would be a bug that waiting cannot hide:
	// the count is checked again once it settles.
	await.True(t, fmt.Sprintf("%d Engine Threads", before+2), func() bool { return ThreadCount() >= before+2 })
	if n := ThreadCount(); n != before+2 {
		t.Errorf("%d Engine Threads, want %d", n, before+2)
	}
	p.Close()
	for _, c := range cs {
		waitDone(t, c)
	}
	await.True(t, "the pool's threads to end after Close", func() bool { return ThreadCount() == before })
	// After Close a Test Connection still runs, on its own thread.
	a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
	var log eventLog
	c := p.Run(a, newFakeCore(time.Millisecond, 10*time.Millisecond), log.add)
	waitDone(t, c)
	log.checkEnd(t, dataphase.EndStopped)
}

// newTestThread returns a pool thread driven by the test itself.
func newTestThread(t *testing.T, o PoolOptions) *poolThread {
	t.Helper()
	p := NewPool(o)
	th, err := newPoolThread(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unix.Close(th.epfd)
		th.wk.Close()
		if th.ring != nil {
			th.ring.close()
		}
	})
	return th
}

func addTestConn(th *poolThread, sock *Socket, core Core, onEvent func(dataphase.Event)) *PoolConn {
	c := newPoolConn(sock, core, onEvent)
	c.th = th
	th.load.Add(1)
	th.add(c)
	return c
}

// Every Test Connection of a thread that dies reports its end.
func TestPoolThreadDeath(t *testing.T) {
	th := newTestThread(t, PoolOptions{Threads: 1})
	var logs [3]eventLog
	var cs []*PoolConn
	for i := range logs {
		a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
		cs = append(cs, addTestConn(th, a, newFakeCore(time.Millisecond, 0), logs[i].add))
	}
	// One more, queued but not yet taken.
	a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
	var qlog eventLog
	queued := newPoolConn(a, newFakeCore(time.Millisecond, 0), qlog.add)
	queued.th = th
	if !th.enqueue(queued, false) {
		t.Fatal("enqueue refused")
	}
	th.turn()
	th.die("boom", nil)
	for i, c := range append(cs, queued) {
		select {
		case <-c.Done():
		default:
			t.Fatalf("Test Connection %d not done", i)
		}
	}
	for i := range logs {
		logs[i].checkEnd(t, dataphase.EndFailure)
	}
	qlog.checkEnd(t, dataphase.EndFailure)
	if th.enqueue(queued, false) {
		t.Error("a dead thread took a command")
	}
}

// 8 Test Connections on one Engine Thread: a steady turn (sends, reads,
// readiness) allocates nothing; TestPoolWaitAllocs covers the wait.
func TestPoolTurnAllocs(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	th := newTestThread(t, PoolOptions{Threads: 1})
	var peers []*Socket
	var cores []*fakeCore
	events := 0
	for range 8 {
		a, b := openPair(t, "127.0.0.1:0", SocketOptions{SockBuf: 4 << 20})
		core := newFakeCore(200*time.Microsecond, 0)
		addTestConn(th, a, core, func(dataphase.Event) { events++ })
		peers, cores = append(peers, b), append(cores, core)
	}
	var sb dataphase.SendBuffer
	var rb dataphase.RecvBatch
	fillPlan(&sb, 1, 0, lens(5, 300)...)
	step := func() {
		for _, b := range peers {
			if _, err := b.SendBatch(&sb); err != nil {
				t.Fatal(err)
			}
		}
		if !th.turn() {
			th.waitTurn()
		}
		for _, b := range peers {
			if err := b.RecvBatch(&rb, dataphase.MaxRecv); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 50 {
		step()
	}
	allocs := race.AllocsPerRun(500, step)
	var sent, recv int64
	for _, c := range cores {
		sent += int64(c.sentOK)
		recv += c.received.Load()
	}
	t.Logf("allocs per turn %v; sent %d, received %d; turns %d, wake-ups %d", allocs, sent, recv, th.turns.Load(), th.wakeups.Load())
	if allocs != 0 {
		t.Fatalf("a steady turn of 8 Test Connections allocates %v times", allocs)
	}
	if sent == 0 || recv == 0 {
		t.Fatal("the turns did not send and read")
	}
}

// A turn that waits in ppoll allocates nothing either. The wait is forced
// rather than hoped for: the only core has no deadline, so the thread
// waits until the peer's datagram makes its socket readable, however slow
// the machine (a 200 µs deadline is always past under the race detector).
func TestPoolWaitAllocs(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	th := newTestThread(t, PoolOptions{Threads: 1})
	a, b := openPair(t, "127.0.0.1:0", SocketOptions{SockBuf: 1 << 20})
	core := newFakeCore(0, 0)
	addTestConn(th, a, core, nil)
	checkWaitAllocs(t, b, core, func() { th.waitTurn(); th.turn() }, th.wakeups.Load)
}

// checkWaitAllocs checks an executor's wait and turn, waitTurn, for a
// core without a deadline: peer sends one datagram per step, so every
// wait sleeps until it is readable and the turn reads it. Each step must
// allocate nothing, wait once (wakeups counts) and read its datagram.
func checkWaitAllocs(t *testing.T, peer *Socket, core *fakeCore, waitTurn func(), wakeups func() uint64) {
	t.Helper()
	var sb dataphase.SendBuffer
	fillPlan(&sb, 1, 0, 200)
	step := func() {
		if _, err := peer.SendBatch(&sb); err != nil {
			t.Fatal(err)
		}
		waitTurn()
	}
	for range 20 {
		step()
	}
	before := wakeups()
	const runs = 200
	allocs := race.AllocsPerRun(runs, step)
	waits := wakeups() - before
	t.Logf("allocs per wait and turn %v; received %d; wake-ups %d", allocs, core.received.Load(), waits)
	if allocs != 0 {
		t.Fatalf("a turn that waits allocates %v times", allocs)
	}
	// AllocsPerRun runs the step once more to warm up.
	if waits != runs+1 || core.received.Load() != 20+runs+1 {
		t.Fatalf("%d waits and %d datagrams read in %d steps", waits, core.received.Load(), 20+runs+1)
	}
}

// Upstream-like load: many datagrams arriving on several sockets of one
// thread are read in fewer wake-ups with the hold-off than without. The
// counts are logged, not judged (timing belongs to benchmarks); what is
// checked is that everything arrives.
func TestPoolHoldOffReadsAll(t *testing.T) {
	for _, hold := range []time.Duration{-1, 0} {
		p := NewPool(PoolOptions{Threads: 1, HoldOff: hold})
		var rxs []*fakeCore
		var pcs []*PoolConn
		var txs []*Socket
		for range 4 {
			a, b := openPair(t, "127.0.0.1:0", SocketOptions{SockBuf: 1 << 20})
			core := newFakeCore(0, 0)
			rxs, txs = append(rxs, core), append(txs, b)
			pcs = append(pcs, p.Run(a, core, nil))
		}
		var sb dataphase.SendBuffer
		fillPlan(&sb, 1, 0, 200)
		const rounds = 2000
		for i := 0; i < rounds; i++ {
			for _, s := range txs {
				if _, err := s.SendBatch(&sb); err != nil {
					t.Fatal(err)
				}
			}
			if i%4 == 0 {
				time.Sleep(20 * time.Microsecond)
			}
		}
		await.Within(await.Deadline, func() bool {
			var got int64
			for _, c := range rxs {
				got += c.received.Load()
			}
			return got >= 4*rounds
		})
		st := p.Stats()
		for i, c := range rxs {
			if c.received.Load() != rounds {
				t.Errorf("hold-off %v: socket %d received %d of %d", hold, i, c.received.Load(), rounds)
			}
		}
		t.Logf("hold-off %v: %d wake-ups, %d turns for %d datagrams", hold, st.Wakeups, st.Turns, 4*rounds)
		for _, c := range pcs {
			c.Stop()
		}
		p.Close()
	}
}

// tidCore records the thread it runs on.
type tidCore struct {
	*fakeCore
	tid atomic.Int64
}

func (c *tidCore) Poll(now clock.Pair, b *dataphase.SendBuffer) bool {
	if c.tid.Load() == 0 {
		c.tid.Store(int64(unix.Gettid()))
	}
	return c.fakeCore.Poll(now, b)
}

// threadCPU returns the time thread tid of this process has run.
func threadCPU(tid int64) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/schedstat", tid))
	if err != nil {
		return 0
	}
	var ns int64
	fmt.Sscan(string(b), &ns)
	return time.Duration(ns)
}

// BenchmarkPoolSenders runs n cores that each send a 472-byte datagram
// every millisecond (the capacity check's row 4) on one Engine Thread,
// over loopback to sockets nobody reads, for 300 ms per iteration, with
// and without a grouping window. It reports how late the sends were, the
// thread's wake-ups per send and its CPU time per send (loopback runs the
// receive path in the sender's context, so this is an upper bound of what
// the sends cost over a NIC).
func BenchmarkPoolSenders(b *testing.B) {
	for _, n := range []int{1, 8, 32, 80} {
		for _, group := range []time.Duration{0, 50 * time.Microsecond} {
			b.Run(fmt.Sprintf("n=%d/group=%v", n, group), func(b *testing.B) {
				var socks []*Socket
				for range n {
					a, _ := openPair(b, "127.0.0.1:0", SocketOptions{SockBuf: 256 << 10})
					socks = append(socks, a)
				}
				var late []time.Duration
				var sends, wakeups uint64
				var cpu time.Duration
				for b.Loop() {
					p := NewPool(PoolOptions{Threads: 1, Group: group})
					var cores []*tidCore
					var pcs []*PoolConn
					for _, s := range socks {
						c := &tidCore{fakeCore: newFakeCore(time.Millisecond, 300*time.Millisecond)}
						c.dgramLen = 472
						cores = append(cores, c)
						pcs = append(pcs, p.Run(s, c, nil))
					}
					time.Sleep(20 * time.Millisecond)
					tid := cores[0].tid.Load()
					c0 := threadCPU(tid)
					w0 := p.Stats().Wakeups
					for _, pc := range pcs {
						<-pc.Done()
					}
					cpu += threadCPU(tid) - c0
					wakeups += p.Stats().Wakeups - w0
					p.Close()
					for _, c := range cores {
						late = append(late, c.lateness...)
						sends += uint64(c.sentOK)
					}
				}
				slices.Sort(late)
				q := func(p float64) float64 {
					return float64(late[min(len(late)-1, int(p*float64(len(late))))].Nanoseconds()) / 1e3
				}
				b.ReportMetric(q(0.5), "late-p50-µs")
				b.ReportMetric(q(0.99), "late-p99-µs")
				b.ReportMetric(float64(wakeups)/float64(sends), "wakeups/send")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(sends)/1e3, "cpu-µs/send")
			})
		}
	}
}

// EAGAIN (a full send buffer) makes the Test Connection watch EPOLLOUT;
// once the socket takes datagrams again it goes on sending.
func TestPoolSendBufferFull(t *testing.T) {
	p := NewPool(PoolOptions{Threads: 1})
	defer p.Close()
	a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
	var calls atomic.Int32
	a.sys.sendFn = func(fd int, msgs []unix.Mmsghdr) (int, unix.Errno) {
		if calls.Add(1) <= 3 {
			return 0, unix.EAGAIN
		}
		return sendmmsg(fd, msgs)
	}
	core := newFakeCore(time.Millisecond, 0)
	var log eventLog
	c := p.Run(a, core, log.add)
	// Five more send calls after the three refusals: it went on sending.
	await.True(t, "sends after the refusals", func() bool { return calls.Load() >= 8 })
	c.Stop()
	waitDone(t, c)
	log.checkEnd(t, dataphase.EndLocalStop)
	st := c.Stats()
	t.Logf("sent %d; stats %+v", core.sentOK, st)
	if st.Socket.Counts[CountBackpressure] != 3 || core.sentOK < 5 {
		t.Fatalf("sent %d, stats %+v", core.sentOK, st)
	}
}

// phaseCore records the grid phase its thread gave it, and how often it
// had been polled by then.
type phaseCore struct {
	*fakeCore
	phase      clock.Time
	set        int
	pollsAtSet int
}

func (p *phaseCore) SetGridPhase(ph clock.Time) {
	p.phase, p.set, p.pollsAtSet = ph, p.set+1, p.polls
}

// A thread gives its Test Connections phases of the grid as they come,
// before their first turn, a phase per PhaseConns of them, and gives a
// leaver's phase to the next one.
func TestPoolThreadGivesPhases(t *testing.T) {
	th := newTestThread(t, PoolOptions{Threads: 1, PhaseConns: 2})
	var cores []*phaseCore
	var conns []*PoolConn
	for range 5 {
		a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
		pc := &phaseCore{fakeCore: newFakeCore(time.Millisecond, 0)}
		cores = append(cores, pc)
		conns = append(conns, addTestConn(th, a, pc, nil))
		// A turn, so that a core given its phase late would have been
		// polled first.
		th.turn()
	}
	for i, want := range []int{0, 0, 1, 1, 2} {
		if cores[i].set != 1 || cores[i].phase != phaseOf(want) {
			t.Errorf("Test Connection %d: phase %v set %d times, want %v once", i, cores[i].phase, cores[i].set, phaseOf(want))
		}
		if cores[i].polls == 0 {
			t.Errorf("Test Connection %d was never polled: the order is not tested", i)
		}
		if cores[i].pollsAtSet != 0 {
			t.Errorf("Test Connection %d polled %d times before it had its phase", i, cores[i].pollsAtSet)
		}
	}
	th.remove(conns[2]) // one of phase 1 leaves
	a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
	pc := &phaseCore{fakeCore: newFakeCore(time.Millisecond, 0)}
	addTestConn(th, a, pc, nil)
	if pc.phase != phaseOf(1) {
		t.Errorf("after a leaver of phase 1, the next got %v, want %v", pc.phase, phaseOf(1))
	}
	// A core without a grid is served as before.
	b, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
	if c := addTestConn(th, b, newFakeCore(time.Millisecond, 0), nil); c.phase != -1 {
		t.Errorf("a core without a grid got phase %d", c.phase)
	}
}

// With GroupByLoad a thread's grouping window follows the Test
// Connections it carries, as they come and go, and the pool reports the
// widest it used; with a fixed window, that window.
func TestPoolThreadGroupsByLoad(t *testing.T) {
	th := newTestThread(t, PoolOptions{Threads: 1, Group: GroupByLoad})
	var conns []*PoolConn
	for i := 1; i <= groupFrom+10; i++ {
		a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
		conns = append(conns, addTestConn(th, a, newFakeCore(time.Millisecond, 0), nil))
		if th.group != groupFor(i) {
			t.Fatalf("with %d Test Connections the window is %v, want %v", i, th.group, groupFor(i))
		}
	}
	if th.group != clock.Time(10*groupPerConn) {
		t.Errorf("%d beyond the first %d: window %v, want %v", 10, groupFrom, th.group, 10*groupPerConn)
	}
	for _, c := range conns[groupFrom-1:] {
		th.remove(c)
	}
	if th.group != 0 {
		t.Errorf("back to %d Test Connections: window %v, want none", th.live, th.group)
	}
	if got := time.Duration(th.groupMax.Load()); got != 10*groupPerConn {
		t.Errorf("widest window used %v, want %v", got, 10*groupPerConn)
	}
	fixed := newTestThread(t, PoolOptions{Threads: 1, Group: 50 * time.Microsecond})
	a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
	addTestConn(fixed, a, newFakeCore(time.Millisecond, 0), nil)
	if fixed.group != clock.Time(50*time.Microsecond) {
		t.Errorf("a fixed window became %v", fixed.group)
	}
}

// A sending thread whose socket is quiet collects no readiness after its
// waits (no epoll_wait per turn): only a turn that follows no wait (the
// thread was late, or the turn before asked for another) collects. A
// datagram that then arrives is still read within the turns readDefer
// allows: every wait that leaves the epoll fd out ends at a later grid
// deadline, so after readDefer/interval of them the next wait takes the
// epoll fd and returns at once. Both bounds count turns and sends, not
// time, so a loaded machine cannot break them.
func TestPoolDefersReadinessOfQuietSockets(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// The yields below set the 1 ns timer slack of an Engine Thread on
	// this thread; it goes back to the runtime's threads with the default.
	defer SetTimerSlack(0)
	th := newTestThread(t, PoolOptions{Threads: 1})
	a, b := openPair(t, "127.0.0.1:0", SocketOptions{SockBuf: 1 << 20})
	const interval = 250 * time.Microsecond
	core := newFakeCore(interval, 0)
	addTestConn(th, a, core, nil)
	// step runs a turn and, unless it asks for another, a wait; it
	// reports whether the turn collected readiness and whether a wait
	// slept (a wait that found its deadline past returns at once).
	// The thread yields as run's does, so that sysmon's preemption
	// signal does not interrupt the waits (an interrupted wait that took
	// the epoll fd cannot tell whether it was readable, so its turn
	// collects).
	var y yielder
	step := func() (collected, slept bool) {
		collected = th.collect
		again := th.turn()
		y.afterTurn(th.clk.start.Mono)
		if again {
			return collected, false
		}
		w := th.wakeups.Load()
		th.waitTurn()
		return collected, th.wakeups.Load() != w
	}
	// The first turn collects (the socket may hold datagrams), and the
	// epoll fd may read as ready once after the registration with nothing
	// to report.
	for range 5 {
		step()
	}
	const steps = 200
	collects, unslept := 0, 0
	prevSlept := true
	for range steps {
		c, s := step()
		if c {
			collects++
			if !prevSlept {
				unslept++
			}
		}
		prevSlept = s
	}
	t.Logf("%d turns: %d collected readiness, %d of them after no wait; sent %d", steps, collects, unslept, core.sentOK)
	if collects != unslept {
		t.Fatalf("%d of %d turns after a wait collected readiness from a quiet socket", collects-unslept, steps)
	}
	if core.sentOK == 0 {
		t.Fatal("the core sent nothing")
	}

	var sb dataphase.SendBuffer
	fillPlan(&sb, 1, 0, 200)
	if _, err := b.SendBatch(&sb); err != nil {
		t.Fatal(err)
	}
	// Counted in the core's sends: a wait that a signal interrupts ends
	// a turn that sends nothing, and moves no deadline.
	bound := int(readDefer/clock.Time(interval)) + 2
	sent0 := core.sentOK
	for i := 0; core.received.Load() == 0; i++ {
		if n := core.sentOK - sent0; n > bound || i == 100_000 {
			t.Fatalf("the datagram was not read in %d turns, %d of them sending (readDefer allows %d)", i, n, bound)
		}
		step()
	}
}
