//go:build !small

package main

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHistoryOlderSchema: history on a store of an older schema (goose's
// version table at 0) refuses with what to do and leaves the file as it
// was: a reader never migrates (docs/history.md).
func TestHistoryOlderSchema(t *testing.T) {
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
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, "history", "--store", "sqlite:"+path)
	if r.code != exitInit || !strings.Contains(r.msg, "older than this udpstp's") || !strings.Contains(r.msg, "run the agent") {
		t.Errorf("history on an older store: exit %d %q", r.code, r.msg)
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, before) {
		t.Errorf("history changed the older store (%v)", err)
	}
}
