package engine

import (
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/udpstp/udpstp/clock"
)

// yieldEvery is how often an Engine Thread passes through the Go
// scheduler (runtime.Gosched). A goroutine that never does looks to the
// runtime's sysmon like one running for ever: after 10 ms (forcePreemptNS)
// sysmon preempts it and retakes its P at every cycle in which the thread
// sits in a system call, so each wait costs a P hand-off, a spinning M's
// wake-up and, once every P is idle, a wake-up of sysmon itself from its
// deep sleep by the thread's next system call: measured here, two to three
// extra wake-ups in the process per wait of the Engine Thread. Every 5 ms
// is 200 yields a second.
const yieldEvery = 5 * time.Millisecond

// yielder passes an Engine Thread through the scheduler every yieldEvery
// (see there): it holds when the thread last did.
//
// A goroutine locked to its thread that yields costs two thread switches
// and four futex calls: the thread hands its P to another, sleeps, and is
// woken when that one finds the goroutine runnable again. Unlocked for the
// yield, the thread does not sleep waiting for it: it takes the goroutine
// back from the run queue itself, or the thread the yield woke for the
// spare P does (docs/performance.md measured both). That costs two prctl
// calls: the thread's timer slack goes back to its default first, so that
// no other goroutine runs with the 1 ns slack on it, and is set again on
// whichever thread the goroutine comes back on.
type yielder clock.Time

// afterTurn yields if yieldEvery passed since the last yield; now is the
// clock of the turn just run (turnClock.start), so it reads no clock.
func (y *yielder) afterTurn(now clock.Time) {
	if now-clock.Time(*y) >= clock.Time(yieldEvery) {
		*y = yielder(now)
		yieldThread()
	}
}

// yieldThread passes the calling Engine Thread through the scheduler once
// (see yielder).
func yieldThread() {
	// Both succeeded when the thread became an Engine Thread; a kernel
	// that took them then takes them now.
	_ = SetTimerSlack(0)
	runtime.UnlockOSThread()
	runtime.Gosched()
	runtime.LockOSThread()
	_ = SetTimerSlack(1)
}

// becomeEngineThread makes the calling goroutine an Engine Thread, of a
// Conn or of the pool: locked to its OS thread but for its yields (a
// goroutine that exits while locked takes its OS thread with it, and with
// the thread its timer slack, so no other goroutine ever runs with the
// 1 ns slack), timer slack 1 ns, and a Progress for the watchdog, which
// the caller unregisters when the thread ends.
func becomeEngineThread(log *slog.Logger) *Progress {
	runtime.LockOSThread()
	if err := SetTimerSlack(1); err != nil {
		log.Warn("engine: timer slack stays at its default; waits end up to 50 µs late", "err", err)
	}
	return registerProgress()
}

// run is the Engine Thread of one Conn.
func (c *Conn) run() {
	c.progress = becomeEngineThread(c.log)
	defer close(c.done)
	defer func() {
		if c.wk != nil {
			c.wk.Close()
		}
	}()
	defer c.progress.unregister()
	c.loop()
	if !c.endDelivered {
		// Done without an EvEnd is a core bug; whoever waits for the end
		// (Admission) must still hear of it.
		c.log.Error("engine: core ended without EvEnd", "local", c.sock.LocalAddr(), "peer", c.sock.Peer())
		c.ensureEnd()
	}
}

// loop runs turns until the core is done. A panic in the core, the socket
// code or onEvent retires this Test Connection only.
func (c *Conn) loop() {
	defer func() {
		if r := recover(); r != nil {
			c.retire(r, debug.Stack())
		}
	}()
	var y yielder
	for !c.core.Done() && !c.failed {
		again := c.turn()
		y.afterTurn(c.clk.start.Mono)
		if c.core.Done() || c.failed {
			return
		}
		if again {
			c.readable = true // a turn that does not wait reads anyway
			continue
		}
		c.progress.idle()
		c.waitTurn()
	}
}

// retire ends the core after a panic: Fail with the panic as the error,
// its events delivered, an EvEnd made up if that panics too.
func (c *Conn) retire(r any, stack []byte) {
	c.log.Error("engine: Test Connection retired after a panic",
		"local", c.sock.LocalAddr(), "peer", c.sock.Peer(), "panic", fmt.Sprint(r), "stack", string(stack))
	c.abandon(fmt.Errorf("engine: panic: %v", r))
}
