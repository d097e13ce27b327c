//go:build !portable

package engine

import (
	"runtime/debug"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/uring"
	"golang.org/x/sys/unix"
)

// An Engine Thread's sends through io_uring (PoolOptions.Ring,
// experimental): the turn polls every due Test Connection into a send
// buffer of its own, queues each one's messages on the thread's ring and
// hands them all to the kernel in one io_uring_enter, where a sendmmsg per
// Test Connection costs a system call each (docs/performance.md measured
// the floor of both). Each core is told what the kernel took once the
// ring's completions are in. A message the kernel refused, and what
// follows it, goes through sendmmsg (batch_linux.go), whose send policy
// (sendpolicy.go) judges the errno, so the ring adds no policy of its own.

const (
	// ringEntries is the ring's submission queue. A flush is due once
	// less than a whole plan's messages fit.
	ringEntries = 1024
	// ringConns bounds a flush's Test Connections. A Load PDU is stamped
	// when its core is polled, and its datagram leaves once the kernel has
	// sent those queued before it in the flush: a flush of k Test
	// Connections stamps the later ones before the sends queued ahead of
	// them leave (the capacity check measured 27 to 43 µs older stamps at
	// the median with 8: docs/performance.md), while it saves k-1 of k
	// system calls. Each holds a dataphase.SendBuffer (about 43 kB) until
	// its completions are in.
	ringConns = 8
	// ringSendFlags: a full socket fails its send (EAGAIN) rather than
	// leave it to complete later, so every send ends inside the
	// io_uring_enter and no buffer is in the kernel's hands after a flush.
	ringSendFlags = unix.MSG_DONTWAIT
)

// ringSends is an Engine Thread's ring and the Test Connections of its
// flush in progress.
type ringSends struct {
	r     *uring.Ring
	bufs  []*dataphase.SendBuffer // made as a flush first needs them
	batch []ringEntry
}

// ringEntry is one Test Connection in a flush: its plan's messages queued
// on the ring, its socket's mu held shared until it is finished.
type ringEntry struct {
	c     *PoolConn
	fd    int
	begin clock.Time // when the send phase found it due
	nm    int        // messages queued
	ok    int        // messages the kernel took, in order
	err   unix.Errno // the first refusal (ECANCELED, what a refusal cancels, aside)
}

// newRingSends sets up a thread's ring; the error wraps
// uring.ErrUnavailable where the kernel refuses one. Any thread may
// submit: the Engine Thread leaves its OS thread at its yields.
func newRingSends() (*ringSends, error) {
	r, err := uring.New(ringEntries, uring.Options{})
	if err != nil {
		return nil, err
	}
	return &ringSends{r: r, batch: make([]ringEntry, 0, ringConns)}, nil
}

func (rs *ringSends) close() { _ = rs.r.Close() }

// ringTake queues c's sends of this turn on the ring, or serves c at once
// when its core has none due. It reports false, leaving c to serve, when
// c cannot go through the ring: a socket being closed or not connected,
// or one whose sends a test plays (sendFn).
func (t *poolThread) ringTake(c *PoolConn, now clock.Pair) bool {
	rs := t.ring
	s := c.sock
	x := &s.sys
	if c.closing || x.sendFn != nil || !s.peer.IsValid() {
		return false
	}
	if len(rs.batch) == cap(rs.batch) || rs.r.Space() < dataphase.MaxPlan {
		t.ringFlush()
		if t.ring == nil { // given up
			return false
		}
	}
	k := len(rs.batch)
	if k == len(rs.bufs) {
		rs.bufs = append(rs.bufs, new(dataphase.SendBuffer))
	}
	b := rs.bufs[k]
	x.mu.RLock()
	if x.fd < 0 {
		x.mu.RUnlock()
		return false
	}
	locked := true
	defer func() {
		if r := recover(); r != nil {
			if locked {
				x.mu.RUnlock()
			}
			t.retire(c, r, debug.Stack())
		}
	}()
	c.turns.Add(1)
	c.worked = false
	c.bp = bpNone
	x.lastBackpressure = 0
	if !c.core.Poll(now, b) {
		x.mu.RUnlock()
		locked = false
		t.finish(c, now.Mono, true)
		return true
	}
	nm := s.buildMessages(b, 0)
	for m := range nm {
		rs.r.PrepSendmsg(x.fd, &x.msgs[m].Hdr, ringSendFlags, uint64(k)<<16|uint64(m), m < nm-1)
	}
	rs.batch = append(rs.batch, ringEntry{c: c, fd: x.fd, begin: now.Mono, nm: nm})
	locked = false // the flush lets go of it
	// Out of the heap's way until the flush reschedules it.
	t.heap.set(c, clock.Never)
	return true
}

