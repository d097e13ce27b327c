package server

// Drain (docs/fleet.md): the first SIGTERM stops admitting (new
// Setup Requests get code 13, control/drain.go), turns /readyz to 503 and
// says STOPPING=1 with a STATUS= line, and lets the running tests finish
// with their stop handshake, for at most --drain-timeout; then the server
// stops. A second SIGTERM, or SIGINT, stops it at once (Config.Drain's
// sender cancels Serve's context), as does a SIGTERM with
// --drain-timeout 0.

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/sdnotify"
)

// readyPath is the readiness endpoint on the metrics listener
// (serve_metrics.go): what a Kubernetes readinessProbe or a load balancer
// asks; 503 once the drain began.
const readyPath = "/readyz"

// drainMargin is what the default --drain-timeout adds to the longest
// test the server grants (-t): the client's Setup and Test Activation
// (control.SetupTimeout), the stop handshake, and the shutdown grace that
// ends what is left (control.DefaultShutdownGrace), with room to spare.
const drainMargin = 10 * time.Second

// DefaultDrainTimeout is --drain-timeout's default for a server that
// grants tests of up to maxTestTime seconds (-t): just above the longest
// test it admits. The systemd unit's TimeoutStopSec= and the Kubernetes
// manifest's terminationGracePeriodSeconds hold the default -t's value
// (a test checks them).
func DefaultDrainTimeout(maxTestTime int) time.Duration {
	return time.Duration(maxTestTime)*time.Second + drainMargin
}

// drainWait is how long a drain waits for the running tests: the whole
// --drain-timeout bounds the stop, so the shutdown grace that ends the
// tests still running comes out of it.
func drainWait(timeout time.Duration) time.Duration {
	return max(0, timeout-control.DefaultShutdownGrace)
}

// drainStatusLine is the STATUS= text while draining.
func drainStatusLine(snap *control.ServerSnapshot, until time.Time) string {
	return fmt.Sprintf("draining: no new tests; %d running (%d down, %d up), waiting until %s at most; %d setups refused while draining",
		snap.Running, snap.RunningDown, snap.RunningUp, until.Format(time.TimeOnly),
		snap.Counts[control.CountSetupDraining])
}

// runDrain waits for the first of: drain (the first SIGTERM), then the
// server drained, its timeout or stop; stop (a hard stop); done (Serve
// returned). It ends Serve by calling stopServe, except on done.
func runDrain(drain <-chan struct{}, stop, done <-chan struct{}, timeout time.Duration, srv *control.Server,
	nt *sdnotify.Notifier, log *slog.Logger, stopServe context.CancelFunc) {
	select {
	case <-drain:
	case <-stop:
		return // Serve's own context ended: it stops by itself
	case <-done:
		return
	}
	snap := srv.Snapshot()
	if timeout <= 0 {
		log.Info("SIGTERM: stopping without a drain (drain timeout 0)", "running", snap.Running)
		stopServe()
		return
	}
	srv.Drain()
	wait := drainWait(timeout)
	until := time.Now().Add(wait)
	log.Info("draining: no new tests (setups refused with code 13), /readyz 503; running tests end normally",
		"running", snap.Running, "drain_timeout", timeout, "wait", wait)
	nt.Stop()
	nt.Send("STATUS=" + drainStatusLine(&snap, until))
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(statusPeriod)
	defer tick.Stop()
	for {
		select {
		case <-srv.Drained():
			log.Info("drained: no test left")
			stopServe()
			return
		case <-deadline.C:
			snap = srv.Snapshot()
			log.Warn("drain timeout: the tests still running are cut short", "running", snap.Running,
				"drain_timeout", timeout)
			stopServe()
			return
		case <-tick.C:
			snap = srv.Snapshot()
			nt.Send("STATUS=" + drainStatusLine(&snap, until))
		case <-stop:
			log.Warn("second signal: stopping now; running tests are cut short")
			return
		case <-done:
			return
		}
	}
}
