//go:build !small

package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver: pure Go, no cgo
)

func init() { engines["sqlite"] = openSQLite }

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
}

func openSQLite(ctx context.Context, path string) (Store, error) {
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
	return &sqlStore{db: db, d: sqliteDialect, wmu: &sync.Mutex{}}, nil
}
