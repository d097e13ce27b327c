//go:build !small && linux

package main

// internal/testkit/pgtest runs PostgreSQL as another user: Linux only.

import (
	"context"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/pgtest"
	"github.com/udpstp/udpstp/store"
)

// TestHistoryPostgres runs the history tests on a PostgreSQL store (a
// throw-away cluster: internal/testkit/pgtest).
func TestHistoryPostgres(t *testing.T) {
	c := pgtest.Start(t)
	spec := c.NewDatabase(t)
	st, err := store.Open(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	s := seedStore(t, st, spec, strings.Replace(c.DSN(), "/postgres?", "/nosuchdb?", 1))
	st.Close()
	t.Run("list", func(t *testing.T) { historyList(t, s) })
	t.Run("filters", func(t *testing.T) { historyFilters(t, s) })
	t.Run("show", func(t *testing.T) { historyShowExportPlot(t, s) })
	t.Run("errors", func(t *testing.T) { historyErrors(t, s) })
}
