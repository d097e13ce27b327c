// Package server runs udpstp's server service: the Control Phase's
// sockets (package control) with every Data Phase on the engine's
// executor, and what a long-running service needs around them: its log
// (logging.go), running in the background (daemon.go), systemd's
// notifications, watchdog and socket activation (notify.go, serve.go),
// key reloads on SIGHUP, OB-UDPST's -G statistics file
// (service_stats.go) and the Prometheus endpoint (serve_metrics.go).
//
// cmd/udpstp reads the command line into a Config and calls Serve; the
// errors Serve returns carry their exit status (ExitError). The process
// is cmd/udpstp's: it reads the environment and installs the signal
// handlers, and passes what they say in through Config, so Serve reads no
// environment, installs no handler, and may run twice in one process.
package server

import (
	"io"
	"net/netip"
	"os"

	"github.com/udpstp/udpstp/internal/enginenet"
	"github.com/udpstp/udpstp/internal/sdnotify"
)

// Config is what a server runs with besides the Control Phase's
// control.ServerConfig.
type Config struct {
	Service Options // how the process runs, logs and writes
	NoGSO   bool    // --no-gso: send without UDP_SEGMENT
	// Drain, closed, asks for a drain (the first SIGTERM; drain.go):
	// Serve then ends by itself once the running tests are over or
	// Options.DrainTimeout has passed. Its context ending stops it at
	// once. nil: no drain.
	Drain <-chan struct{}
	// Reload asks, each time it delivers, for the key file to be read
	// again (SIGHUP, which the command turns into a request). nil: none.
	Reload <-chan struct{}

	// Systemd is NOTIFY_SOCKET and the watchdog's settings (notify.go).
	Systemd sdnotify.Env
	// Listeners are the control sockets systemd passed (socket
	// activation, LISTEN_FDS); Serve takes them over.
	Listeners []*os.File
	// Stderr is the process's standard error, where the log goes but
	// with -x (logging.go); nil: os.Stderr.
	Stderr io.Writer
	// Journal: Stderr is a stream to journald (JOURNAL_STREAM,
	// logging.go).
	Journal bool
	// Engine is the executor's experimental settings (enginenet.ReadEnv).
	Engine enginenet.Env
	// StatsTiming replaces the -G timing for tests (EnvStatsTiming):
	// "record,file" durations; "": OB-UDPST's.
	StatsTiming string
	// OptionName names an option, given by its long name, in messages as
	// the command line spells it ("--key-file/-K"); nil: --name.
	OptionName func(long string) string
	// Daemon is -x's side of the process (daemon.go).
	Daemon Daemon
	// Ready, if set, is called with the control sockets' addresses once
	// the server admits tests (after READY=1).
	Ready func(addrs []netip.AddrPort)
}
