package server

// The server's archive: a record of every test it served, to files and/or
// a result store (package server/archive, docs/fleet.md).

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
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
}

// on says whether the server keeps an archive.
func (o *ArchiveOptions) on() bool { return o.Dir != "" || o.Store != "" }

// openArchive opens the archive the options ask for, nil if none.
func openArchive(ctx context.Context, o ArchiveOptions, log *slog.Logger) (*archive.Archive, error) {
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
	if o.Store != "" {
		s, err := openArchiveStore(ctx, o, log)
		if err != nil {
			return nil, err
		}
		cfg.Store = s
	}
	a, err := archive.Open(cfg)
	if err != nil && cfg.Store != nil {
		cfg.Store.Close()
	}
	return a, err
}

// SpoolFile is the name of the spool in the --archive directory: the
// records for a remote --store wait there while it does not answer.
const SpoolFile = "spool.db"

// openArchiveStore opens --store. A remote one (postgres://...) with an
// --archive directory goes through a spool in that directory
// (store.OpenSpool, docs/fleet.md): the server starts while it is down,
// and no record is lost while it is; without a directory it must answer
// at start.
func openArchiveStore(ctx context.Context, o ArchiveOptions, log *slog.Logger) (store.Store, error) {
	if o.Dir == "" || strings.HasPrefix(o.Store, "sqlite:") {
		return store.Open(ctx, o.Store)
	}
	// archive.Open makes the directory too; the spool needs it first.
	if err := os.MkdirAll(o.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("%s: %w", opt("archive"), err)
	}
	return store.OpenSpool(ctx, o.Store, filepath.Join(o.Dir, SpoolFile), store.SpoolOptions{Log: log, FlushOnClose: store.SpoolCloseFlush})
}
