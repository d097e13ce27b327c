// Package server runs udpstp's server service: the Control Phase's
// sockets (package control) with every Data Phase on the engine's
// executor, and what a long-running service needs around them: its log
// (logging.go), running in the background (daemon.go), systemd's
// notifications, watchdog and socket activation (notify.go, serve.go),
// key reloads on SIGHUP, OB-UDPST's -G statistics file
// (service_stats.go) and the Prometheus endpoint (serve_metrics.go).
//
// cmd/udpstp reads the command line into a Config and calls Serve; the
// errors Serve returns carry their exit status (ExitError).
package server

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
}
