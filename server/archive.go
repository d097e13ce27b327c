package server

// The server's archive: a record of every test it served, to files and/or
// a result store (package server/archive, docs/fleet.md).
//
// The store never holds a test's slot: every record goes through a spool
// on disk (store.Spool: a local SQLite file and its outbox) that the
// archive's writer puts it into, and one goroutine, the spool's uploader,
// writes it to the store, retrying with a backoff while the store fails or
// hangs. At the stop the spool is flushed for what is left of the drain
// (--drain-timeout); what it does not deliver by then stays on disk for
// the next start. /healthz on the metrics listener turns to 503 while
// records are not being stored (docs/fleet.md, "The server's store").

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/udpstp/udpstp/server/archive"
	"github.com/udpstp/udpstp/store"
)

// ArchiveOptions are --archive and the options that go with it.
type ArchiveOptions struct {
	Dir       string        // --archive: gzipped NDJSON files here; "": none
	Store     string        // --store: sqlite:PATH or postgres://...; "": none
	KeyFile   string        // --archive-key: the pseudonym key; "": one per process
	Plain     bool          // --archive-addresses=plain
	MaxSizeMB int           // --archive-max-size; 0: archive.DefaultMaxSize
	MaxAge    time.Duration // --archive-max-age; 0: archive.DefaultMaxAge
	Retention time.Duration // --archive-retention; 0: files kept
	Name      string        // --archive-name: the server in the records; "": the host name
	// StoreHealth bounds how long the store may refuse records before
	// /healthz says so (store.SpoolOptions.UnhealthyAfter); 0: its default.
	// No option sets it: the tests do.
	StoreHealth time.Duration
}

// on says whether the server keeps an archive.
func (o *ArchiveOptions) on() bool { return o.Dir != "" || o.Store != "" }

// serverArchive is the archive and, with --store, the spool its records
// go through.
type serverArchive struct {
	*archive.Archive
	spool *store.Spool // nil: no --store
	ctx   context.Context
	log   *slog.Logger

	// drainAt is when the drain began (unix ns; 0: none), drainTimeout
	// its bound: the flush at the stop takes what is left of it.
	drainAt      atomic.Int64
	drainTimeout time.Duration
	closing      chan struct{}
	once         sync.Once
}

// openArchive opens the archive the options ask for, nil if none. ctx is
// Serve's: once it ends (a hard stop) the flush at the stop is short.
func openArchive(ctx context.Context, o ArchiveOptions, log *slog.Logger, opt func(string) option) (*serverArchive, error) {
	if !o.on() {
		return nil, nil
	}
	cfg := archive.Config{
		Dir: o.Dir, MaxSize: int64(o.MaxSizeMB) << 20, MaxAge: o.MaxAge, Retention: o.Retention,
		Plain: o.Plain, Server: o.Name, Log: log,
	}
	if !o.Plain {
		if o.KeyFile != "" {
			key, created, err := archive.LoadKey(o.KeyFile)
			if err != nil {
				return nil, err
			}
			if created {
				log.Info("archive: new pseudonym key written", "file", o.KeyFile)
			}
			cfg.Key = key
		} else {
			log.Info("archive: no " + opt("archive-key").String() + ": client pseudonyms hold within this run only")
		}
	}
	sa := &serverArchive{ctx: ctx, log: log, closing: make(chan struct{})}
	switch {
	case o.Store != "" && !store.HasEngine("sqlite"):
		// No SQLite for a spool in this build (32-bit MIPS): the archive
		// writes to the store itself, as before the spool, and a store
		// that hangs holds the tests that end meanwhile.
		st, err := store.Open(ctx, o.Store)
		if err != nil {
			return nil, err
		}
		log.Warn("archive: no SQLite in this build for the store's spool: records go to " + opt("store").String() +
			" directly, and a store that hangs holds the tests that end")
		cfg.Store = st
	case o.Store != "":
		sp, err := openArchiveStore(ctx, o, log, opt)
		if err != nil {
			return nil, err
		}
		sa.spool = sp
		cfg.Store = spoolOnly{sp}
	}
	a, err := archive.Open(cfg)
	if err != nil {
		if sa.spool != nil {
			sa.spool.Close()
		} else if cfg.Store != nil {
			cfg.Store.Close()
		}
		return nil, err
	}
	sa.Archive = a
	return sa, nil
}

// spoolOnly is the spool as the archive sees it: the archive closes its
// store when it has written its queue, but the spool is flushed and
// closed after that, by serverArchive.close, within the drain.
type spoolOnly struct{ *store.Spool }

func (spoolOnly) Close() error { return nil }

// SpoolFile is the name of the spool in the --archive directory: the
// records for the --store wait there until it takes them.
const SpoolFile = "spool.db"

// ServerSpoolFile is the spool's name in the state directory
// ($STATE_DIRECTORY, else /var/lib/udpstp) for a postgres:// --store
// without --archive; a sqlite:PATH store's spool is PATH + SpoolSuffix.
const (
	ServerSpoolFile = "server-spool.db"
	SpoolSuffix     = ".spool"
)

