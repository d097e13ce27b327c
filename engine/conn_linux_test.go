//go:build !portable

package engine

import (
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
	"golang.org/x/sys/unix"
)

// refuseAll makes every send of s fail with ENOBUFS.
func refuseAll(s *Socket) {
	s.sys.sendFn = func(int, []unix.Mmsghdr) (int, unix.Errno) { return 0, unix.ENOBUFS }
}

// slackCore records the timer slack of the thread that runs it.
type slackCore struct {
	*fakeCore
	slack int
}

func (c *slackCore) Poll(now clock.Pair, b *dataphase.SendBuffer) bool {
	if c.slack == 0 {
		c.slack, _ = unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
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
			if s, _ := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0); s == 1 {
				t.Fatalf("timer slack leaked to another thread")
			}
		})
	}
}
