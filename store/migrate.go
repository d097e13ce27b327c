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
// Provider (no global state).
//
// goose stays, though there is one migration per engine so far: every
// store in use records its schema in goose's goose_db_version table, and
// goose also gives the PostgreSQL session advisory lock that makes many
// agents starting at once against one database wait for each other
// (postgresLock), per-migration transactions, and the statement
// splitting of the migration files for both engines. A copy of our own
// would have to keep that table and that lock's key exactly as goose
// does, so that stores made so far and binaries released so far keep
// working; that is more code to own and test than goose's few linked
// packages (goose's own, mfridman/interpolate, sethvargo/go-retry,
// go.uber.org/multierr; none of its other drivers is linked). A store whose schema is newer than the
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

// oldestReadable is the oldest schema a reader reads (schemaColumns):
// version 1 lacks the probes' tables (a writer's, the collector's) and
// the cross-traffic columns, version 2 only the latter
// (crossTrafficVersion).
const oldestReadable = 1

// crossTrafficVersion is the schema version that added the results'
// cross-traffic columns (migrations/*/00003_cross_traffic.sql).
const crossTrafficVersion = 3

// fleetRollupVersion is the schema version that added the fleet
// summary's rollups (migrations/*/00004_fleet_rollup.sql); a reader of an
// older store sums the results themselves.
const fleetRollupVersion = 4

// checkSchema is a reader's migrate: it reads db's schema version and
// writes nothing, and returns the version. A store newer than the binary
// is refused, and one older than oldestReadable (a reader cannot upgrade
// it): the message says what to do.
func checkSchema(ctx context.Context, db *sql.DB, dialect goose.Dialect, dir string) (int64, error) {
	sub, err := fs.Sub(migrations, "migrations/"+dir)
	if err != nil {
		return 0, err
	}
	// NewProvider reads the migrations only; it does not touch db.
	p, err := goose.NewProvider(dialect, db, sub)
	if err != nil {
		return 0, fmt.Errorf("schema migrations: %w", err)
	}
	var target int64
	for _, s := range p.ListSources() {
		target = max(target, s.Version)
	}
	var current sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT MAX(version_id) FROM "+goose.DefaultTablename).Scan(&current); err != nil {
		return 0, fmt.Errorf("no schema version (%v): not a udpstp store, or one never opened by the agent", err)
	}
	switch {
	case current.Int64 > target:
		return 0, fmt.Errorf("its schema is version %d, newer than this udpstp's %d: use a newer udpstp", current.Int64, target)
	case current.Int64 < oldestReadable:
		return 0, fmt.Errorf("its schema is version %d, older than this udpstp's %d, and a reader does not upgrade it: "+
			"run the agent (udpstp agent --store ...) once on it to upgrade it", current.Int64, target)
	}
	return current.Int64, nil
}
