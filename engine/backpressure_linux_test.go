//go:build !portable

package engine

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/internal/testkit/await"
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
// POLLOUT on a writable socket turn after turn. Over a window after the
// EAGAIN the wake-ups stay of the order of the sends due in it (one per
// interval); a spin made hundreds to thousands in 50 ms. The bound is
// taken from the window as it really lasted, so a busy machine that
// stretches it only makes the bound looser, never the count larger.
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
				stop = func() { c.Stop(); waitDone(t, c); p.Close() }
			} else {
				c := RunConn(a, newFakeCore(interval, 0), nil, nil)
				wakeups = func() uint64 { return c.Stats().Wakeups }
				stop = func() { c.Stop(); waitDone(t, c) }
			}
			arm.Store(true)
			await.True(t, "the EAGAIN", func() bool { return !arm.Load() })
			w1, t1 := wakeups(), time.Now()
			time.Sleep(50 * time.Millisecond) // the window, not a synchronisation
			w2, t2 := wakeups(), time.Now()
			stop()
			after, due := w2-w1, uint64(t2.Sub(t1)/interval)
			t.Logf("pool=%v interval %v: %d wake-ups in %v after one EAGAIN, %d sends due", pooled, interval, after, t2.Sub(t1), due)
			if after > 3*due+20 {
				t.Errorf("pool=%v interval %v: %d wake-ups in %v after one EAGAIN, %d sends due", pooled, interval, after, t2.Sub(t1), due)
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
