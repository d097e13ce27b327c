package agent

// The service around an Agent: its HTTP listener, reloads of the
// configuration file (SIGHUP, which the command turns into a request on
// ServeConfig.Reload) and sd_notify (Type=notify, internal/sdnotify):
// READY=1 once the store is open and the listener bound, RELOADING=1 ...
// READY=1 around a reload, STOPPING=1 at the end. Outside systemd (no
// NOTIFY_SOCKET, ServeConfig.Systemd) none of it is sent. The command
// owns the process: its signals and environment come in through
// ServeConfig, so Serve may run twice in one process.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"golang.org/x/net/netutil"

	"github.com/udpstp/udpstp/internal/listenaddr"
	"github.com/udpstp/udpstp/internal/sdnotify"
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
	Spool string
	// Remote, if set, is the store the spool uploads to in place of
	// Store's (a collector's client, package collector); reads are then
	// the spool's local store's.
	Remote  store.Store
	Load    LoadOptions
	Options Options // Store is opened from Store
	// Page, if set, is the web page of a and its store, served at /.
	Page func(a *Agent, st store.Store, log *slog.Logger) http.Handler
	// Ready, if set, is called with the listener's address once the
	// agent serves (tests read the port of ":0" from it).
	Ready func(addr net.Addr)
	// Reload asks, each time it delivers, for the configuration file to
	// be read again (SIGHUP). nil: no reloads.
	Reload <-chan struct{}
	// Systemd is NOTIFY_SOCKET, as the command read it.
	Systemd sdnotify.Env
}

// Serve runs the agent until ctx ends.
func Serve(ctx context.Context, sc ServeConfig) error {
	log := sc.Options.Log
	if log == nil {
		log = slog.Default()
		sc.Options.Log = log
	}
	cfg, err := loadConfig(sc.ConfigPath, sc.Load)
	if err != nil {
		return &ConfigError{err}
	}
	for _, w := range cfg.Warnings {
		log.Warn("configuration", "warning", w)
	}
	st, err := openStore(ctx, sc, log)
	if err != nil {
		return err
	}
	defer st.Close()
	if sc.Spool != "" && sc.Remote == nil {
		checked := make(chan struct{})
		go func() { defer close(checked); checkRemote(ctx, sc.Store, log) }()
		defer func() { <-checked }()
	}
	sc.Options.Store = st
	sc.Options.Parse = sc.Load.Parse
	if sc.Options.InFlight == "" {
		sc.Options.InFlight = inFlightPath(sc)
	}
	a := New(cfg, sc.Options)
	a.recoverInFlight(ctx)
	if err := a.Restore(ctx); err != nil {
		log.Error("restoring the last results", "err", err)
	}
	ln, err := net.Listen(listenaddr.Network(sc.HTTP), sc.HTTP)
	if err != nil {
		return fmt.Errorf("--http: %w", err)
	}
	var page http.Handler
	if sc.Page != nil {
		page = sc.Page(a, st, log)
	}
	// Bounded: an idle keep-alive connection ends after IdleTimeout, and
	// past MaxConnections a connection waits in the kernel's accept
	// queue, holding no descriptor of ours (docs/security.md, "The
	// agent's HTTP surface").
	hc := cfg.HTTP
	srv := &http.Server{Handler: a.Handler(page, sc.HTTP), ReadHeaderTimeout: hc.ReadHeaderTimeout,
		IdleTimeout: hc.IdleTimeout, MaxHeaderBytes: 16 << 10,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go srv.Serve(netutil.LimitListener(ln, hc.MaxConnections))
	log.Info("agent serving", "http", ln.Addr().String(), "store", store.Redact(sc.Store), "config", sc.ConfigPath, "tests", len(cfg.Tests), "identity", sc.Options.Identity)
	if sc.Ready != nil {
		sc.Ready(ln.Addr())
	}
	nt := sdnotify.New(sc.Systemd.Socket, log)
	nt.Ready()

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	sdnotify.RunReloads(ctx, sc.Reload, func() {
		nt.Reloading()
		defer nt.Reloaded()
		if c, err := loadConfig(sc.ConfigPath, sc.Load); err != nil {
			log.Error("reload refused; the configuration in force stays", "err", err)
			a.ReloadFailed()
		} else {
			for _, w := range c.Warnings {
				log.Warn("configuration", "warning", w)
			}
			a.Reload(c)
			log.Info("configuration reloaded", "tests", len(c.Tests))
		}
	})
	nt.Stop()
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
	if sc.Remote != nil {
		return store.OpenSpoolTo(ctx, sc.Remote, sc.Spool, store.SpoolOptions{Log: log, FlushOnClose: store.SpoolCloseFlush, LocalReads: true})
	}
	// The last test's result reaches the remote before the agent exits,
	// if it answers; what it does not take waits for the next start.
	return store.OpenSpool(ctx, sc.Store, sc.Spool, store.SpoolOptions{Log: log, FlushOnClose: store.SpoolCloseFlush})
}

// inFlightPath is the in-flight file (inflight.go) beside the agent's
// local store: the spool's, or the SQLite store's; "" for none (a
// PostgreSQL store without a spool).
func inFlightPath(sc ServeConfig) string {
	local := sc.Spool
	if p, ok := strings.CutPrefix(sc.Store, "sqlite:"); ok && local == "" {
		local, _, _ = strings.Cut(p, "?")
	}
	if local == "" {
		return ""
	}
	return local + ".running"
}

// checkRemote opens the spool's remote store once at start and says in
// the log whether it takes results: a server that answers but refuses
// (no such database, a wrong password) is a mistake to fix now, not a
// spool that fills for ever; one that is merely down is said too, and
// the spool keeps the results meanwhile.
func checkRemote(ctx context.Context, spec string, log *slog.Logger) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := store.Open(cctx, spec)
	switch {
	case err == nil:
		st.Close()
		log.Info("remote store ok", "store", store.Redact(spec))
	case ctx.Err() != nil:
	case store.Refused(err):
		log.Error("remote store refuses: results wait in the spool until --store is fixed", "store", store.Redact(spec), "err", err)
	default:
		log.Warn("remote store unreachable at start: results wait in the spool and are uploaded when it answers", "store", store.Redact(spec), "err", err)
	}
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
