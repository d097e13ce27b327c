//go:build !small

package store

// The probes a collector enrolled (docs/fleet.md, "Probes across the
// internet: the collector"): kept in the result store, so that every
// collector in front of one store shares them, and a revocation made at
// one holds at all of them on the next request.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Probes is what a collector keeps of its probes' credentials. Both SQL
// engines' stores have it (a type assertion on the Store Open returns).
type Probes interface {
	// Enrol records a certificate issued to the probe name, by its
	// serial (lower-case hex). A serial enrolled already is an error.
	Enrol(ctx context.Context, name, serial string, at time.Time) error
	// Revoke marks every certificate of name revoked and returns how
	// many it marked (0: no such probe, or all revoked already).
	Revoke(ctx context.Context, name string, at time.Time) (int, error)
	// ProbeBySerial returns the name a serial was issued to and whether
	// it is revoked; ErrNotFound for a serial never enrolled. One indexed
	// lookup (the primary key): it runs on every request.
	ProbeBySerial(ctx context.Context, serial string) (name string, revoked bool, err error)
	// SetProbeConfig sets the agent configuration (TOML) the probe name
	// fetches, replacing any it had.
	SetProbeConfig(ctx context.Context, name string, config []byte, at time.Time) error
	// ProbeConfig returns name's configuration; ErrNotFound if none is set.
	ProbeConfig(ctx context.Context, name string) ([]byte, error)
	// EnrolledProbes lists every probe ever enrolled, by name, with
	// when it was enrolled and revoked and its last stored result.
	EnrolledProbes(ctx context.Context) ([]Probe, error)
}

// Probe is an enrolled probe as EnrolledProbes lists it: what an
// operator asks of a fleet (which probes, which are silent since when,
// which revoked). A zero time is "none".
type Probe struct {
	Name string
	// Enrolled is its newest enrolment (a re-keyed probe has several).
	Enrolled time.Time
	// Revoked is when its last credential in force was revoked; zero
	// while one is in force.
	Revoked time.Time
	// Last is the start of its newest stored result (any status, a
	// missed schedule too: the probe reported it); zero if it never
	// uploaded one.
	Last time.Time
}

// SilentSince is when the probe last spoke: its newest result, or its
// enrolment if it never uploaded one.
func (p Probe) SilentSince() time.Time {
	if p.Last.IsZero() {
		return p.Enrolled
	}
	return p.Last
}

var _ Probes = (*sqlStore)(nil)

func (s *sqlStore) Enrol(ctx context.Context, name, serial string, at time.Time) error {
	if name == "" || serial == "" {
		return errors.New("store: enrol: a probe needs a name and a serial")
	}
	if s.wmu != nil {
		s.wmu.Lock()
		defer s.wmu.Unlock()
	}
	q := s.q()
	q.sql("INSERT INTO probes (serial, name, enrolled) VALUES (").arg(serial).sql(", ").arg(name).sql(", ").arg(s.d.timeArg(at)).sql(")")
	if _, err := s.db.ExecContext(ctx, q.String(), q.args...); err != nil {
		return fmt.Errorf("store: enrol %s: %w", name, err)
	}
	return nil
}

func (s *sqlStore) Revoke(ctx context.Context, name string, at time.Time) (int, error) {
	if s.wmu != nil {
		s.wmu.Lock()
		defer s.wmu.Unlock()
	}
	q := s.q()
	q.sql("UPDATE probes SET revoked = ").arg(s.d.timeArg(at)).sql(" WHERE name = ").arg(name).sql(" AND revoked IS NULL")
	res, err := s.db.ExecContext(ctx, q.String(), q.args...)
	if err != nil {
		return 0, fmt.Errorf("store: revoke %s: %w", name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("store: revoke %s: %w", name, err)
	}
	return int(n), nil
}

func (s *sqlStore) ProbeBySerial(ctx context.Context, serial string) (string, bool, error) {
	q := s.q()
	q.sql("SELECT name, revoked IS NOT NULL FROM probes WHERE serial = ").arg(serial)
	var name string
	var revoked bool
	err := s.db.QueryRowContext(ctx, q.String(), q.args...).Scan(&name, &revoked)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, ErrNotFound
	}
	if err != nil {
		return "", false, fmt.Errorf("store: probe %s: %w", serial, err)
	}
	return name, revoked, nil
}

func (s *sqlStore) SetProbeConfig(ctx context.Context, name string, config []byte, at time.Time) error {
	if s.wmu != nil {
		s.wmu.Lock()
		defer s.wmu.Unlock()
	}
	q := s.q()
	q.sql("INSERT INTO probe_configs (name, config, updated) VALUES (").arg(name).sql(", ").arg(string(config)).sql(", ").arg(s.d.timeArg(at)).
		sql(") ON CONFLICT (name) DO UPDATE SET config = excluded.config, updated = excluded.updated")
	if _, err := s.db.ExecContext(ctx, q.String(), q.args...); err != nil {
		return fmt.Errorf("store: config of %s: %w", name, err)
	}
	return nil
}

func (s *sqlStore) ProbeConfig(ctx context.Context, name string) ([]byte, error) {
	q := s.q()
	q.sql("SELECT config FROM probe_configs WHERE name = ").arg(name)
	var c string
	err := s.db.QueryRowContext(ctx, q.String(), q.args...).Scan(&c)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: config of %s: %w", name, err)
	}
	return []byte(c), nil
}

// EnrolledProbes is one query: the probes grouped by name, and each
// one's newest result by the results' (agent, start) index, newest first
// and one row read (a seek per probe, not a scan of the results).
func (s *sqlStore) EnrolledProbes(ctx context.Context) ([]Probe, error) {
	rows, err := s.db.QueryContext(ctx, enrolledProbesQuery)
	if err != nil {
		return nil, fmt.Errorf("store: probes: %w", err)
	}
	defer rows.Close()
	var out []Probe
	for rows.Next() {
		var p Probe
		if err := rows.Scan(&p.Name, timeScan{&p.Enrolled}, nullTime{&p.Revoked}, nullTime{&p.Last}); err != nil {
			return nil, fmt.Errorf("store: probes: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: probes: %w", err)
	}
	return out, nil
}

// enrolledProbesQuery is EnrolledProbes' statement (no arguments): a
// name is revoked when every certificate of it is.
const enrolledProbesQuery = "SELECT p.name, MAX(p.enrolled), CASE WHEN COUNT(p.revoked) = COUNT(*) THEN MAX(p.revoked) END, " +
	"(SELECT r.start FROM results r WHERE r.agent = p.name ORDER BY r.start DESC LIMIT 1) " +
	"FROM probes p GROUP BY p.name ORDER BY p.name"

// nullTime reads a time column that may be NULL, as the zero time.
type nullTime struct{ t *time.Time }

func (n nullTime) Scan(src any) error {
	if src == nil {
		*n.t = time.Time{}
		return nil
	}
	return timeScan(n).Scan(src)
}
