//go:build linux && !small && !mips && !mipsle

package server

// The server's result store through its spool (archive.go): a hung
// PostgreSQL holds no test's slot, and a SQLite store that refuses writes
// turns /healthz red until it takes them again, losing nothing.

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/pgtest"
	"github.com/udpstp/udpstp/store"
)

// syncLog is a log the server writes while the test reads it.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *syncLog) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// storeRecord is a finished test's record as control hands it over.
func storeRecord(i int) *control.TestRecord {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
	return &control.TestRecord{Setup: t0, Start: t0, End: t0.Add(time.Second),
		Peer:     netip.AddrPortFrom(netip.MustParseAddr("198.18.0.7"), uint16(40000+i)),
		Upstream: true, EndReason: dataphase.EndStopped}
}

// storedCount is how many results the store at spec holds.
func storedCount(t *testing.T, spec string) int {
	t.Helper()
	st, err := store.Open(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rs, err := st.List(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return len(rs)
}

// TestArchiveStorePostgresFrozen: with PostgreSQL hung (SIGSTOP on all
// its processes, a connection open), more records than the archive's
// queue holds are handed over by ending tests: every hand-over returns
// (a test's slot is released when it ends, whatever the store does);
// they wait in the spool on disk, and once PostgreSQL runs again every
// one arrives.
func TestArchiveStorePostgresFrozen(t *testing.T) {
	c := pgtest.Start(t)
	dsn := c.NewDatabase(t)
	state := t.TempDir()
	t.Setenv("STATE_DIRECTORY", state)
	var log syncLog
	arc, err := openArchive(context.Background(), ArchiveOptions{Store: dsn, Plain: true, Name: "srv"},
		slog.New(slog.NewTextHandler(&log, nil)), optionNames(nil).opt)
	if err != nil {
		t.Fatal(err)
	}
	defer arc.close()
	arc.Add(storeRecord(0))
	await.True(t, "the first record in PostgreSQL", func() bool { return arc.spool.Pending() == 0 && arc.Written.Load() == 1 })

	thaw, err := c.Freeze()
	if err != nil {
		t.Fatal(err)
	}
	defer thaw()
	const n = 300 // more than the archive's queue (256 records)
	var added atomic.Int32
	go func() {
		for i := range n {
			arc.Add(storeRecord(1 + i))
			added.Add(1)
		}
	}()
	await.True(t, "every ended test's record handed over while PostgreSQL hangs", func() bool { return added.Load() == n })
	await.True(t, "the records in the spool", func() bool { return arc.Written.Load() == n+1 })
	if p := arc.spool.Pending(); p == 0 {
		t.Errorf("nothing waits in the spool while PostgreSQL hangs")
	}
	if err := thaw(); err != nil {
		t.Fatal(err)
	}
	await.True(t, "the spool delivered", func() bool { return arc.spool.Pending() == 0 })
	arc.close()
	if got := storedCount(t, dsn); got != n+1 {
		t.Errorf("%d records in PostgreSQL, want %d\n%s", got, n+1, log.String())
	}
	if strings.Contains(log.String(), "level=ERROR") {
		t.Errorf("errors logged:\n%s", log.String())
	}
}

// TestArchiveStoreSQLiteRefused: a SQLite --store whose table is taken
// away (renamed: a dropped table) refuses every write. /healthz, on a real
// listener, turns from 200 to 503 and the failures are logged once, not
// per attempt; the record waits in the spool; once the table is back the
// record is in the store and /healthz is 200 again.
func TestArchiveStoreSQLiteRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.db")
	var log syncLog
	arc, err := openArchive(context.Background(), ArchiveOptions{Store: "sqlite:" + path, Plain: true, Name: "srv",
		StoreHealth: time.Nanosecond}, slog.New(slog.NewTextHandler(&log, nil)), optionNames(nil).opt)
	if err != nil {
		t.Fatal(err)
	}
	defer arc.close()
	hs := httptest.NewServer(healthHandler(arc.health))
	defer hs.Close()
	health := func() int {
		r, err := http.Get(hs.URL)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	if code := health(); code != http.StatusOK {
		t.Fatalf("/healthz of a new store: %d", code)
	}
	// The uploader writes meanwhile: wait for its lock, not SQLITE_BUSY.
	admin, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(30000)")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec(`ALTER TABLE results RENAME TO results_away`); err != nil {
		t.Fatal(err)
	}
	arc.Add(storeRecord(1))
	await.True(t, "/healthz 503 while the store refuses", func() bool { return health() == http.StatusServiceUnavailable })
	await.True(t, "two failed writes", func() bool { return arc.spool.State().Failures >= 2 })
	if p := arc.spool.Pending(); p != 1 {
		t.Errorf("%d records in the spool, want 1", p)
	}
	if _, err := admin.Exec(`ALTER TABLE results_away RENAME TO results`); err != nil {
		t.Fatal(err)
	}
	await.True(t, "/healthz 200 once the store takes records", func() bool { return health() == http.StatusOK })
	await.True(t, "the spool delivered", func() bool { return arc.spool.Pending() == 0 })
	arc.close()
	if got := storedCount(t, "sqlite:"+path); got != 1 {
		t.Errorf("%d records in the store after the repair, want 1", got)
	}
	if got := storedCount(t, "sqlite:"+path+SpoolSuffix); got != 0 {
		t.Errorf("%d records left in the spool after their delivery, want 0", got)
	}
	l := log.String()
	if n := strings.Count(l, "uploads fail"); n != 1 {
		t.Errorf("%d log lines for the failures, want 1:\n%s", n, l)
	}
	if !strings.Contains(l, "uploads go through again") {
		t.Errorf("no line for the recovery:\n%s", l)
	}
}
