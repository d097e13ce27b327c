package engine

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"golang.org/x/sys/unix"
)

// eagainOnce makes a's next sendmmsg, once armed, fail with EAGAIN.
func eagainOnce(a *Socket) *atomic.Bool {
	var arm atomic.Bool
	a.sys.sendFn = func(fd int, msgs []unix.Mmsghdr) (int, unix.Errno) {
		if arm.CompareAndSwap(true, false) {
			return 0, unix.EAGAIN
		}
		return sendmmsg(fd, msgs)
	}
	return &arm
}

// acceptPartly makes each send call of s take only accept(n) of the n
// datagrams it offers and refuse the rest with EAGAIN, as a full send
// buffer does; the executor then defers them. s must be without GSO, so
// that a message is a datagram. Only the executor's goroutine sends.
func acceptPartly(_ *testing.T, s *Socket, accept func(n int) int) {
	refuse := false // the rest of a partly taken plan is refused
	s.sys.sendFn = func(fd int, msgs []unix.Mmsghdr) (int, unix.Errno) {
		if refuse {
			refuse = false
			return 0, unix.EAGAIN
		}
		k := min(accept(len(msgs)), len(msgs))
		if k <= 0 {
			return 0, unix.EAGAIN
		}
		refuse = k < len(msgs)
		return sendmmsg(fd, msgs[:k])
	}
}

// TestNoSpinAfterEAGAIN: one EAGAIN must not leave an executor asking for
// POLLOUT on a writable socket turn after turn. The wake-ups over 50 ms
// after it stay of the order of those before it (a spin made hundreds to
// thousands).
func TestNoSpinAfterEAGAIN(t *testing.T) {
	for _, interval := range []time.Duration{time.Millisecond, 10 * time.Millisecond} {
		for _, pooled := range []bool{false, true} {
			a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
			arm := eagainOnce(a)
			var wakeups func() uint64
			var stop func()
			if pooled {
				p := NewPool(PoolOptions{Threads: 1})
				c := p.Run(a, newFakeCore(interval, 0), nil)
				wakeups = func() uint64 { return p.Stats().Wakeups }
				stop = func() { c.Stop(); waitDone(t, c, 2*time.Second); p.Close() }
			} else {
				c := RunConn(a, newFakeCore(interval, 0), nil, nil)
				wakeups = func() uint64 { return c.Stats().Wakeups }
				stop = func() { c.Stop(); <-c.Done() }
			}
			time.Sleep(50 * time.Millisecond)
			w0 := wakeups()
			time.Sleep(50 * time.Millisecond)
			w1 := wakeups()
			arm.Store(true)
			time.Sleep(50 * time.Millisecond)
			w2 := wakeups()
			stop()
			before, after := w1-w0, w2-w1
			if after > 3*before+20 {
				t.Errorf("pool=%v interval %v: %d wake-ups in 50 ms after one EAGAIN, %d before", pooled, interval, after, before)
			}
		}
	}
}

// TestReadServeKeepsOverdueSend: after a send refused with ENOBUFS, a
// service of the pool that only reads must not push the connection's
// overdue send further back.
func TestReadServeKeepsOverdueSend(t *testing.T) {
	p := NewPool(PoolOptions{Threads: 1, HoldOff: -1})
	defer p.Close()
	th, err := newPoolThread(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := openPair(t, "127.0.0.1:0", SocketOptions{})
	core := newFakeCore(time.Millisecond, 0)
	c := newPoolConn(a, core, nil)
	c.th = th
	th.clk.read()
	th.add(c)
	th.serve(c, th.clk.now(), true)
	a.sys.lastBackpressure = unix.ENOBUFS // as if that send had been refused
	time.Sleep(2 * time.Millisecond)      // the core's next send is overdue now
	for i := 0; i < 5; i++ {
		b.Send([]byte("x"))
		time.Sleep(20 * time.Microsecond)
		th.clk.read()
		c.readable = true
		th.serve(c, clock.Pair{}, false)
		if now := th.clk.now().Mono; c.hn.key > now {
			t.Fatalf("read service %d pushed the overdue send %v into the future", i, c.hn.key.Sub(now))
		}
	}
}
