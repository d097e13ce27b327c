package main

// The process's side of the two daemons: what the environment says
// (systemd's notify socket, watchdog and sockets, journald, -x's report
// line, the engine's experimental settings) is read here, once, and the
// signals are caught here; package server and package agent are handed
// the values and channels (server.Config, agent.ServeConfig) and read
// neither themselves.

import (
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/coreos/go-systemd/v22/journal"

	"github.com/udpstp/udpstp/internal/enginenet"
	"github.com/udpstp/udpstp/internal/sdnotify"
	"github.com/udpstp/udpstp/server"
)

// systemdEnv is NOTIFY_SOCKET and the watchdog's settings (WATCHDOG_USEC
// for this process; an error is logged by the daemon).
func systemdEnv() sdnotify.Env {
	wd, err := daemon.SdWatchdogEnabled(false)
	return sdnotify.Env{Socket: os.Getenv("NOTIFY_SOCKET"), Watchdog: wd, WatchdogErr: err}
}

// serverProcess is the server's Config as this process's environment
// sets it, around the command line's options.
func serverProcess(lo localOptions) server.Config {
	journalStream, _ := journal.StderrIsJournalStream()
	return server.Config{
		Service: lo.Service, NoGSO: lo.NoGSO, Drain: lo.Drain,
		Systemd: systemdEnv(),
		// Taken without switching them to blocking mode; LISTEN_* are
		// removed, so nothing the server starts inherits them.
		Listeners:   activation.Files(true),
		Stderr:      os.Stderr,
		Journal:     journalStream,
		Engine:      enginenet.ReadEnv(os.Getenv),
		StatsTiming: os.Getenv(server.EnvStatsTiming),
		OptionName:  optionName,
		Daemon:      server.Daemon{Report: daemonReport(), Args: os.Args, Environ: os.Environ()},
	}
}

// optionName names an option in the server's messages as the option
// table does ("--key-file/-K").
func optionName(long string) string { return opt(long).String() }

// daemonReport is, in a server -x started in the background, its line
// back to the process that started it (server.EnvDaemonChild); the mark
// is removed so that nothing it starts inherits it.
func daemonReport() *os.File {
	v := os.Getenv(server.EnvDaemonChild)
	if v == "" {
		return nil
	}
	os.Unsetenv(server.EnvDaemonChild)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil
	}
	return os.NewFile(uintptr(fd), "daemon-report")
}

// reloadRequests catches SIGHUP, which must not end a daemon (its default
// action), even one that comes while it starts: each becomes a request on
// the channel (one waits while a reload runs; more are one). stop
// restores the default.
func reloadRequests() (<-chan struct{}, func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	reload := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-hup:
				select {
				case reload <- struct{}{}:
				default:
				}
			}
		}
	}()
	return reload, func() { signal.Stop(hup); close(done) }
}
