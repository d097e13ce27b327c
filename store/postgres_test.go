//go:build !small

package store

import (
	"context"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/pgtest"
)

// TestPostgres runs the conformance suite on a throw-away PostgreSQL
// cluster, a fresh database per case.
func TestPostgres(t *testing.T) {
	c := pgtest.Start(t)
	runSuite(t, func(t *testing.T) string { return c.NewDatabase(t) })
}

// TestPostgresBadSpecs: an unreachable or malformed URL is an error that
// does not show the password.
func TestPostgresBadSpecs(t *testing.T) {
	c := pgtest.Start(t)
	badSpecs(t, map[string]string{
		"postgres://u:secret@127.0.0.1:1/db?connect_timeout=5":              "xxxxx",
		"postgresql://u:secret@127.0.0.1:1/db?connect_timeout=5":            "xxxxx",
		"postgres://u:secret@127.0.0.1:1/db?sslmode=nonsense":               "not a PostgreSQL URL",
		strings.Replace(c.DSN(), "/postgres?", "/nosuchdb?", 1):             "nosuchdb",
		strings.Replace(c.DSN(), "postgres@", "postgres:secret@", 1) + "&x": "xxxxx",
	})
}

// TestPostgresOutage: a store outlives its database's restart: writes
// fail while it is down and work again after, and what was written
// before is there (pgtest's Stop and Start, as the spool's test uses them).
func TestPostgresOutage(t *testing.T) {
	c := pgtest.Start(t)
	ctx := context.Background()
	s, err := Open(ctx, c.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put(t, s, result(1))
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, result(2)); err == nil {
		t.Fatal("a Put worked while PostgreSQL was down")
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	put(t, s, result(2))
	got, err := s.List(ctx, Filter{})
	if err != nil || len(got) != 2 {
		t.Fatalf("after the outage: %d rows, %v", len(got), err)
	}
}
