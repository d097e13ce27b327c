package main

// The seam between the command lines and the work: the Actions of
// `udpstp server` and `udpstp client` build a control config and hand it
// to the runners the app was built with (newAppWith): serve and runTest,
// or a test's recorders.

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/udpstp/udpstp/client"
	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/buildinfo"
	"github.com/udpstp/udpstp/internal/enginenet"
	"github.com/udpstp/udpstp/server"
)

// localOptions are settings of this process that control's configs do not
// carry (yet). Fields move into control.ServerConfig/ClientConfig when the
// code that uses them lives there.
type localOptions struct {
	NoGSO    bool           // --no-gso: send without UDP_SEGMENT
	Service  server.Options // the server's service options (service_flags.go)
	Stream   bool           // --json-stream (client_ux.go)
	Progress string         // --progress: auto (or ""), always or never
	Plan     client.Plan    // --bidirectional, --repeat, --pause (plan.go)
	// Drain is closed by the server's first SIGTERM (serverSignals).
	Drain <-chan struct{}
}

// serve runs the server service (package server) until ctx is cancelled
// (SIGINT/SIGTERM) or, with -1, the first Test Connection ends; SIGHUP
// reloads its key file (server.Config.Reload).
func serve(ctx context.Context, cfg *control.ServerConfig, lo localOptions) error {
	reload, stopReloads := reloadRequests()
	defer stopReloads()
	sc := serverProcess(lo)
	sc.Reload = reload
	return server.Serve(ctx, cfg, sc)
}

// runTest runs one test (package client) on the engine's sockets and
// returns the process exit status (OB-UDPST's ErrorStatus).
func runTest(ctx context.Context, cfg *control.ClientConfig, lo localOptions) int {
	ux := newClientUX(cfg, lo, os.Stdout, os.Stderr)
	net, closeNet := enginenet.NewClient(enginenet.Options{NoGSO: lo.NoGSO, ShowErrors: cfg.ShowErrors, Log: ux.log,
		Env: enginenet.ReadEnv(os.Getenv)})
	defer closeNet()
	status := client.Run(ctx, cfg, client.Options{Network: net, Out: ux.out, Stderr: ux.stderr, Observe: ux.observe,
		Version: buildinfo.Get().Version, Optimizations: socketPath(lo.NoGSO), Plan: lo.Plan})
	if ux.stream != nil && ux.stream.Err() != nil {
		fmt.Fprintf(os.Stderr, "udpstp: ERROR: writing the event stream: %v\n", ux.stream.Err())
		if status == 0 {
			status = exitInit
		}
	}
	return status
}

// socketPath is the client's socket path in OB-UDPST's words, for the
// banner's Mode line: batched calls, GSO unless --no-gso, header-only
// reads; the portable executor off Linux has none of them.
func socketPath(noGSO bool) string {
	switch {
	case runtime.GOOS != "linux":
		return ""
	case noGSO:
		return "SendMMsg() RecvMMsg()+Trunc"
	}
	return "SendMMsg()+GSO RecvMMsg()+Trunc"
}

// signalContext is cancelled by SIGINT or SIGTERM, so that a test or a
// server stops cleanly and reports instead of dying mid-write.
func signalContext(c *cli.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
}

// startServer runs the server with cfg until it ends: the first SIGTERM
// drains it (server.Config.Drain), SIGINT or a second SIGTERM stops it at
// once.
func startServer(c *cli.Context, cfg *control.ServerConfig, lo localOptions,
	run func(context.Context, *control.ServerConfig, localOptions) error) error {
	ctx, drain, stop := serverSignals(c.Context)
	defer stop()
	lo.Drain = drain
	return run(ctx, cfg, lo)
}

// serverSignals returns a context that SIGINT or a second SIGTERM cancels,
// and a channel the first SIGTERM closes.
func serverSignals(parent context.Context) (context.Context, <-chan struct{}, func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	drain := make(chan struct{})
	done := make(chan struct{})
	go func() {
		terms := 0
		for {
			select {
			case <-done:
				return
			case s := <-sigs:
				if s == syscall.SIGTERM && terms == 0 {
					terms++
					close(drain)
					continue
				}
				cancel()
			}
		}
	}()
	return ctx, drain, func() { signal.Stop(sigs); close(done); cancel() }
}

// startClient runs the test of cfg and exits with its ErrorStatus; the
// client has printed its own messages, so the exit carries none.
func startClient(c *cli.Context, cfg *control.ClientConfig, lo localOptions,
	run func(context.Context, *control.ClientConfig, localOptions) int) error {
	ctx, stop := signalContext(c)
	defer stop()
	if status := run(ctx, cfg, lo); status != 0 {
		return cli.Exit("", status)
	}
	return nil
}
