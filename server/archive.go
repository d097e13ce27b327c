package server

// The server's archive: a record of every test it served, to files and/or
// a result store (package server/archive, docs/fleet.md).

import (
	"context"
	"log/slog"
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
		s, err := store.Open(ctx, o.Store)
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
