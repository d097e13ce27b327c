//go:build !small

package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// The schema's migrations, one folder per engine with the same version
// numbers and columns (docs/store.md).
//
//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrations embed.FS

// migrate brings db's schema up to this binary's version, through goose's
// Provider (no global state). A store whose schema is newer than the
// binary's is refused: the binary would not know its columns.
func migrate(ctx context.Context, db *sql.DB, dialect goose.Dialect, dir string, opts ...goose.ProviderOption) error {
	sub, err := fs.Sub(migrations, "migrations/"+dir)
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(dialect, db, sub, opts...)
	if err != nil {
		return fmt.Errorf("schema migrations: %w", err)
	}
	current, target, err := p.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("schema version: %w", err)
	}
	if current > target {
		return fmt.Errorf("its schema is version %d, newer than this udpstp's %d: use a newer udpstp", current, target)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("schema migrations: %w", err)
	}
	return nil
}

// postgresLock makes concurrent migrations (many agents starting at once
// against one database) wait for each other: a session advisory lock.
func postgresLock() (goose.ProviderOption, error) {
	l, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, err
	}
	return goose.WithSessionLocker(l), nil
}

// checkSchema is a reader's migrate: it reads db's schema version and
// writes nothing. A store at another version than the binary's is refused
// (a reader cannot upgrade it, and an older schema may lack columns the
// queries read): the message says what to do.
func checkSchema(ctx context.Context, db *sql.DB, dialect goose.Dialect, dir string) error {
	sub, err := fs.Sub(migrations, "migrations/"+dir)
	if err != nil {
		return err
	}
	// NewProvider reads the migrations only; it does not touch db.
	p, err := goose.NewProvider(dialect, db, sub)
	if err != nil {
		return fmt.Errorf("schema migrations: %w", err)
	}
	var target int64
	for _, s := range p.ListSources() {
		target = max(target, s.Version)
	}
	var current sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT MAX(version_id) FROM "+goose.DefaultTablename).Scan(&current); err != nil {
		return fmt.Errorf("no schema version (%v): not a udpstp store, or one never opened by the agent", err)
	}
	switch {
	case current.Int64 > target:
		return fmt.Errorf("its schema is version %d, newer than this udpstp's %d: use a newer udpstp", current.Int64, target)
	case current.Int64 < target:
		return fmt.Errorf("its schema is version %d, older than this udpstp's %d, and a reader does not upgrade it: "+
			"run the agent (udpstp agent --store ...) once on it to upgrade it", current.Int64, target)
	}
	return nil
}
