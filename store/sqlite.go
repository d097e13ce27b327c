//go:build !small && !mips && !mipsle

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver: pure Go, no cgo

	"github.com/udpstp/udpstp/internal/atomicfile"
)

// sqliteEngine is this build's SQLite engine (Open's "sqlite:").
func sqliteEngine() engine { return openSQLite }

// sqliteDialect stores times as integer microseconds since the epoch.
var sqliteDialect = &dialect{
	timeArg: func(t time.Time) any { return t.UnixMicro() },
	epochUS: "%s",
}

// sqliteBusy is how long a statement waits for another process's write
// (udpstp history reading while the agent writes, two writers) before it
// fails with SQLITE_BUSY.
const sqliteBusy = 10 * time.Second

// sqlitePragmas are set on every connection. WAL: readers do not block
// the writer nor it them. synchronous=FULL: with WAL, a commit is on disk
// (the WAL fsynced) before Put returns, so a kill -9 or a power cut loses
// at most the write in flight (NORMAL would also survive a kill -9, as
// the WAL is in the OS's cache, but not a power cut): docs/store.md,
// "Crash safety".
var sqlitePragmas = []string{
	fmt.Sprintf("busy_timeout(%d)", sqliteBusy.Milliseconds()),
	"journal_mode(WAL)",
	"synchronous(FULL)",
	"foreign_keys(1)", // a result's document goes with it
	// Each connection's page cache, at most 512 KiB (SQLite's default is
	// 2 MiB): it fills as the store grows and is kept while the
	// connection lives, so a long-running agent's pool of connections
	// would hold MBs for pages the kernel's page cache holds anyway
	// (docs/agent.md, "Memory").
	"cache_size(-512)",
}

// sqliteMode is a new store file's permissions: its results name servers
// and hold the user's measurements, so not for every user of a shared
// machine; the group may read it (udpstp history as another user of the
// group). SQLite gives the -wal and -shm files the database file's mode.
const sqliteMode = 0o640

func openSQLite(ctx context.Context, path string, o openOptions) (Store, error) {
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("%s: a path with ? or # is not taken (they would read as URI parts)", path)
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("%s: its directory: %w", path, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%s: %s is not a directory", path, dir)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a database file", path)
	}
	if o.reader {
		if err := checkSQLiteFiles(path); err != nil {
			return nil, err
		}
		return openSQLiteReader(ctx, path)
	}
	// Created here, empty (an empty file is an empty database), so that
	// it has sqliteMode whatever SQLite's default; an existing file keeps
	// the mode its owner gave it.
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, sqliteMode); err == nil {
		f.Close()
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := checkSQLiteFiles(path); err != nil {
		return nil, err
	}
	v := url.Values{}
	for _, p := range sqlitePragmas {
		v.Add("_pragma", p)
	}
	// A transaction takes the write lock when it begins, not when it
	// first writes: no deadlock between two that both read first.
	v.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", path+"?"+v.Encode())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := migrate(ctx, db, goose.DialectSQLite3, "sqlite"); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &sqlStore{db: db, d: sqliteDialect, wmu: &sync.Mutex{}, rollups: true}, nil
}

// sqliteSuffixes name the files SQLite opens beside the database: the
// WAL, its index, and the rollback journal of a store not yet in WAL mode.
var sqliteSuffixes = []string{"", "-wal", "-shm", "-journal"}

// checkSQLiteFiles refuses a store whose database, WAL, index or journal
// name holds anything but a regular file: SQLite opens them by name and
// would follow a link, or wait for ever on a FIFO planted there (a read
// of it never returns). The check looks at each name without opening it
// (internal/atomicfile.CheckRegular: a descriptor opened and closed here
// would drop the locks of this process's other connections to the
// store). A name swapped between the check and SQLite's open needs write
// access to the store's directory, which is trusted (docs/security.md,
// "The result store and the agent's configuration").
func checkSQLiteFiles(path string) error {
	for _, suf := range sqliteSuffixes {
		if _, err := atomicfile.CheckRegular(path + suf); err != nil {
			return fmt.Errorf("%w: a store's files must be regular files", err)
		}
	}
	return nil
}

// openSQLiteReader opens an existing store with SQLite's mode=ro: no
// write, no migration, no journal mode set (the writer set WAL), so a
// user who may only read the file reads it. A WAL database is read
// through its -shm file: while the agent runs it is there; when no
// writer has it open it may be gone, and then SQLite must create it, in
// the store's directory: a reader who may not write there gets SQLite's
// SQLITE_READONLY_DIRECTORY ("attempt to write a readonly database"),
// explained (docs/store.md, "Readers"; SQLite's immutable mode would read
// on without it, but wrongly if a writer started meanwhile).
func openSQLiteReader(ctx context.Context, path string) (Store, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%w (the agent creates it; history and other readers only read it)", err)
	}
	v := url.Values{}
	v.Set("mode", "ro")
	v.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", sqliteBusy.Milliseconds()))
	// "file:" makes the driver hand SQLite the URI whole, mode=ro with it.
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + v.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w%s", path, err, sqliteShmHint(path))
	}
	version, err := checkSchema(ctx, db, goose.DialectSQLite3, "sqlite")
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &sqlStore{db: db, d: sqliteDialect, readCols: schemaColumns(version), rollups: version >= fleetRollupVersion}, nil
}

// sqliteShmHint explains a reader's failed open when there is no -shm
// file (which it may not have been allowed to create).
func sqliteShmHint(path string) string {
	if _, err := os.Stat(path + "-shm"); err == nil {
		return ""
	}
	return fmt.Sprintf(" (a reader of a WAL store needs its %s-shm, which the agent keeps while it runs and there is none now: "+
		"read the store while the agent runs, or as a user who may write %s)", filepath.Base(path), filepath.Dir(path))
}
