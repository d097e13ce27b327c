package server

// sd_notify(3) through go-systemd: a server under systemd (Type=notify)
// says READY=1 once its control sockets are open and its executor runs,
// keeps a STATUS= line with its running tests and rates, says STOPPING=1
// when asked to stop, RELOADING=1 ... READY=1 around a reload of its key
// files (SIGHUP), and feeds the watchdog only while every Engine Thread
// makes progress. Outside systemd (no NOTIFY_SOCKET) all of it costs
// nothing.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/engine"
)

// statusPeriod is how often the STATUS= line is refreshed.
const statusPeriod = 2 * time.Second

// notifier sends sd_notify messages when systemd asked for them.
type notifier struct {
	on       bool
	log      *slog.Logger
	stopping sync.Once
	stopped  atomic.Bool
}

func newNotifier(log *slog.Logger) *notifier {
	return &notifier{on: os.Getenv("NOTIFY_SOCKET") != "", log: log}
}

// send sends one message (newline-separated assignments).
func (n *notifier) send(state string) {
	if !n.on {
		return
	}
	if _, err := daemon.SdNotify(false, state); err != nil {
		n.log.Debug("sd_notify failed", "state", state, "err", err)
	}
}

// stop says STOPPING=1, once.
func (n *notifier) stop() {
	n.stopping.Do(func() {
		n.stopped.Store(true)
		n.send(daemon.SdNotifyStopping)
	})
}

// reloading and reloaded frame a reload of the configuration.
func (n *notifier) reloading() {
	n.send(daemon.SdNotifyReloading + "\n" + daemon.SdNotifyMonotonicUsec())
}
func (n *notifier) reloaded() { n.send(daemon.SdNotifyReady) }

// watchdogLimit is how long an Engine Thread may stay inside one turn
// before it counts as wedged: a turn's sends are bounded to 1 ms and its
// reads to one batch per Test Connection, so a second is far beyond any
// healthy turn; with a short watchdog it is a quarter of its interval.
func watchdogLimit(interval time.Duration) time.Duration {
	return min(time.Second, interval/4)
}

// runWatchdog sends WATCHDOG=1 every half interval while stalled()
// reports no wedged Engine Thread, until ctx ends. A wedged data plane
// stops the pings, and systemd's WatchdogSec= then restarts the service:
// a watchdog fed by a goroutine of its own would never notice.
func runWatchdog(ctx context.Context, interval time.Duration, stalled func() int, send func(string), log *slog.Logger) {
	t := time.NewTicker(interval / 2)
	defer t.Stop()
	wedged := false
	for {
		if n := stalled(); n > 0 {
			if !wedged {
				log.Error("Engine Threads stuck inside one turn; the systemd watchdog is no longer fed", "threads", n,
					"limit", watchdogLimit(interval))
			}
			wedged = true
		} else {
			if wedged {
				log.Warn("Engine Threads make progress again; the systemd watchdog is fed again")
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

// startWatchdog runs the watchdog if systemd asked for one (WatchdogSec=).
func startWatchdog(ctx context.Context, wg *sync.WaitGroup, n *notifier, log *slog.Logger) {
	interval, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		log.Warn("systemd watchdog settings not understood; no watchdog pings", "err", err)
		return
	}
	if interval <= 0 || !n.on {
		return
	}
	limit := watchdogLimit(interval)
	log.Info("systemd watchdog on", "interval", interval, "stall_limit", limit)
	wg.Add(1)
	go func() {
		defer wg.Done()
		runWatchdog(ctx, interval, func() int { return engine.Stalled(limit) }, n.send, log)
	}()
}

// statusLine is the STATUS= text: the tests running, the rates the
// receiving ends reported over the last period, and the totals.
func statusLine(cur, prev *control.ServerSnapshot, d time.Duration) string {
	var txMbps, rxMbps float64
	if s := d.Seconds(); s > 0 && prev != nil {
		tx, rx := dataphase.CountTxIPBytes, dataphase.CountRxIPBytes
		txMbps = float64(cur.Data[tx]-prev.Data[tx]) * 8 / 1e6 / s
		rxMbps = float64(cur.Data[rx]-prev.Data[rx]) * 8 / 1e6 / s
	}
	return fmt.Sprintf("running tests: %d (%d down, %d up); sending %.1f Mbps, receiving %.1f Mbps; "+
		"setups: %d accepted, %d refused, %d dropped over the per-source rate",
		cur.Running, cur.RunningDown, cur.RunningUp, txMbps, rxMbps,
		cur.Counts[control.CountSetupAccepted], cur.RejectedTotal(), cur.Counts[control.CountSetupRateLimited])
}

// runStatus refreshes STATUS= every period until ctx ends.
func runStatus(ctx context.Context, srv *control.Server, n *notifier, period time.Duration) {
	prev := srv.Snapshot()
	last := time.Now()
	n.send("STATUS=" + statusLine(&prev, nil, 0))
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if n.stopped.Load() {
				return // STOPPING=1 is the last word on the state
			}
			cur := srv.Snapshot()
			n.send("STATUS=" + statusLine(&cur, &prev, now.Sub(last)))
			prev, last = cur, now
		}
	}
}
