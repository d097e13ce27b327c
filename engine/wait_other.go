//go:build !linux || portable

package engine

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/udpstp/udpstp/clock"
)

// SetTimerSlack does nothing off Linux.
func SetTimerSlack(ns int) error { return nil }

// Waker ends an executor's wait from another goroutine. Off Linux the wait
// blocks in a socket read with a read deadline (or on a timer), so Wake
// moves that deadline into the past.
type Waker struct {
	pending atomic.Bool
	ch      chan struct{} // ends a wait without a socket

	mu   sync.Mutex
	sock *Socket // the socket a wait is blocked reading, if any
}

// NewWaker returns a Waker.
func NewWaker() (*Waker, error) { return &Waker{ch: make(chan struct{}, 1)}, nil }

// aLongTimeAgo is a read deadline that has passed.
var aLongTimeAgo = time.Unix(1, 0)

// Wake ends the current or next wait. It is safe from any goroutine.
func (w *Waker) Wake() {
	w.pending.Store(true)
	select {
	case w.ch <- struct{}{}:
	default:
	}
	w.mu.Lock()
	if s := w.sock; s != nil {
		_ = s.sys.conn.SetReadDeadline(aLongTimeAgo)
	}
	w.mu.Unlock()
}

// Close releases the Waker (nothing to release off Linux).
func (w *Waker) Close() error { return nil }

func (w *Waker) watch(s *Socket) {
	w.mu.Lock()
	w.sock = s
	w.mu.Unlock()
}

func (w *Waker) consume() bool {
	if !w.pending.Swap(false) {
		return false
	}
	select {
	case <-w.ch:
	default:
	}
	return true
}

// wait blocks until the socket of fds[0] (at most one off Linux) has a
// datagram, wk is woken, or deadline passes on the Test Time Base. It reads
// the datagram ahead into the socket for the next RecvBatch, since the
// portable API has no readiness wait. Precision: the timeout is a read
// deadline (or a time.Timer without a socket), which Go's runtime timers end
// about 1 ms late on Windows and Linux (golang/go#44343) and somewhat better
// on macOS; pacing below a millisecond is not possible here.
func wait(fds []waitFD, wk *Waker, deadline, now clock.Time) error {
	if err := checkWaitFDs(fds); err != nil {
		return err
	}
	for i := range fds {
		fds[i].reset()
	}
	if wk != nil && wk.consume() {
		return nil
	}
	d := time.Duration(-1)
	if deadline != clock.Never {
		d = max(0, deadline.Sub(now))
	}
	if len(fds) == 0 {
		if d < 0 {
			if wk != nil {
				<-wk.ch
				wk.consume()
			}
			return nil
		}
		t := time.NewTimer(d)
		defer t.Stop()
		if wk == nil {
			<-t.C
			return nil
		}
		select {
		case <-t.C:
		case <-wk.ch:
			wk.consume()
		}
		return nil
	}
	f := &fds[0]
	s := f.sock
	x := &s.sys
	if s.closed.Load() {
		f.closed = true
		return nil
	}
	if x.stashed || x.readErr != nil {
		f.in = true
		return nil
	}
	if d == 0 {
		return nil
	}
	var dl time.Time
	if d > 0 {
		dl = time.Now().Add(d)
	}
	if err := x.conn.SetReadDeadline(dl); err != nil {
		f.closed = errors.Is(err, net.ErrClosed)
		return nil
	}
	if wk != nil {
		wk.watch(s)
		defer wk.watch(nil)
		// A Wake before watch set the deadline may have been overwritten
		// by it; it set pending first, so look.
		if wk.consume() {
			return nil
		}
	}
	for {
		n, from, err := x.conn.ReadFromUDPAddrPort(x.stash)
		if err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
			case errors.Is(err, net.ErrClosed):
				f.closed = true
			default:
				x.readErr = fmt.Errorf("recv on %v: %w", s.laddr, err)
				f.in = true
			}
			break
		}
		if !x.filter.accepts(from) {
			continue // emulated connect: not from the peer
		}
		x.stashPair = clock.Now()
		x.stashLen, x.stashed = n, true
		f.in = true
		break
	}
	if wk != nil {
		wk.consume()
	}
	_ = x.conn.SetReadDeadline(time.Time{})
	return nil
}
