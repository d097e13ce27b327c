//go:build !small

package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

// postgresEngine is this build's PostgreSQL engine (Open's
// "postgres://").
func postgresEngine() engine { return openPostgres }

// Refused says whether err is a server's answer (a PostgreSQL error: no
// such database, authentication failed) rather than no answer: a store
// that will not work until its spec is fixed.
func Refused(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe)
}

// postgresDialect: $n placeholders, times as timestamptz.
var postgresDialect = &dialect{
	dollar:  true,
	timeArg: func(t time.Time) any { return t.UTC() },
	epochUS: "(EXTRACT(EPOCH FROM %s) * 1000000)::BIGINT",
}

// A store's connections. A fleet's database serves many agents, each with
// its own store: a few connections each, closed when idle, keep the
// server's max_connections for the many.
const (
	postgresConns       = 8
	postgresIdleConns   = 2
	postgresIdleTime    = time.Minute
	postgresDialTimeout = 10 * time.Second
)

// openPostgres opens a PostgreSQL store through pgx's database/sql
// adapter (not pgxpool): the SQL layer is database/sql's, shared with
// SQLite, so every query is written once; database/sql pools the
// connections.
func openPostgres(ctx context.Context, dsn string, o openOptions) (Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's message quotes the URL: not its password.
		return nil, fmt.Errorf("not a PostgreSQL URL")
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = postgresDialTimeout
	}
	if o.reader {
		// Every transaction of a reader's sessions is read only: the
		// server refuses a write, whatever the role may do.
		cfg.RuntimeParams["default_transaction_read_only"] = "on"
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(postgresConns)
	db.SetMaxIdleConns(postgresIdleConns)
	db.SetConnMaxIdleTime(postgresIdleTime)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if o.reader {
		v, err := checkSchema(ctx, db, goose.DialectPostgres, "postgres")
		if err != nil {
			db.Close()
			return nil, err
		}
		return &sqlStore{db: db, d: postgresDialect, readCols: schemaColumns(v), rollups: v >= fleetRollupVersion}, nil
	}
	lock, err := postgresLock()
	if err != nil {
		db.Close()
		return nil, err
	}
	if err := migrate(ctx, db, goose.DialectPostgres, "postgres", lock); err != nil {
		db.Close()
		return nil, err
	}
	return &sqlStore{db: db, d: postgresDialect, rollups: true}, nil
}
