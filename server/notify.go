package server

// sd_notify(3) through internal/sdnotify: a server under systemd (Type=notify)
// says READY=1 once its control sockets are open and its executor runs,
// keeps a STATUS= line with its running tests and rates, says STOPPING=1
// when asked to stop, RELOADING=1 ... READY=1 around a reload of its key
// files (SIGHUP), and feeds the watchdog only while every Engine Thread
// makes progress. Outside systemd (no NOTIFY_SOCKET, Config.Systemd) all
// of it costs nothing.

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/engine"
	"github.com/udpstp/udpstp/internal/sdnotify"
)

// statusPeriod is how often the STATUS= line is refreshed.
const statusPeriod = 2 * time.Second

// watchdogLimit is how long an Engine Thread may stay inside one turn
// before it counts as wedged: a turn's sends are bounded to 1 ms and its
// reads to one batch per Test Connection, so a second is far beyond any
// healthy turn; with a short watchdog it is a quarter of its interval.
func watchdogLimit(interval time.Duration) time.Duration {
	return min(time.Second, interval/4)
}

// startWatchdog runs the watchdog if systemd asked for one (WatchdogSec=):
// WATCHDOG=1 every half interval while no Engine Thread is stuck inside
// one turn (sdnotify.RunWatchdog). A wedged data plane stops the pings,
// and systemd's WatchdogSec= then restarts the service.
func startWatchdog(ctx context.Context, wg *sync.WaitGroup, env sdnotify.Env, n *sdnotify.Notifier, log *slog.Logger) {
	if env.WatchdogErr != nil {
		log.Warn("systemd watchdog settings not understood; no watchdog pings", "err", env.WatchdogErr)
		return
	}
	interval := env.Watchdog
	if interval <= 0 || !n.On() {
		return
	}
	limit := watchdogLimit(interval)
	log.Info("systemd watchdog on", "interval", interval, "stall_limit", limit)
	wg.Add(1)
	go func() {
		defer wg.Done()
		sdnotify.RunWatchdog(ctx, engineWatchdog(interval, func() int { return engine.Stalled(limit) }, log), n.Send)
	}()
}

// engineWatchdog is the watchdog over the Engine Threads, with the
// server's log lines as it stops and starts feeding systemd.
func engineWatchdog(interval time.Duration, stalled func() int, log *slog.Logger) sdnotify.Watchdog {
	return sdnotify.Watchdog{
		Interval: interval,
		Stalled:  stalled,
		Wedged: func(n int) {
			log.Error("Engine Threads stuck inside one turn; the systemd watchdog is no longer fed", "threads", n,
				"limit", watchdogLimit(interval))
		},
		Moving: func() { log.Warn("Engine Threads make progress again; the systemd watchdog is fed again") },
	}
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
func runStatus(ctx context.Context, srv *control.Server, n *sdnotify.Notifier, period time.Duration) {
	prev := srv.Snapshot()
	last := time.Now()
	n.Send("STATUS=" + statusLine(&prev, nil, 0))
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if n.Stopped() {
				return // STOPPING=1 is the last word on the state
			}
			cur := srv.Snapshot()
			n.Send("STATUS=" + statusLine(&cur, &prev, now.Sub(last)))
			prev, last = cur, now
		}
	}
}
