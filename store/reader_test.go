//go:build !small && !mips && !mipsle

package store

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSQLiteReaderWritesNothing: a reader reads a store and leaves its
// file as it was, byte for byte; a write through it fails.
func TestSQLiteReaderWritesNothing(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "results.db")
	w, err := Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := w.Put(ctx, result(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, path)
	r, err := OpenReader(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.List(ctx, Filter{}); err != nil || len(got) != 20 {
		t.Fatalf("list: %d results, %v", len(got), err)
	}
	if err := r.Put(ctx, result(99)); err == nil {
		t.Error("a reader's Put succeeded")
	}
	if n, err := r.Prune(ctx, Retention{MaxCount: 1}); err == nil {
		t.Errorf("a reader's Prune succeeded (%d deleted)", n)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readFile(t, path), before) {
		t.Error("the reader changed the store's file")
	}
}

// TestSQLiteReaderMissing: a reader does not create a store.
func TestSQLiteReaderMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.db")
	_, err := OpenReader(context.Background(), "sqlite:"+path)
	if err == nil || !strings.Contains(err.Error(), "only read it") {
		t.Errorf("OpenReader of a missing file: %v", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("OpenReader created the file")
	}
}

// TestSQLiteReaderOlderSchema: a store at an older schema version (here
// goose's version table at 0, as a store before its first migration) is
// refused by a reader with what to do, and left as it was; a writer
// (Open) would upgrade it.
func TestSQLiteReaderOlderSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE goose_db_version (id INTEGER PRIMARY KEY AUTOINCREMENT, version_id INTEGER NOT NULL, is_applied INTEGER NOT NULL, tstamp TIMESTAMP DEFAULT (datetime('now')))",
		"INSERT INTO goose_db_version (version_id, is_applied) VALUES (0, 1)",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	before := readFile(t, path)
	_, err = OpenReader(ctx, "sqlite:"+path)
	if err == nil || !strings.Contains(err.Error(), "older than this udpstp's") || !strings.Contains(err.Error(), "run the agent") {
		t.Errorf("OpenReader of an older schema: %v", err)
	}
	if !bytes.Equal(readFile(t, path), before) {
		t.Error("the reader changed an older store")
	}
	// A file that is no store at all: said so.
	plain := filepath.Join(t.TempDir(), "plain.db")
	if db, err = sql.Open("sqlite", plain); err == nil {
		_, err = db.Exec("CREATE TABLE other (x)")
		db.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReader(ctx, "sqlite:"+plain); err == nil || !strings.Contains(err.Error(), "not a udpstp store") {
		t.Errorf("OpenReader of another database: %v", err)
	}
	w, err := Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatalf("Open upgrading the older store: %v", err)
	}
	w.Close()
	r, err := OpenReader(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatalf("OpenReader after the upgrade: %v", err)
	}
	r.Close()
}

// TestSQLiteFileMode: a new store's file and its -wal and -shm are
// neither world-readable nor writable by anyone but their owner
// (docs/store.md, "Permissions").
func TestSQLiteFileMode(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "results.db")
	w, err := Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Put(ctx, result(1)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := st.Mode().Perm(); m&0o027 != 0 || m != sqliteMode&m {
			t.Errorf("%s: mode %#o, want at most %#o", filepath.Base(f), m, sqliteMode)
		}
	}
}