// ringFlush hands the queued sends to the kernel, reaps their
// completions and finishes each Test Connection of the flush.
func (t *poolThread) ringFlush() {
	rs := t.ring
	if rs == nil || len(rs.batch) == 0 {
		return
	}
	_, err := rs.r.Submit()
	rs.reap()
	for err == nil && rs.r.Inflight() > 0 {
		// Not expected with MSG_DONTWAIT; a send still in the kernel's
		// hands has its buffer, so it is waited for.
		err = rs.r.Wait(rs.r.Inflight())
		rs.reap()
	}
	if err != nil {
		// What the kernel did not take would go out with a later
		// submission, out of its turn: the ring is given up, and what it
		// did not send goes through sendmmsg below. A ring with sends
		// still in it keeps its buffers for good.
		t.log.Warn("engine: io_uring failed; sending without it", "err", err, "inflight", rs.r.Inflight())
		if rs.r.Inflight() == 0 {
			rs.close()
		} else {
			t.ringKept = rs
		}
		t.ring = nil
	}
	t.ringed.Add(uint64(len(rs.batch)))
	now := t.clk.now()
	for i := range rs.batch {
		e := &rs.batch[i]
		t.ringFinish(e, rs.bufs[i], now)
		*e = ringEntry{}
	}
	rs.batch = rs.batch[:0]
}

// reap takes the posted completions into their entries.
func (rs *ringSends) reap() {
	for {
		user, res, ok := rs.r.Next()
		if !ok {
			return
		}
		e := &rs.batch[user>>16]
		switch {
		case res >= 0:
			e.ok++ // linked: a chain's successes come first, in order
		case unix.Errno(-res) != unix.ECANCELED && e.err == 0:
			e.err = unix.Errno(-res)
		}
	}
}

// ringFinish tells e's core what the kernel took of its plan b, after
// sendmmsg sent what the ring did not, and then serves it as serve does
// after its first send: its further sends, its events, its next deadline.
func (t *poolThread) ringFinish(e *ringEntry, b *dataphase.SendBuffer, now clock.Pair) {
	c := e.c
	s := c.sock
	x := &s.sys
	sent := b.N
	if e.ok < e.nm {
		sent = x.runs[e.ok].start
	}
	gso := 0
	for _, r := range x.runs[:e.ok] {
		if r.segSize > 0 {
			gso++
		}
	}
	if e.ok > 0 {
		s.stats[CountSendCalls].Add(1)
		s.stats[CountSentDatagrams].Add(uint64(sent))
		if gso > 0 {
			s.stats[CountGSOMessages].Add(uint64(gso))
		}
	}
	var err error
	if sent < b.N {
		// What the ring did not send goes through sendmmsg, whose send
		// policy judges the refusal first (a retry after a path error, a
		// wait after backpressure, a re-plan after EMSGSIZE).
		sent, err = s.sendmmsg(b, e.fd, sent, e.err)
	}
	x.mu.RUnlock()
	defer func() {
		if r := recover(); r != nil {
			t.retire(c, r, debug.Stack())
		}
	}()
	if err != nil {
		c.fail(t.log, err)
	} else {
		c.core.Sent(sent)
		c.worked = true
		if sent < b.N {
			c.bp = backpressureOf(s)
		} else if now.Mono.Sub(t.clk.start.Mono) < sendBudget {
			c.sendPlans(&t.clk, &t.send, now, t.log)
		}
	}
	t.finish(c, e.begin, true)
}

// ringAbandon lets go of the sockets of a flush in progress when the
// thread dies (poolThread.die ends their Test Connections), so that their
// Close does not wait for ever.
func (t *poolThread) ringAbandon() {
	if t.ring == nil {
		return
	}
	for i := range t.ring.batch {
		t.ring.batch[i].c.sock.sys.mu.RUnlock()
	}
	t.ring.batch = t.ring.batch[:0]
}
