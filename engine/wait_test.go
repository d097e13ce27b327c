package engine

import (
	"net/netip"
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/await"
)

// A wait may end early when a signal interrupts it (EINTR: the runtime
// signals its threads, the race detector more often); the executor just
// waits again. So the tests wait as it does, until their deadline, and
// count the returns: an interruption or two is the runtime's, a wait that
// keeps returning at once is a spin.
const maxEarlyReturns = 100

// waitQuiet waits on fds and wk until deadline, as the executor does, and
// fails t if any wait reports readiness or the waits spin; it returns how
// many waits it took.
func waitQuiet(t *testing.T, fds []waitFD, wk *Waker, deadline clock.Time) int {
	t.Helper()
	n := 0
	for now := clock.Mono(); now < deadline; now = clock.Mono() {
		if err := wait(fds, wk, deadline, now); err != nil {
			t.Fatal(err)
		}
		n++
		if f := fds[0]; f.in || f.errored || f.closed {
			t.Fatalf("readiness %+v with nothing to read", f)
		}
		if n > maxEarlyReturns {
			t.Fatalf("%d waits returned before a %v deadline: a spin", n, deadline.Sub(now))
		}
	}
	return n
}

func TestWaitDeadline(t *testing.T) {
	s := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
	fds := []waitFD{{sock: s}}
	now := clock.Mono()
	n := waitQuiet(t, fds, nil, now.Add(20*time.Millisecond))
	// How late after the deadline is the machine's.
	if el := clock.Mono().Sub(now); el > await.Deadline {
		t.Fatalf("waited %v for 20 ms", el)
	}
	t.Logf("%d waits for 20 ms", n)
}

func TestWaitReadable(t *testing.T) {
	a, b := openPair(t, "127.0.0.1:0", SocketOptions{})
	var sb dataphase.SendBuffer
	fillPlan(&sb, 1, 0, 100)
	go func() {
		time.Sleep(10 * time.Millisecond)
		a.SendBatch(&sb)
	}()
	fds := []waitFD{{sock: b}}
	for n := 0; !fds[0].in; n++ {
		if n > maxEarlyReturns {
			t.Fatalf("%d waits without the datagram", n)
		}
		if err := wait(fds, nil, clock.Mono().Add(await.Deadline), clock.Mono()); err != nil {
			t.Fatal(err)
		}
	}
	var rb dataphase.RecvBatch
	if err := b.RecvBatch(&rb, 10); err != nil || rb.N != 1 {
		t.Fatalf("read %d, %v", rb.N, err)
	}
}

func TestWaker(t *testing.T) {
	s := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
	wk, err := NewWaker()
	if err != nil {
		t.Fatal(err)
	}
	defer wk.Close()
	fds := []waitFD{{sock: s}}

	// A wake while waiting: the wait's own deadline is far off, so an end
	// before it, once the wake is due, is the wake's (a wait that missed
	// it would end only at the deadline, and the test fails saying so).
	far := await.Deadline
	start := time.Now() // before the goroutine: its sleep starts later
	go func() {
		time.Sleep(20 * time.Millisecond)
		wk.Wake()
	}()
	for n := 0; time.Since(start) < 20*time.Millisecond; n++ { // waits a signal ended early
		if n > maxEarlyReturns {
			t.Fatalf("%d waits returned before the wake: a spin", n)
		}
		if err := wait(fds, wk, clock.Mono().Add(far), clock.Mono()); err != nil {
			t.Fatal(err)
		}
	}
	if el := time.Since(start); el >= far {
		t.Fatalf("woken after %v", el)
	}

	// A wake before the wait ends it at once, and only that one: the waits
	// after it last until their deadline (a wake left pending would end
	// every one at once).
	wk.Wake()
	wk.Wake()
	start = time.Now()
	if err := wait(fds, wk, clock.Mono().Add(far), clock.Mono()); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el >= far {
		t.Fatalf("pending wake not seen: the wait ran to its %v deadline", el)
	}
	waitQuiet(t, fds, wk, clock.Mono().Add(20*time.Millisecond))

	// Waking a closed Waker is harmless.
	wk.Close()
	wk.Wake()
}
