//go:build !small && !mips && !mipsle

package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
)

// TestSpoolSQLiteRefuses: the remote is a real SQLite store whose table
// is taken away (renamed, as a dropped table): a result Put returns once
// the spool holds it, Health turns to an error naming SQLite's, the
// failed uploads are counted and logged once, not per attempt; once the
// table is back the result arrives and Health is nil again.
func TestSpoolSQLiteRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "results.db")
	remote, err := Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	local, err := Open(ctx, "sqlite:"+filepath.Join(dir, "spool.db"))
	if err != nil {
		t.Fatal(err)
	}
	var log logBuf
	s, err := NewSpool(local, remote, SpoolOptions{Outbox: filepath.Join(dir, "spool.db.outbox"),
		MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, UnhealthyAfter: time.Nanosecond, Log: log.logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Health(); err != nil {
		t.Fatalf("health of a new spool: %v", err)
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
	r := spoolResult("a0", 1)
	if err := s.Put(ctx, r); err != nil {
		t.Fatalf("Put while the store refuses: %v (the spool holds it)", err)
	}
	await.True(t, "health to name the refusal", func() bool {
		err := s.Health()
		return err != nil && strings.Contains(err.Error(), "no such table")
	})
	await.True(t, "three failed uploads", func() bool { return s.State().Failures >= 3 })
	if s.Pending() != 1 {
		t.Errorf("pending %d while refused, want 1", s.Pending())
	}
	if _, err := admin.Exec(`ALTER TABLE results_away RENAME TO results`); err != nil {
		t.Fatal(err)
	}
	flushSpool(t, s)
	if got, err := remote.Get(ctx, r.ID); err != nil || got.ID != r.ID {
		t.Fatalf("after the repair: %v %v", got, err)
	}
	if err := s.Health(); err != nil {
		t.Errorf("health after the repair: %v", err)
	}
	l := log.String()
	if n := strings.Count(l, "uploads fail"); n != 1 {
		t.Errorf("%d lines for %d failed uploads, want one:\n%s", n, s.State().Failures, l)
	}
	if !strings.Contains(l, "uploads go through again") {
		t.Errorf("no line for the recovery:\n%s", l)
	}
}
