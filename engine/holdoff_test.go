package engine

import (
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
)

// The hold-off's arithmetic: none until more than one datagram is
// expected within it, at most the bound, and less than a quarter of a
// socket's buffer time minus the longest recent turn.
func TestHoldOffLength(t *testing.T) {
	us := func(n int) clock.Time { return clock.Time(time.Duration(n) * time.Microsecond) }
	h := holdOff{max: us(250)}
	t0 := clock.Time(time.Second)
	h.roll(t0)
	// 2 datagrams in 10 ms: 0.05 expected in 250 µs.
	h.cur.dgrams = 2
	if d := h.length(t0 + us(10000)); d != 0 {
		t.Errorf("sparse arrivals: hold-off %v", d)
	}
	// 1,000 datagrams in 10 ms: 25 expected.
	h.cur.dgrams = 1000
	if d := h.length(t0 + us(10000)); d != us(250) {
		t.Errorf("dense arrivals: hold-off %v, want 250µs", d)
	}
	// A socket whose buffer holds 400 µs at its rate: a quarter is 100 µs;
	// a recent turn of 30 µs leaves 70 µs.
	h.cur.capMin, h.cur.turnMax = us(100), us(30)
	if d := h.length(t0 + us(10000)); d != us(70) {
		t.Errorf("capped: hold-off %v, want 70µs", d)
	}
	// The previous window counts too.
	h.roll(t0 + us(100000))
	h.cur.dgrams = 1000
	if h.prev.capMin != us(100) || h.cur.capMin != 0 {
		t.Fatalf("windows %+v %+v", h.prev, h.cur)
	}
	if d := h.length(t0 + us(110000)); d != us(70) {
		t.Errorf("previous window: hold-off %v, want 70µs", d)
	}
	// A turn longer than the buffer allows: none.
	h.cur.turnMax = us(200)
	if d := h.length(t0 + us(110000)); d != 0 {
		t.Errorf("long turn: hold-off %v", d)
	}
	// Off.
	off := holdOff{}
	off.afterRead(t0, 1000, t0)
	if off.until != 0 {
		t.Error("a hold-off with the bound 0")
	}

	// noteRead: 10 datagrams of 1,000 bytes in 100 µs into a 1 MB buffer:
	// 10 ms of buffer, a quarter is 2.5 ms.
	var rb dataphase.RecvBatch
	rb.N = 10
	for i := range 10 {
		rb.Dgrams[i].Len = 1000
	}
	c := &holdSock{rcvPayload: 1_000_000, lastRead: t0}
	h2 := holdOff{max: us(250)}
	rb.Pair.Mono = t0 + us(100)
	h2.noteRead(c, &rb)
	if h2.cur.capMin != us(2500) || c.lastRead != t0+us(100) {
		t.Errorf("capMin %v, lastRead %v", h2.cur.capMin, c.lastRead)
	}
}

