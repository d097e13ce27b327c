package engine

import (
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/await"
)

// fakeCore sends one datagram every interval for runFor from its first
// turn (so a thread that starts late on a busy machine still runs it
// whole), counts what it receives, and records how late each send was. It
// allocates nothing in its steady state.
type fakeCore struct {
	interval clock.Time    // 0: never sends
	runFor   time.Duration // 0: runs until Stop
	end      clock.Time    // clock.Never until the first turn, or with runFor 0
	next     clock.Time
	started  bool
	dgramLen int

	stopping, done bool
	events         []dataphase.Event
	evBuf          [8]dataphase.Event

	polls    int
	sentOK   int
	sends    atomic.Int64 // sentOK, for a test that watches it while the core runs
	received atomic.Int64
	lateness []time.Duration // capped at its capacity
	failErr  error

	panicOnPoll int  // panic on this Poll (1-based); 0 never
	panicInFail bool // Fail panics too
}

func newFakeCore(interval, runFor time.Duration) *fakeCore {
	f := &fakeCore{interval: clock.Time(interval), runFor: runFor, end: clock.Never, dgramLen: 100,
		lateness: make([]time.Duration, 0, 4096)}
	f.events = f.evBuf[:0]
	return f
}

func (f *fakeCore) emitEnd(r dataphase.EndReason) {
	f.events = append(f.events, dataphase.Event{Kind: dataphase.EvEnd, End: r})
	f.done = true
}

func (f *fakeCore) Poll(now clock.Pair, b *dataphase.SendBuffer) bool {
	f.polls++
	if f.polls == f.panicOnPoll {
		panic("fake core: boom")
	}
	if !f.started && !f.done {
		f.started, f.next = true, now.Mono
		if f.runFor > 0 {
			f.end = now.Mono.Add(f.runFor)
		}
	}
	switch {
	case f.done:
		return false
	case f.stopping:
		f.emitEnd(dataphase.EndLocalStop)
		return false
	case now.Mono >= f.end:
		f.emitEnd(dataphase.EndStopped)
		return false
	case f.interval == 0:
		return false
	}
	if now.Mono < f.next {
		return false
	}
	if len(f.lateness) < cap(f.lateness) {
		f.lateness = append(f.lateness, now.Mono.Sub(f.next))
	}
	for f.next <= now.Mono {
		f.next += f.interval
	}
	b.N = 1
	b.Dgrams[0] = dataphase.OutDatagram{HdrLen: testHdrLen, Len: uint16(f.dgramLen)}
	writeHdr(b.Slot(0), 0xcc, uint32(f.polls), f.dgramLen)
	return true
}

func (f *fakeCore) Sent(n int)                     { f.sentOK += n; f.sends.Add(int64(n)) }
func (f *fakeCore) Receive(b *dataphase.RecvBatch) { f.received.Add(int64(b.N)) }
func (f *fakeCore) Stop()                          { f.stopping = true }
func (f *fakeCore) Done() bool                     { return f.done }

func (f *fakeCore) Deadline() clock.Time {
	switch {
	case f.done:
		return clock.Never
	case f.stopping:
		return 0
	case f.interval > 0 && f.started && f.next < f.end:
		return f.next
	case f.interval > 0 && !f.started:
		return 0
	}
	return f.end
}

func (f *fakeCore) Fail(err error) {
	if f.panicInFail {
		panic("fake core: Fail panics too")
	}
	f.failErr = err
	if !f.done {
		f.emitEnd(dataphase.EndFailure)
	}
}

func (f *fakeCore) Events() []dataphase.Event {
	ev := f.events
	f.events = f.evBuf[:0]
	return ev
}

// eventLog collects events from the Engine Thread.
type eventLog struct {
	mu  sync.Mutex
	evs []dataphase.Event
}

func (l *eventLog) add(ev dataphase.Event) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

// checkEnd verifies the events end with exactly one EvEnd of reason r.
func (l *eventLog) checkEnd(t *testing.T, r dataphase.EndReason) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	ends := 0
	for _, ev := range l.evs {
		if ev.Kind == dataphase.EvEnd {
			ends++
		}
	}
	if ends != 1 || len(l.evs) == 0 || l.evs[len(l.evs)-1].Kind != dataphase.EvEnd || l.evs[len(l.evs)-1].End != r {
		t.Fatalf("events %+v: want one EvEnd %v, last", l.evs, r)
	}
}

// testConn is a running Test Connection of either executor (Conn,
// PoolConn).
type testConn interface {
	Stop()
	Done() <-chan struct{}
	Stats() ConnStats
}