// spoolPath is where the records for the store wait (docs/fleet.md):
// in the --archive directory, else beside a SQLite store, else in the
// state directory.
func spoolPath(o ArchiveOptions) string {
	if o.Dir != "" {
		return filepath.Join(o.Dir, SpoolFile)
	}
	if path, ok := strings.CutPrefix(o.Store, "sqlite:"); ok {
		return path + SpoolSuffix
	}
	dir := "/var/lib/udpstp"
	if d, _, _ := strings.Cut(os.Getenv("STATE_DIRECTORY"), ":"); d != "" {
		dir = d
	}
	return filepath.Join(dir, ServerSpoolFile)
}

// openArchiveStore opens --store behind its spool (store.NewSpool). A
// SQLite store is opened now, so that a wrong path stops the start; a
// remote one (postgres://...) lazily (store.OpenLazy): the server starts
// and serves while it is down.
func openArchiveStore(ctx context.Context, o ArchiveOptions, log *slog.Logger, opt func(string) option) (*store.Spool, error) {
	path := spoolPath(o)
	if !strings.HasPrefix(o.Store, "sqlite:") || o.Dir != "" {
		// The archive's directory (archive.Open makes it too, later)
		// or the state directory; a SQLite store's must exist already
		// (docs/store.md).
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			return nil, fmt.Errorf("%s: the spool's directory: %w", opt("store"), err)
		}
	}
	return openSpool(ctx, o, path, log)
}

// openSpool opens the spool at path for --store. A SQLite store is
// opened once first, so that a wrong path is a start error (the spool
// opens its store lazily, as it must a PostgreSQL that is down).
func openSpool(ctx context.Context, o ArchiveOptions, path string, log *slog.Logger) (*store.Spool, error) {
	if strings.HasPrefix(o.Store, "sqlite:") {
		st, err := store.Open(ctx, o.Store)
		if err != nil {
			return nil, err
		}
		st.Close()
	}
	sp, err := store.OpenSpool(ctx, o.Store, path, store.SpoolOptions{Log: log, UnhealthyAfter: o.StoreHealth, DropUploaded: true})
	if err != nil {
		return nil, err
	}
	if n := sp.Pending(); n > 0 {
		log.Info("archive: records from an earlier run wait in the spool for the store", "waiting", n, "spool", path)
	}
	return sp, nil
}

// watchDrain notes when drain (the first SIGTERM) comes: the flush at the
// stop takes what is left of timeout (--drain-timeout) after it.
func (a *serverArchive) watchDrain(drain <-chan struct{}, timeout time.Duration) {
	if a == nil {
		return
	}
	a.drainTimeout = timeout
	go func() {
		select {
		case <-drain:
			a.drainAt.Store(time.Now().UnixNano())
		case <-a.closing:
		}
	}()
}

// hardStopFlush is the flush at a stop without a drain (SIGINT, a second
// SIGTERM): that stop is at once, the records stay on disk.
const hardStopFlush = time.Second

// flushBudget is how long the stop waits for the spool to deliver: what
// is left of the drain if one began (none with --drain-timeout 0),
// hardStopFlush after a hard stop, else (-1's end) store.SpoolCloseFlush;
// never more than that.
func (a *serverArchive) flushBudget(now time.Time) time.Duration {
	if at := a.drainAt.Load(); at != 0 && a.ctx.Err() == nil {
		return min(store.SpoolCloseFlush, max(0, time.Unix(0, at).Add(a.drainTimeout).Sub(now)))
	}
	if a.ctx.Err() != nil {
		return hardStopFlush
	}
	return store.SpoolCloseFlush
}

// close writes the archive's queue (files, spool), waits for the spool
// to deliver for flushBudget and closes it: what it did not deliver waits
// on disk for the next start. A second call does nothing; nil does
// nothing.
func (a *serverArchive) close() {
	if a == nil {
		return
	}
	a.once.Do(func() {
		close(a.closing)
		budget := a.flushBudget(time.Now())
		if err := a.Archive.Close(); err != nil {
			a.log.Error("archive: closing", "err", err)
		}
		if a.spool == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		err := a.spool.Flush(ctx)
		cancel()
		if err != nil {
			a.log.Warn("archive: records kept in the spool for the next start", "waiting", a.spool.Pending(), "flushed_for", budget)
		}
		if err := a.spool.Close(); err != nil {
			a.log.Error("archive: closing the store", "err", err)
		}
	})
}

// health is nil while records are being stored, else why not (the
// spool's Health): /healthz's answer.
func (a *serverArchive) health() error {
	if a == nil || a.spool == nil {
		return nil
	}
	if err := a.spool.Health(); err != nil {
		return fmt.Errorf("archive: the result store: %w", err)
	}
	return nil
}