// noteRead learns nothing from a socket's first read (no interval yet),
// from a hold-off that is off, or from a read at the same instant; the
// least quarter of the window is kept, and afterRead sets the hold-off
// from it.
func TestHoldOffNoteRead(t *testing.T) {
	us := func(n int) clock.Time { return clock.Time(time.Duration(n) * time.Microsecond) }
	t0 := clock.Time(time.Second)
	batch := func(at clock.Time, n, size int) *dataphase.RecvBatch {
		var rb dataphase.RecvBatch
		rb.N, rb.Pair.Mono = n, at
		for i := range n {
			rb.Dgrams[i].Len = size
		}
		return &rb
	}
	h := holdOff{max: us(250)}
	a := &holdSock{rcvPayload: 1_000_000}
	h.noteRead(a, batch(t0, 10, 1000)) // first read: only its time is kept
	if h.cur.capMin != 0 || a.lastRead != t0 {
		t.Fatalf("first read: capMin %v, lastRead %v", h.cur.capMin, a.lastRead)
	}
	h.noteRead(a, batch(t0, 10, 1000)) // same instant
	if h.cur.capMin != 0 {
		t.Fatalf("read at the same instant: capMin %v", h.cur.capMin)
	}
	// 10 kB in 100 µs into 1 MB: 10 ms of buffer, a quarter 2.5 ms; a
	// second socket at ten times the rate: 250 µs. The least is kept.
	h.noteRead(a, batch(t0+us(100), 10, 1000))
	b := &holdSock{rcvPayload: 1_000_000, lastRead: t0}
	h.noteRead(b, batch(t0+us(100), 100, 1000))
	if h.cur.capMin != us(250) {
		t.Errorf("capMin %v, want 250µs", h.cur.capMin)
	}
	// A turn of 50 µs that read 1,000 datagrams: dense enough, and the
	// quarter buffer time minus the turn (200 µs) bounds the hold-off.
	h.afterRead(t0+us(10000), 1000, t0+us(9950))
	if h.until != t0+us(10000)+us(200) {
		t.Errorf("hold-off until %v, want %v", h.until, t0+us(10200))
	}
	off := holdOff{}
	c := &holdSock{rcvPayload: 1_000_000, lastRead: t0}
	off.noteRead(c, batch(t0+us(100), 10, 1000))
	if off.cur.capMin != 0 || c.lastRead != t0+us(100) {
		t.Errorf("hold-off off: capMin %v, lastRead %v", off.cur.capMin, c.lastRead)
	}
	// A quiet window in between forgets the previous one.
	h.roll(t0 + us(10000) + 3*clock.Time(holdWindow))
	if h.prev != (holdWin{}) || h.cur != (holdWin{}) {
		t.Errorf("after a quiet window: %+v %+v", h.prev, h.cur)
	}
}

// TestCanDefer: reads may wait for a turn due within readDefer, unless a
// recently read socket's buffer would fill first, or the hold-off is off.
func TestCanDefer(t *testing.T) {
	us := clock.Time(time.Microsecond)
	h := holdOff{max: 250 * us}
	if !h.canDefer(0, 900*us) {
		t.Error("a turn 900 us away, no reads seen: not deferred")
	}
	if h.canDefer(0, 2*readDefer) || h.canDefer(0, 0) {
		t.Error("deferred to a turn beyond readDefer, or to now")
	}
	h.cur.capMin = 500 * us
	h.cur.turnMax = 100 * us
	if h.canDefer(0, 500*us) || !h.canDefer(0, 300*us) {
		t.Error("the buffer bound (500 us less a 100 us turn) not applied")
	}
	off := holdOff{}
	if off.canDefer(0, 100*us) {
		t.Error("deferred with the hold-off off")
	}
}

// quiet: a wait takes the epoll fd when fewer than quietWait arrivals are
// expected within it at the thread's recent read rate: Status PDUs of one
// Test Connection (20 a second) over 1 ms are, those of 80 (1,600 a
// second) over 275 µs are not.
func TestHoldOffQuiet(t *testing.T) {
	us := func(n int) clock.Time { return clock.Time(time.Duration(n) * time.Microsecond) }
	h := holdOff{max: us(250)}
	t0 := clock.Time(time.Second)
	h.roll(t0)
	if !h.quiet(t0, us(1000)) {
		t.Error("nothing read yet: not quiet")
	}
	// 2 datagrams in the last 100 ms: 0.02 expected in 1 ms.
	h.cur.dgrams = 2
	if !h.quiet(t0+us(100000), us(1000)) {
		t.Error("20 a second over 1 ms: not quiet")
	}
	// 160 in 100 ms: 0.44 expected in 275 µs.
	h.cur.dgrams = 160
	if h.quiet(t0+us(100000), us(275)) {
		t.Error("1,600 a second over 275 µs: quiet")
	}
	// The previous window counts too: 160 in it, none yet in this one,
	// 10 ms into it: 160 in 110 ms, 0.4 expected in 275 µs.
	h.roll(t0 + us(100000))
	if h.quiet(t0+us(110000), us(275)) {
		t.Error("previous window's arrivals forgotten")
	}
}