// waitDone waits for c's end, bounded by await.Deadline: a Test
// Connection that never ends is a bug, one that ends late a busy machine.
func waitDone(t *testing.T, c testConn) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(await.Deadline):
		t.Fatalf("Test Connection not done after %v (stats %+v)", await.Deadline, c.Stats())
	}
}

// runners start one Test Connection on each executor over real sockets:
// an Engine Thread of its own (RunConn) and a pool of one Engine Thread.
// What both must do is tested on each.
var runners = []struct {
	name string
	run  func(t *testing.T, sock *Socket, core Core, onEvent func(dataphase.Event)) testConn
}{
	{"conn", func(_ *testing.T, sock *Socket, core Core, onEvent func(dataphase.Event)) testConn {
		return RunConn(sock, core, onEvent, nil)
	}},
	{"pool", func(t *testing.T, sock *Socket, core Core, onEvent func(dataphase.Event)) testConn {
		p := NewPool(PoolOptions{Threads: 1})
		t.Cleanup(p.Close) // before the test's sockets close, as a defer would
		return p.Run(sock, core, onEvent)
	}},
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// A core that wants a turn every 1 ms for 200 ms. Wake-up lateness and
// the number of sends are logged, not judged: a busy machine wakes the
// thread late and the core skips the turns it missed; timing belongs to
// BenchmarkConnTimer. What is judged is what the code guarantees: never
// more sends than turns were due, everything sent arrives, and no spin.
func TestConnSpacing(t *testing.T) {
	a, b := openPair(t, "127.0.0.1:0", SocketOptions{SockBuf: 1 << 20})
	core := newFakeCore(time.Millisecond, 200*time.Millisecond)
	var log eventLog
	c := RunConn(a, core, log.add, nil)
	waitDone(t, c)
	log.checkEnd(t, dataphase.EndStopped)
	st := c.Stats()
	t.Logf("%d sends; lateness p50 %v p99 %v max %v; stats %+v", core.sentOK,
		percentile(core.lateness, 0.5), percentile(core.lateness, 0.99), slices.Max(core.lateness), st)
	if core.sentOK < 1 || core.sentOK > 201 {
		t.Fatalf("%d sends in 200 ms at 1 ms", core.sentOK)
	}
	// What was sent arrived.
	var rb dataphase.RecvBatch
	if got := recvAll(t, b, &rb, core.sentOK, func(*dataphase.RecvBatch) {}); got != core.sentOK {
		t.Fatalf("peer received %d of %d", got, core.sentOK)
	}
	// No spinning: about one wake-up per send.
	if st.Wakeups > uint64(4*core.sentOK+10) {
		t.Fatalf("%d wake-ups for %d sends", st.Wakeups, core.sentOK)
	}
}

// Stop reaches an executor that waits without a deadline through its
// eventfd: without it the executor would wait for ever, and waitDone
// fails. (Whether the Stop came while the thread was in its wait or just
// before it is the scheduler's choice; both must end it.)
func TestStop(t *testing.T) {
	for _, r := range runners {
		t.Run(r.name, func(t *testing.T) {
			a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
			core := newFakeCore(0, 0) // only waits: Deadline is Never
			var log eventLog
			c := r.run(t, a, core, log.add)
			await.True(t, "the first turn", func() bool { return c.Stats().Turns >= 1 })
			start := time.Now()
			go c.Stop()
			c.Stop()
			waitDone(t, c)
			t.Logf("stopped %v after Stop; stats %+v", time.Since(start), c.Stats())
			log.checkEnd(t, dataphase.EndLocalStop)
			c.Stop() // after the end: harmless
		})
	}
}

func TestConnReceive(t *testing.T) {
	a, b := openPair(t, "127.0.0.1:0", SocketOptions{SockBuf: 4 << 20})
	core := newFakeCore(0, 0)
	var log eventLog
	c := RunConn(a, core, log.add, nil)
	var sb dataphase.SendBuffer
	const total = 1000
	for i := 0; i < total/100; i++ {
		fillPlan(&sb, 1, uint32(i*100), lens(100, 200)...)
		if n, err := b.SendBatch(&sb); err != nil || n != 100 {
			t.Fatalf("sent %d, %v", n, err)
		}
	}
	await.Within(await.Deadline, func() bool { return core.received.Load() >= total })
	c.Stop()
	waitDone(t, c)
	log.checkEnd(t, dataphase.EndLocalStop)
	if got := core.received.Load(); got != total {
		t.Fatalf("received %d of %d", got, total)
	}
	st := c.Stats()
	t.Logf("stats %+v", st)
	if st.Socket.Counts[CountRecvDatagrams] != total {
		t.Fatalf("stats %+v", st)
	}
}

func TestConnPanic(t *testing.T) {
	cases := []struct {
		name        string
		panicOnPoll int
		panicInFail bool
		panicEvent  bool
	}{
		{"core panics", 3, false, false},
		{"core panics, and again in Fail", 3, true, false},
		{"onEvent panics", 0, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
			core := newFakeCore(time.Millisecond, 0)
			core.panicOnPoll, core.panicInFail = tc.panicOnPoll, tc.panicInFail
			var log eventLog
			onEvent := log.add
			if tc.panicEvent {
				onEvent = func(ev dataphase.Event) {
					log.add(ev)
					if len(log.evs) == 1 {
						panic("onEvent: boom")
					}
				}
			}
			c := RunConn(a, core, onEvent, nil)
			if tc.panicEvent {
				await.True(t, "the first turn", func() bool { return c.Stats().Turns >= 1 })
				c.Stop()
			}
			waitDone(t, c)
			if tc.panicEvent {
				log.checkEnd(t, dataphase.EndLocalStop)
				return
			}
			log.checkEnd(t, dataphase.EndFailure)
			if !tc.panicInFail && (core.failErr == nil || !strings.Contains(core.failErr.Error(), "boom")) {
				t.Fatalf("Fail(%v)", core.failErr)
			}
			// The socket is untouched and usable by others.
			if a.Fd() < 0 {
				t.Fatal("socket closed by the executor")
			}
		})
	}
}

