//go:build !portable

package engine

import (
	"runtime"
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/race"
	"golang.org/x/sys/unix"
)

// refuseAll makes every send of s fail with ENOBUFS.
func refuseAll(s *Socket) {
	s.sys.sendFn = func(int, []unix.Mmsghdr) (int, unix.Errno) { return 0, unix.ENOBUFS }
}

// timerSlack is the calling thread's timer slack in ns, -1 if unread.
func timerSlack() int {
	s, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		return -1
	}
	return s
}

// slackCore records the timer slack of the thread that runs it.
type slackCore struct {
	*fakeCore
	slack int
}

func (c *slackCore) Poll(now clock.Pair, b *dataphase.SendBuffer) bool {
	if c.slack == 0 {
		c.slack = timerSlack()
	}
	return c.fakeCore.Poll(now, b)
}

func TestTimerSlack(t *testing.T) {
	for _, r := range runners {
		t.Run(r.name, func(t *testing.T) {
			a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
			core := &slackCore{fakeCore: newFakeCore(time.Millisecond, 5*time.Millisecond)}
			c := r.run(t, a, core, nil)
			waitDone(t, c)
			if core.slack != 1 {
				t.Fatalf("Engine Thread timer slack %d ns, want 1", core.slack)
			}
			// The test's own thread keeps the default.
			if timerSlack() == 1 {
				t.Fatalf("timer slack leaked to another thread")
			}
		})
	}
}

// A steady turn (sends, reads) allocates nothing; TestConnWaitAllocs
// covers the wait. Linux's only: the fallback socket (socket_other.go, the
// portable build) goes through net.UDPConn, which allocates.
func TestConnTurnAllocs(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a, b := openPair(t, "127.0.0.1:0", SocketOptions{SockBuf: 4 << 20})
	core := newFakeCore(200*time.Microsecond, 0)
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
	if core.sentOK == 0 || core.received.Load() == 0 {
		t.Fatal("the turns did not send and read")
	}
}

// A turn that waits in ppoll allocates nothing either. The wait is forced
// rather than hoped for, as in TestPoolWaitAllocs (checkWaitAllocs).
// Hoping failed in CI: with a send every 20 µs and a step of about 80 µs
// there, every deadline was past and no wait slept.
func TestConnWaitAllocs(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a, b := openPair(t, "127.0.0.1:0", SocketOptions{SockBuf: 1 << 20})
	core := newFakeCore(0, 0)
	c := newConn(a, core, nil, nil)
	defer c.wk.Close()
	checkWaitAllocs(t, b, core, func() { c.waitTurn(); c.turn() }, func() uint64 { return c.Stats().Wakeups })
}
