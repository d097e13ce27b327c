package engine

// The receive hold-off of an Engine Thread of the pool (see pool.go): pure
// arithmetic over the thread's recent reads and turns, kept apart from the
// Linux plumbing so that it is tested on every platform.

import (
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
)

// holdWindow is the period over which the hold-off's inputs (arrival
// rates, receive buffer times, turn lengths) are kept: the current window
// and the one before.
const holdWindow = 100 * time.Millisecond

// holdOff is an Engine Thread's receive hold-off state (see pool.go).
type holdOff struct {
	max   clock.Time // the bound; 0: off
	until clock.Time // arrivals do not end a wait before this

	winStart clock.Time
	cur      holdWin
	prev     holdWin
}

// holdWin is one window of the hold-off's inputs.
type holdWin struct {
	dgrams  int64      // datagrams read
	capMin  clock.Time // least quarter of a socket's receive buffer time; 0: none seen
	turnMax clock.Time // longest turn
}

// roll starts a new window when the current one is over.
func (h *holdOff) roll(now clock.Time) {
	if now-h.winStart < clock.Time(holdWindow) {
		return
	}
	if now-h.winStart < 2*clock.Time(holdWindow) {
		h.prev = h.cur
	} else {
		h.prev = holdWin{} // a quiet window in between
	}
	h.cur = holdWin{}
	h.winStart = now
}

// holdSock is what the hold-off keeps of one socket.
type holdSock struct {
	rcvPayload int64      // the payload its receive buffer holds
	lastRead   clock.Time // when a read last returned datagrams
}

// noteRead records a read of c's socket: the quarter of the time its
// receive buffer holds at the rate the datagrams came in since its last
// read.
func (h *holdOff) noteRead(c *holdSock, b *dataphase.RecvBatch) {
	now := b.Pair.Mono
	last := c.lastRead
	c.lastRead = now
	if h.max == 0 || last == 0 || now <= last || c.rcvPayload <= 0 {
		return
	}
	var bytes int64
	for i := 0; i < b.N; i++ {
		bytes += int64(b.Dgrams[i].Len)
	}
	if bytes <= 0 {
		return
	}
	// buffer time = rcvPayload / (bytes / dt); a quarter of it.
	q := clock.Time(float64(c.rcvPayload) * float64(now-last) / float64(bytes) / 4)
	h.roll(now)
	if h.cur.capMin == 0 || q < h.cur.capMin {
		h.cur.capMin = max(q, 1)
	}
}

// turnEnded records a turn's length.
func (h *holdOff) turnEnded(now, start clock.Time) {
	if h.max == 0 {
		return
	}
	h.roll(now)
	h.cur.turnMax = max(h.cur.turnMax, now-start)
}

// afterRead sets the hold-off after a turn that read n datagrams.
func (h *holdOff) afterRead(now clock.Time, n int, start clock.Time) {
	if h.max == 0 {
		return
	}
	h.turnEnded(now, start)
	h.cur.dgrams += int64(n)
	d := h.length(now)
	if d > 0 {
		h.until = now + d
	}
}

// readDefer is how long reads may wait, counted from when the epoll set
// was last known idle, for a turn that is due anyway: datagrams that
// arrive meanwhile are read then, so they cost no wake-up of their own.
// Their receive times come from the kernel's timestamps, and what they
// carry (Status PDUs, mostly) is acted on at most this much later;
// OB-UDPST's own loop runs on a 100 us tick and reads only then.
const readDefer = clock.Time(time.Millisecond)

// canDefer reports whether reads of datagrams that arrived since since
// (when the epoll set was last known idle) may wait until at: at is within
// readDefer of since, the hold-off is on, and no recently read socket's
// receive buffer would fill first (a quarter of its buffer time, less the
// longest recent turn, as for the hold-off's length).
func (h *holdOff) canDefer(since, at clock.Time) bool {
	d := at - since
	if h.max == 0 || d <= 0 || d > readDefer {
		return false
	}
	for _, w := range [2]*holdWin{&h.cur, &h.prev} {
		if w.capMin > 0 && d > w.capMin-max(h.cur.turnMax, h.prev.turnMax) {
			return false
		}
	}
	return true
}

// length is the hold-off to apply now: at most max, less than every
// recently read socket's quarter buffer time minus the longest recent
// turn, and none unless more than one datagram is expected within it.
func (h *holdOff) length(now clock.Time) clock.Time {
	d := h.max
	for _, w := range [2]*holdWin{&h.cur, &h.prev} {
		if w.capMin > 0 {
			d = min(d, w.capMin-max(h.cur.turnMax, h.prev.turnMax))
		}
	}
	if d <= 0 || h.expected(now, d) <= 1 {
		return 0
	}
	return d
}

// expected is how many datagrams the thread expects to read within d of
// now, at its arrival rate over the windows kept.
func (h *holdOff) expected(now, d clock.Time) float64 {
	span := now - h.winStart
	n := h.cur.dgrams
	if h.prev.dgrams > 0 {
		span += clock.Time(holdWindow)
		n += h.prev.dgrams
	}
	if span <= 0 {
		return 0
	}
	return float64(n) * float64(d) / float64(span)
}

// quietWait is the share of waits that an arrival may end early below
// which a wait takes the epoll fd rather than leave it out and collect
// after: an early wake-up costs tens of µs on a VM, an epoll_wait one or
// two, so a wait that one arrival in twenty would end costs about as much
// as the epoll_wait it saves.
const quietWait = 0.05

// quiet reports whether a wait of d from now is unlikely to see an
// arrival (expected below quietWait).
func (h *holdOff) quiet(now, d clock.Time) bool {
	return h.expected(now, d) < quietWait
}
