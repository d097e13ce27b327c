// Package sdnotify is the systemd side of udpstp's two daemons, the
// server and the agent (both Type=notify, contrib/systemd): sd_notify(3)
// messages (READY=1, RELOADING=1, STOPPING=1, STATUS=), the watchdog loop
// and the reload loop. It reads nothing from the environment: the command
// reads NOTIFY_SOCKET and the watchdog's settings once (Env) and passes
// them in, so a daemon can run twice in one process (its tests do).
// Without a socket every message costs nothing.
package sdnotify

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Env is what systemd told a daemon through its environment.
type Env struct {
	// Socket is NOTIFY_SOCKET: where messages go; "": nowhere.
	Socket string
	// Watchdog is the watchdog's interval (WatchdogSec=, WATCHDOG_USEC
	// for this process); 0: no watchdog.
	Watchdog time.Duration
	// WatchdogErr is the watchdog's settings that did not parse: the
	// daemon logs it with its own logger.
	WatchdogErr error
}

// Notifier sends sd_notify messages to a socket, when there is one.
type Notifier struct {
	socket   string
	log      *slog.Logger
	stopping sync.Once
	stopped  atomic.Bool
}

// New returns a Notifier that sends to socket ("": nowhere) and logs a
// message that did not go at debug level on log.
func New(socket string, log *slog.Logger) *Notifier {
	return &Notifier{socket: socket, log: log}
}

// On says whether messages go anywhere.
func (n *Notifier) On() bool { return n.socket != "" }

// Send sends one message (newline-separated assignments).
func (n *Notifier) Send(state string) {
	if n.socket == "" {
		return
	}
	if err := n.send(state); err != nil {
		n.log.Debug("sd_notify failed", "state", state, "err", err)
	}
}

// send writes state as one datagram, as go-systemd's daemon.SdNotify does
// (an address starting with @ is in the abstract namespace: package net
// reads it so).
func (n *Notifier) send(state string) error {
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: n.socket, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.Write([]byte(state))
	return err
}

// Ready says READY=1.
func (n *Notifier) Ready() { n.Send(daemon.SdNotifyReady) }

// Stop says STOPPING=1, once.
func (n *Notifier) Stop() {
	n.stopping.Do(func() {
		n.stopped.Store(true)
		n.Send(daemon.SdNotifyStopping)
	})
}

// Stopped says whether Stop was called: STOPPING=1 is the last word on
// the state, no STATUS= follows it.
func (n *Notifier) Stopped() bool { return n.stopped.Load() }

// Reloading and Reloaded frame a reload of the configuration
// (RELOADING=1 with the monotonic time systemd wants, then READY=1).
func (n *Notifier) Reloading() {
	n.Send(daemon.SdNotifyReloading + "\n" + daemon.SdNotifyMonotonicUsec())
}
func (n *Notifier) Reloaded() { n.Send(daemon.SdNotifyReady) }

// Watchdog is what the watchdog loop checks and says.
type Watchdog struct {
	Interval time.Duration // WatchdogSec=: a ping every half of it
	// Stalled reports how many of the daemon's workers are stuck; while
	// any is, no ping goes out (a watchdog fed by a goroutine of its own
	// would never notice a wedged daemon), and systemd restarts it.
	Stalled func() int
	// Wedged and Moving are called as the loop stops and starts feeding
	// the watchdog again (the daemon's log lines).
	Wedged func(n int)
	Moving func()
}

// RunWatchdog sends WATCHDOG=1 through send every half interval while
// w.Stalled reports nothing stuck, until ctx ends.
func RunWatchdog(ctx context.Context, w Watchdog, send func(string)) {
	t := time.NewTicker(w.Interval / 2)
	defer t.Stop()
	wedged := false
	for {
		if n := w.Stalled(); n > 0 {
			if !wedged && w.Wedged != nil {
				w.Wedged(n)
			}
			wedged = true
		} else {
			if wedged && w.Moving != nil {
				w.Moving()
			}
			wedged = false
			send(daemon.SdNotifyWatchdog)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RunReloads calls reload for each request on reloads (the daemon's
// SIGHUP, which the command turns into a request) until ctx ends.
func RunReloads(ctx context.Context, reloads <-chan struct{}, reload func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-reloads:
			reload()
		}
	}
}