// Closing the socket under a waiting executor ends the wait (the pool's
// through the socket's close signal in the epoll set), and the core fails
// with net.ErrClosed.
func TestSocketClosed(t *testing.T) {
	for _, r := range runners {
		t.Run(r.name, func(t *testing.T) {
			a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
			core := newFakeCore(0, 0)
			var log eventLog
			c := r.run(t, a, core, log.add)
			await.True(t, "the first turn", func() bool { return c.Stats().Turns >= 1 })
			a.Close()
			waitDone(t, c)
			log.checkEnd(t, dataphase.EndFailure)
			if !errors.Is(core.failErr, net.ErrClosed) {
				t.Fatalf("Fail(%v)", core.failErr)
			}
		})
	}
}

// ENOBUFS on every send: the executor backs off instead of spinning.
func TestBackoffNoSpin(t *testing.T) {
	for _, r := range runners {
		t.Run(r.name, func(t *testing.T) {
			a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
			refuseAll(a)
			core := newFakeCore(10*time.Microsecond, 100*time.Millisecond)
			var log eventLog
			c := r.run(t, a, core, log.add)
			waitDone(t, c)
			log.checkEnd(t, dataphase.EndStopped)
			st := c.Stats()
			t.Logf("stats %+v", st)
			// At least 50 µs per wait: at most ~2,000 in 100 ms.
			if st.Turns > 3000 || st.Socket.Counts[CountBackpressure] == 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// TestStalledThreads: a thread stuck inside one turn shows in Stalled; a
// waiting one does not, however long it has waited.
func TestStalledThreads(t *testing.T) {
	a, b := openPair(t, "127.0.0.1:0", SocketOptions{})
	core := &blockingCore{fakeCore: newFakeCore(0, 0), entered: make(chan struct{}), block: make(chan struct{})}
	c := RunConn(a, core, nil, nil)
	defer func() {
		c.Stop()
		waitDone(t, c)
	}()
	// The core never sends (Deadline is Never): after its first turn the
	// thread waits until a datagram comes. No thread in a turn at all
	// (limit 0) is then the state the test starts from; threads of earlier
	// tests that are still ending are waited for too.
	await.True(t, "the thread waiting after its first turn", func() bool {
		return c.Stats().Turns >= 1 && Stalled(0) == 0
	})
	time.Sleep(20 * time.Millisecond) // waiting longer than the limit below
	if n := Stalled(10 * time.Millisecond); n != 0 {
		t.Errorf("%d threads stalled while the only one waits", n)
	}
	core.blockNow.Store(true)
	var sb dataphase.SendBuffer
	fillPlan(&sb, 1, 0, 100)
	if _, err := b.SendBatch(&sb); err != nil { // wakes the thread: its next Poll blocks
		t.Fatal(err)
	}
	<-core.entered
	await.True(t, "Stalled to count the blocked thread", func() bool { return Stalled(10*time.Millisecond) == 1 })
	close(core.block)
}

// blockingCore blocks inside Poll, once, when blockNow is set: a thread
// stuck in a turn.
type blockingCore struct {
	*fakeCore
	entered  chan struct{} // closed when Poll blocks
	block    chan struct{} // Poll returns when it is closed
	blockNow atomic.Bool
}

func (b *blockingCore) Poll(now clock.Pair, buf *dataphase.SendBuffer) bool {
	if b.blockNow.Swap(false) {
		close(b.entered)
		<-b.block
	}
	return b.fakeCore.Poll(now, buf)
}
