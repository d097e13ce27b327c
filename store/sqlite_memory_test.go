//go:build !small && !mips && !mipsle

package store

import (
	"context"
	"testing"
)

// TestSQLiteCacheBounded: every connection of a writer's pool has the
// bounded page cache (docs/agent.md, "Memory"), not SQLite's 2 MiB: the
// pool opens connections as it needs them, each with sqlitePragmas.
func TestSQLiteCacheBounded(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, sqliteSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db := st.(*sqlStore).db
	// Two connections held at once: the second is a new one.
	for i := range 2 {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var kib int
		if err := c.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&kib); err != nil {
			t.Fatal(err)
		}
		if kib != -512 {
			t.Errorf("connection %d: cache_size %d, want -512 (512 KiB)", i, kib)
		}
	}
}
