package agent

// The service around an Agent: its HTTP listener, SIGHUP reloads of the
// configuration file and sd_notify (Type=notify): READY=1 once the store
// is open and the listener bound, RELOADING=1 ... READY=1 around a reload,
// STOPPING=1 at the end. Outside systemd (no NOTIFY_SOCKET) none of it is
// sent.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/udpstp/udpstp/store"
)

// ServeConfig is what `udpstp agent` was told.
type ServeConfig struct {
	ConfigPath string // "" for none: no scheduled tests
	HTTP       string // listen address of the page, /metrics and /probe
	Store      string // --store: sqlite:PATH or postgres://...
	// Spool, if set, is the path of a local SQLite store that keeps every
	// result first and uploads it to Store (store.OpenSpool): a remote
	// store that is down, even at start, loses nothing.
	Spool   string
	Load    LoadOptions
	Options Options // Store is opened from Store
	// Page, if set, is the web page of a and its store, served at /.
	Page func(a *Agent, st store.Store, log *slog.Logger) http.Handler
	// Ready, if set, is called with the listener's address once the
	// agent serves (tests read the port of ":0" from it).
	Ready func(addr net.Addr)
}

// Serve runs the agent until ctx ends.
func Serve(ctx context.Context, sc ServeConfig) error {
	log := sc.Options.Log
	if log == nil {
		log = slog.Default()
		sc.Options.Log = log
	}
	// Set before anything slow: a SIGHUP early must not end the agent.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	cfg, err := loadConfig(sc.ConfigPath, sc.Load)
	if err != nil {
		return &ConfigError{err}
	}
	st, err := openStore(ctx, sc, log)
	if err != nil {
		return err
	}
	defer st.Close()
	sc.Options.Store = st
	sc.Options.Parse = sc.Load.Parse
	a := New(cfg, sc.Options)
	if err := a.Restore(ctx); err != nil {
		log.Error("restoring the last results", "err", err)
	}
	ln, err := net.Listen("tcp", sc.HTTP)
	if err != nil {
		return fmt.Errorf("--http: %w", err)
	}
	var page http.Handler
	if sc.Page != nil {
		page = sc.Page(a, st, log)
	}
	srv := &http.Server{Handler: a.Handler(page), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go srv.Serve(ln)
	log.Info("agent serving", "http", ln.Addr().String(), "store", sc.Store, "config", sc.ConfigPath, "tests", len(cfg.Tests), "identity", sc.Options.Identity)
	if sc.Ready != nil {
		sc.Ready(ln.Addr())
	}
	notify(log, daemon.SdNotifyReady)

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	for stop := false; !stop; {
		select {
		case <-hup:
			notify(log, daemon.SdNotifyReloading+"\n"+daemon.SdNotifyMonotonicUsec())
			if c, err := loadConfig(sc.ConfigPath, sc.Load); err != nil {
				log.Error("reload refused; the configuration in force stays", "err", err)
				a.ReloadFailed()
			} else {
				a.Reload(c)
				log.Info("configuration reloaded", "tests", len(c.Tests))
			}
			notify(log, daemon.SdNotifyReady)
		case <-ctx.Done():
			stop = true
		}
	}
	notify(log, daemon.SdNotifyStopping)
	cancel()
	err = <-done
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	srv.Shutdown(sctx)
	return err
}

// openStore opens --store, behind the spool when there is one.
func openStore(ctx context.Context, sc ServeConfig, log *slog.Logger) (store.Store, error) {
	if sc.Spool == "" {
		return store.Open(ctx, sc.Store)
	}
	// The last test's result reaches the remote before the agent exits,
	// if it answers; what it does not take waits for the next start.
	return store.OpenSpool(ctx, sc.Store, sc.Spool, store.SpoolOptions{Log: log, FlushOnClose: store.SpoolCloseFlush})
}

func loadConfig(path string, o LoadOptions) (*Config, error) {
	if path == "" {
		return Default(), nil
	}
	return Load(path, o)
}

// ConfigError is a configuration file that cannot be used.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// IsConfigError says whether err is a ConfigError.
func IsConfigError(err error) bool {
	var ce *ConfigError
	return errors.As(err, &ce)
}

func notify(log *slog.Logger, state string) {
	if os.Getenv("NOTIFY_SOCKET") == "" {
		return
	}
	if _, err := daemon.SdNotify(false, state); err != nil {
		log.Debug("sd_notify failed", "state", state, "err", err)
	}
}
