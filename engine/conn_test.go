package engine

import (
	"errors"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/race"
)

// fakeCore sends one datagram every interval until end, counts what it
// receives, and records how late each send was. It allocates nothing in its
// steady state.
type fakeCore struct {
	interval clock.Time // 0: never sends
	end      clock.Time // clock.Never: runs until Stop
	next     clock.Time
	started  bool
	dgramLen int

	stopping, done bool
	events         []dataphase.Event
	evBuf          [8]dataphase.Event

	polls    int
	sentOK   int
	received atomic.Int64
	lateness []time.Duration // capped at its capacity
	failErr  error

	panicOnPoll int  // panic on this Poll (1-based); 0 never
	panicInFail bool // Fail panics too
}

func newFakeCore(interval, runFor time.Duration) *fakeCore {
	f := &fakeCore{interval: clock.Time(interval), end: clock.Never, dgramLen: 100,
		lateness: make([]time.Duration, 0, 4096)}
	if runFor > 0 {
		f.end = clock.Mono().Add(runFor)
	}
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
	if !f.started {
		f.started, f.next = true, now.Mono
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

func (f *fakeCore) Sent(n int)                     { f.sentOK += n }
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

func waitDone(t *testing.T, c testConn, d time.Duration) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(d):
		t.Fatalf("Test Connection not done after %v (stats %+v)", d, c.Stats())
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

// A core that wants a turn every 1 ms for 200 ms. Wake-up lateness is
// logged, not judged: timing belongs to BenchmarkConnTimer.
func TestConnSpacing(t *testing.T) {
	a, b := openPair(t, "127.0.0.1:0", SocketOptions{SockBuf: 1 << 20})
	core := newFakeCore(time.Millisecond, 200*time.Millisecond)
	var log eventLog
	c := RunConn(a, core, log.add, nil)
	waitDone(t, c, 5*time.Second)
	log.checkEnd(t, dataphase.EndStopped)
	st := c.Stats()
	t.Logf("%d sends; lateness p50 %v p99 %v max %v; stats %+v", core.sentOK,
		percentile(core.lateness, 0.5), percentile(core.lateness, 0.99), slices.Max(core.lateness), st)
	if core.sentOK < 100 || core.sentOK > 201 {
		t.Fatalf("%d sends in 200 ms at 1 ms", core.sentOK)
	}
	// What was sent arrived.
	var rb dataphase.RecvBatch
	if got := recvAll(t, b, &rb, core.sentOK, func(*dataphase.RecvBatch) {}); got != core.sentOK {
		t.Fatalf("peer received %d of %d", got, core.sentOK)
	}
	// No spinning: about one wake-up per send.
	if st.Wakeups > uint64(4*core.sentOK) {
		t.Fatalf("%d wake-ups for %d sends", st.Wakeups, core.sentOK)
	}
}

// Stop reaches an executor that waits without a deadline through its
// eventfd.
func TestStop(t *testing.T) {
	for _, r := range runners {
		t.Run(r.name, func(t *testing.T) {
			a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
			core := newFakeCore(0, 0) // only waits: Deadline is Never
			var log eventLog
			c := r.run(t, a, core, log.add)
			time.Sleep(20 * time.Millisecond)
			start := time.Now()
			go c.Stop()
			c.Stop()
			waitDone(t, c, 2*time.Second)
			t.Logf("stopped %v after Stop", time.Since(start))
			log.checkEnd(t, dataphase.EndLocalStop)
			c.Stop() // after the end: harmless
			if st := c.Stats(); st.Wakeups == 0 {
				t.Fatalf("stats %+v", st)
			}
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
	end := time.Now().Add(2 * time.Second)
	for core.received.Load() < total && time.Now().Before(end) {
		time.Sleep(time.Millisecond)
	}
	c.Stop()
	waitDone(t, c, 2*time.Second)
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
				time.Sleep(5 * time.Millisecond)
				c.Stop()
			}
			waitDone(t, c, 2*time.Second)
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
			time.Sleep(20 * time.Millisecond)
			a.Close()
			waitDone(t, c, 2*time.Second)
			log.checkEnd(t, dataphase.EndFailure)
			if !errors.Is(core.failErr, net.ErrClosed) {
				t.Fatalf("Fail(%v)", core.failErr)
			}
		})
	}
}

// A steady turn (sends, reads, wait) allocates nothing.
func TestConnTurnAllocs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the fallback socket goes through net.UDPConn")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a, b := openPair(t, "127.0.0.1:0", SocketOptions{SockBuf: 4 << 20})
	core := newFakeCore(20*time.Microsecond, 0)
	events := 0
	c := newConn(a, core, func(dataphase.Event) { events++ }, nil)
	defer c.wk.Close()
	var sb dataphase.SendBuffer
	var rb dataphase.RecvBatch
	fillPlan(&sb, 1, 0, lens(5, 300)...)
	step := func() {
		if _, err := b.SendBatch(&sb); err != nil {
			t.Fatal(err)
		}
		if c.turn() {
			c.readable = true
		} else {
			c.waitTurn()
		}
		if err := b.RecvBatch(&rb, dataphase.MaxRecv); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		step()
	}
	allocs := race.AllocsPerRun(500, step)
	st := c.Stats()
	t.Logf("allocs per turn %v; core sent %d, received %d; stats %+v", allocs, core.sentOK, core.received.Load(), st)
	if allocs != 0 {
		t.Fatalf("a steady turn allocates %v times", allocs)
	}
	if core.sentOK == 0 || core.received.Load() == 0 || st.Wakeups == 0 {
		t.Fatal("the turns did not send, read and wait")
	}
}

// ENOBUFS on every send: the executor backs off instead of spinning.
func TestBackoffNoSpin(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs the injectable sendmmsg")
	}
	for _, r := range runners {
		t.Run(r.name, func(t *testing.T) {
			a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
			refuseAll(a)
			core := newFakeCore(10*time.Microsecond, 100*time.Millisecond)
			var log eventLog
			c := r.run(t, a, core, log.add)
			waitDone(t, c, 2*time.Second)
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
// waiting one does not.
func TestStalledThreads(t *testing.T) {
	a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
	block := make(chan struct{})
	core := &blockingCore{fakeCore: newFakeCore(time.Millisecond, 0), block: block}
	c := RunConn(a, core, nil, nil)
	time.Sleep(20 * time.Millisecond)
	if n := Stalled(5 * time.Millisecond); n != 0 {
		t.Errorf("%d threads stalled before the block", n)
	}
	core.blockNow.Store(true)
	time.Sleep(30 * time.Millisecond)
	if n := Stalled(10 * time.Millisecond); n != 1 {
		t.Errorf("Stalled = %d with one thread blocked inside a turn", n)
	}
	close(block)
	c.Stop()
	<-c.Done()
}

type blockingCore struct {
	*fakeCore
	block    chan struct{}
	blockNow atomic.Bool
}

func (b *blockingCore) Poll(now clock.Pair, buf *dataphase.SendBuffer) bool {
	if b.blockNow.Swap(false) {
		<-b.block
	}
	return b.fakeCore.Poll(now, buf)
}
