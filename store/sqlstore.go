//go:build !small

package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// dialect is what differs between the SQL engines: placeholders and how a
// time is stored (SQLite: integer microseconds since the epoch, UTC;
// PostgreSQL: timestamptz). Every query is written once, in sqlStore.
type dialect struct {
	// dollar: $1, $2... placeholders (PostgreSQL); else ?.
	dollar bool
	// timeArg turns a time into the value its column takes.
	timeArg func(time.Time) any
	// epochUS is an SQL expression (fmt verb %s: a time column) giving the
	// time in whole microseconds since the epoch, for Series' buckets.
	epochUS string
}

// sqlStore is the Store both SQL engines share, over database/sql.
type sqlStore struct {
	db *sql.DB
	d  *dialect
	// wmu, when set, serialises this process's writes (SQLite has one
	// writer at a time; waiting here is cheaper than its busy loop).
	wmu *sync.Mutex
	// readCols are the columns its queries read: columns, or for a
	// reader of an older schema (schemaColumns) the columns it has and
	// stand-ins for the others.
	readCols string
	// rollups: the schema has the fleet summary's rollups (a writer's
	// always; a reader's from fleetRollupVersion).
	rollups bool
}

// columns are results' columns, in the order Result.dest has them.
const columns = `id, origin, test, agent, server, client, start, "end", direction, status, error_status, warning, ` +
	`max_mbps, summary_mbps, loss_ratio, rtt_min_ms, rtt_range_ms, delay_var_ms, loaded_ms, rpm, grade, ` +
	`cross_mbps, cross_busy`

// figures are the columns Series may read, by the names it takes.
var figures = map[string]bool{
	"max_mbps": true, "summary_mbps": true, "loss_ratio": true, "rtt_min_ms": true,
	"rtt_range_ms": true, "delay_var_ms": true, "loaded_ms": true, "rpm": true,
}

// maxPoints bounds Series' points (far above any screen's width).
const maxPoints = 100000

// query builds one statement and its arguments, numbering placeholders
// as the dialect wants them.
type query struct {
	d    *dialect
	cols string // the sqlStore's readCols
	sb   strings.Builder
	args []any
}

func (q *query) sql(s string) *query { q.sb.WriteString(s); return q }

// arg appends v's placeholder.
func (q *query) arg(v any) *query {
	q.args = append(q.args, v)
	if q.d.dollar {
		q.sb.WriteString("$" + strconv.Itoa(len(q.args)))
	} else {
		q.sb.WriteString("?")
	}
	return q
}

func (q *query) String() string { return q.sb.String() }

// where appends f's conditions (but its Limit) on the columns of alias
// (a table name or "" for none), each as "AND ...".
func (q *query) where(f Filter, alias string) {
	col := func(c string) string {
		if alias == "" {
			return c
		}
		return alias + "." + c
	}
	eq := func(c, v string) {
		if v != "" {
			q.sql(" AND " + col(c) + " = ").arg(v)
		}
	}
	eq("origin", string(f.Origin))
	eq("test", f.Test)
	eq("agent", f.Agent)
	if f.Server != "" {
		// One server under each of its names (ServerName).
		q.sql(" AND " + col("server") + " IN (")
		for i, x := range serverForms(f.Server) {
			if i > 0 {
				q.sql(", ")
			}
			q.arg(x)
		}
		q.sql(")")
	}
	eq("direction", f.Direction)
	eq("status", string(f.Status))
	if len(f.Agents) > 0 {
		q.sql(" AND " + col("agent") + " IN (")
		for i, a := range f.Agents {
			if i > 0 {
				q.sql(", ")
			}
			q.arg(a)
		}
		q.sql(")")
	}
	if f.SinceSet || !f.Since.IsZero() {
		q.sql(" AND " + col("start") + " >= ").arg(q.d.timeArg(f.Since))
	}
	if f.UntilSet || !f.Until.IsZero() {
		q.sql(" AND " + col("start") + " < ").arg(q.d.timeArg(f.Until))
	}
	if !f.BeforeStart.IsZero() {
		q.sql(" AND " + col("start") + " < ").arg(q.d.timeArg(f.BeforeStart))
	}
}

// selected appends a subquery, aliased r, of the rows f selects (its
// newest f.Limit with a limit), with the columns cols.
func (q *query) selected(f Filter, cols string) {
	q.sql("(SELECT " + cols + " FROM results WHERE 1 = 1")
	q.where(f, "")
	if f.Limit > 0 {
		q.sql(" ORDER BY start DESC, id DESC LIMIT ").arg(f.Limit)
	}
	q.sql(") r")
}

func (s *sqlStore) q() *query {
	cols := s.readCols
	if cols == "" {
		cols = columns
	}
	return &query{d: s.d, cols: cols}
}

// schemaColumns are the columns a reader of a store at schema version v
// selects: before version 3 there are no cross-traffic columns, and the
// rows read as unmeasured (docs/store.md). A reader never upgrades a
// store, so an older one stays readable this way.
func schemaColumns(v int64) string {
	if v >= crossTrafficVersion {
		return columns
	}
	return strings.TrimSuffix(columns, "cross_mbps, cross_busy") + "CAST(NULL AS REAL) AS cross_mbps, (0 = 1) AS cross_busy"
}

func (s *sqlStore) Put(ctx context.Context, r *Result) error {
	qs, err := s.insert(r)
	if err != nil {
		return err
	}
	if s.wmu != nil {
		s.wmu.Lock()
		defer s.wmu.Unlock()
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: put %s: %w", r.ID, err)
	}
	defer tx.Rollback()
	for _, q := range qs {
		if _, err := tx.ExecContext(ctx, q.String(), q.args...); err != nil {
			return fmt.Errorf("store: put %s: %w", r.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: put %s: %w", r.ID, err)
	}
	return nil
}

// insert is Put's statements, for one transaction: r's row and its
// document's, unless they are there. The document has a table of its own
// so that the rows lists, series and summaries read stay small (a
// document, compressed, is as large as ten rows).
func (s *sqlStore) insert(r *Result) ([]*query, error) {
	if r.ID == "" {
		return nil, errors.New("store: put: a result without an ID")
	}
	if r.Start.IsZero() || r.Status == "" || r.Origin == "" {
		return nil, fmt.Errorf("store: put %s: a result needs its origin, start and status", r.ID)
	}
	doc, err := compress(r.Doc)
	if err != nil {
		return nil, fmt.Errorf("store: put %s: %w", r.ID, err)
	}
	q := s.q()
	q.sql("INSERT INTO results (" + columns + ") VALUES (")
	for i, v := range []any{
		text(r.ID), text(string(r.Origin)), text(r.Test), text(r.Agent), text(r.Server), text(r.Client),
		s.d.timeArg(r.Start), s.d.timeArg(r.End),
		text(r.Direction), text(string(r.Status)), r.ErrorStatus, text(r.Warning),
		r.MaxMbps, r.SummaryMbps, r.LossRatio, r.RTTMinMs, r.RTTRangeMs, r.DelayVarMs, r.LoadedMs, r.RPM,
		text(r.Grade), r.CrossMbps, r.CrossBusy,
	} {
		if i > 0 {
			q.sql(", ")
		}
		q.arg(v)
	}
	// A retried write (same ID) changes nothing and succeeds.
	q.sql(") ON CONFLICT (id) DO NOTHING")
	if doc == nil {
		return []*query{q}, nil
	}
	d := s.q()
	d.sql("INSERT INTO result_docs (id, doc) VALUES (").arg(text(r.ID)).sql(", ").arg(doc).sql(") ON CONFLICT (id) DO NOTHING")
	return []*query{q, d}, nil
}

func (s *sqlStore) Get(ctx context.Context, id string) (*Result, error) {
	q := s.q()
	q.sql("SELECT " + q.cols + ", (SELECT doc FROM result_docs WHERE result_docs.id = results.id) FROM results WHERE id = ").arg(id)
	var r Result
	var doc []byte
	err := s.db.QueryRowContext(ctx, q.String(), q.args...).Scan(append(r.dest(), &doc)...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: get %s: %w", id, err)
	}
	if r.Doc, err = decompress(doc); err != nil {
		return nil, fmt.Errorf("store: get %s: its document: %w", id, err)
	}
	return &r, nil
}

// dest are the scan destinations of columns, in r.
func (r *Result) dest() []any {
	return []any{
		&r.ID, (*string)(&r.Origin), &r.Test, &r.Agent, &r.Server, &r.Client, timeScan{&r.Start}, timeScan{&r.End},
		&r.Direction, (*string)(&r.Status), &r.ErrorStatus, &r.Warning,
		&r.MaxMbps, &r.SummaryMbps, &r.LossRatio, &r.RTTMinMs, &r.RTTRangeMs, &r.DelayVarMs, &r.LoadedMs, &r.RPM,
		&r.Grade, &r.CrossMbps, &r.CrossBusy,
	}
}

func (s *sqlStore) List(ctx context.Context, f Filter) ([]Result, error) {
	if f.PerAgent < 0 {
		return nil, fmt.Errorf("store: list: %d per agent", f.PerAgent)
	}
	q := s.q()
	switch {
	case f.PerAgent > 0 && len(f.Agents) > 0 && len(f.Agents) <= maxPerAgentUnion:
		q.perAgentUnion(f)
	case f.PerAgent > 0:
		// Each agent's rows numbered newest first: a window function,
		// in both engines, over every row f selects.
		q.sql("SELECT " + columns + " FROM (SELECT " + q.cols +
			", ROW_NUMBER() OVER (PARTITION BY agent ORDER BY start DESC, id DESC) AS nth FROM results WHERE 1 = 1")
		q.where(f, "")
		q.sql(") p WHERE nth <= ").arg(f.PerAgent)
	default:
		q.sql("SELECT " + q.cols + " FROM results WHERE 1 = 1")
		q.where(f, "")
	}
	q.sql(" ORDER BY start DESC, id DESC")
	if f.Limit > 0 {
		q.sql(" LIMIT ").arg(f.Limit)
	}
	rows, err := s.db.QueryContext(ctx, q.String(), q.args...)
	if err != nil {
		return nil, fmt.Errorf("store: list: %w", err)
	}
	defer rows.Close()
	var out []Result
	for rows.Next() {
		var r Result
		if err := rows.Scan(r.dest()...); err != nil {
			return nil, fmt.Errorf("store: list: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list: %w", err)
	}
	return out, nil
}

// maxPerAgentUnion bounds the agents perAgentUnion takes (SQLite's
// compound SELECT has at most 500 terms); more go to the window function.
const maxPerAgentUnion = 200

// perAgentUnion selects f.PerAgent rows of each of f.Agents as one
// UNION ALL of a subquery per agent, each read newest first from the
// (agent, start) index and stopped after f.PerAgent rows: a page's few
// agents cost a few index reads each, where a window function would
// number every row of theirs in range (docs/store.md, "Schema").
func (q *query) perAgentUnion(f Filter) {
	g := f
	g.Agents, g.Limit, g.PerAgent = nil, 0, 0
	q.sql("SELECT " + columns + " FROM (")
	n := 0
	for _, a := range f.Agents {
		if f.Agent != "" && a != f.Agent {
			continue // both must hold
		}
		if n > 0 {
			q.sql(" UNION ALL ")
		}
		n++
		g.Agent = a
		q.sql("SELECT * FROM (SELECT " + q.cols + " FROM results WHERE 1 = 1")
		q.where(g, "")
		q.sql(" ORDER BY start DESC, id DESC LIMIT ").arg(f.PerAgent)
		q.sql(") a" + strconv.Itoa(n))
	}
	if n == 0 {
		q.sql("SELECT " + q.cols + " FROM results WHERE 1 = 0")
	}
	q.sql(") u")
}

func (s *sqlStore) Series(ctx context.Context, f Filter, figure string, points int) ([]Point, error) {
	if !figures[figure] {
		return nil, fmt.Errorf("store: series: no figure %q", figure)
	}
	if points < 1 {
		return nil, fmt.Errorf("store: series: %d points", points)
	}
	points = min(points, maxPoints)
	epoch := fmt.Sprintf(s.d.epochUS, "start")
	// The span and count first, from the index alone: the buckets' width
	// is the span over points.
	q := s.q()
	q.sql("SELECT MIN(e), MAX(e), COUNT(*) FROM ")
	q.selected(f, epoch+" AS e")
	var lo, hi sql.NullInt64
	var n int
	if err := s.db.QueryRowContext(ctx, q.String(), q.args...).Scan(&lo, &hi, &n); err != nil {
		return nil, fmt.Errorf("store: series %s: %w", figure, err)
	}
	if n == 0 {
		return nil, nil
	}
	q = s.q()
	if n <= points {
		// Every result fits: the results themselves.
		q.sql("SELECT e, v FROM ")
		q.selected(f, epoch+" AS e, "+figure+" AS v")
		q.sql(" WHERE v IS NOT NULL ORDER BY e")
	} else {
		// Buckets of equal width w, numbered from 0 at the first result:
		// (hi-lo)/w < points, so there are at most points of them. Each
		// is its points' mean time and mean figure; times are averaged
		// from the first (small numbers: no overflow, exact in a double).
		w := (hi.Int64-lo.Int64)/int64(points) + 1
		q.sql("SELECT CAST(AVG(e) AS DOUBLE PRECISION), CAST(AVG(v) AS DOUBLE PRECISION) FROM (SELECT (e - ")
		q.arg(lo.Int64).sql(") / ").arg(w)
		q.sql(" AS b, e - ").arg(lo.Int64).sql(" AS e, v FROM ")
		q.selected(f, epoch+" AS e, "+figure+" AS v")
		q.sql(" WHERE v IS NOT NULL) s GROUP BY b ORDER BY b")
	}
	rows, err := s.db.QueryContext(ctx, q.String(), q.args...)
	if err != nil {
		return nil, fmt.Errorf("store: series %s: %w", figure, err)
	}
	var base int64 // what e is counted from
	if n > points {
		base = lo.Int64
	}
	defer rows.Close()
	out := make([]Point, 0, min(n, points))
	for rows.Next() {
		var e, v float64
		if err := rows.Scan(&e, &v); err != nil {
			return nil, fmt.Errorf("store: series %s: %w", figure, err)
		}
		out = append(out, Point{T: time.UnixMicro(base + int64(math.Round(e))).UTC(), V: v})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: series %s: %w", figure, err)
	}
	return out, nil
}

func (s *sqlStore) Prune(ctx context.Context, r Retention) (int, error) {
	if r.MaxAge < 0 || r.MaxCount < 0 {
		return 0, fmt.Errorf("store: prune: negative retention %v", r)
	}
	if s.wmu != nil {
		s.wmu.Lock()
		defer s.wmu.Unlock()
	}
	deleted := 0
	if r.MaxAge > 0 {
		q := s.q()
		q.sql("DELETE FROM results WHERE start < ").arg(s.d.timeArg(time.Now().Add(-r.MaxAge)))
		n, err := s.exec(ctx, q)
		if err != nil {
			return deleted, fmt.Errorf("store: prune by age: %w", err)
		}
		deleted += n
	}
	if r.MaxCount > 0 {
		// The oldest kept result: everything older goes.
		q := s.q()
		q.sql("SELECT start, id FROM results ORDER BY start DESC, id DESC LIMIT 1 OFFSET ").arg(r.MaxCount - 1)
		var start time.Time
		var id string
		err := s.db.QueryRowContext(ctx, q.String(), q.args...).Scan(timeScan{&start}, &id)
		if errors.Is(err, sql.ErrNoRows) {
			return deleted, nil
		}
		if err != nil {
			return deleted, fmt.Errorf("store: prune by count: %w", err)
		}
		q = s.q()
		q.sql("DELETE FROM results WHERE start < ").arg(s.d.timeArg(start))
		q.sql(" OR (start = ").arg(s.d.timeArg(start)).sql(" AND id < ").arg(id).sql(")")
		n, err := s.exec(ctx, q)
		if err != nil {
			return deleted, fmt.Errorf("store: prune by count: %w", err)
		}
		deleted += n
	}
	return deleted, nil
}

// Delete removes the result id (its document goes with it, ON DELETE
// CASCADE); an ID not there is no error. A spool's local store drops what
// the remote took (SpoolOptions.DropUploaded).
func (s *sqlStore) Delete(ctx context.Context, id string) error {
	if s.wmu != nil {
		s.wmu.Lock()
		defer s.wmu.Unlock()
	}
	q := s.q()
	q.sql("DELETE FROM results WHERE id = ").arg(id)
	if _, err := s.exec(ctx, q); err != nil {
		return fmt.Errorf("store: delete %s: %w", id, err)
	}
	return nil
}

func (s *sqlStore) exec(ctx context.Context, q *query) (int, error) {
	res, err := s.db.ExecContext(ctx, q.String(), q.args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func (s *sqlStore) Close() error { return s.db.Close() }

// timeScan reads a time column: integer microseconds (SQLite) or a
// timestamp (PostgreSQL), as UTC.
type timeScan struct{ t *time.Time }

func (ts timeScan) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		*ts.t = time.UnixMicro(v).UTC()
	case time.Time:
		*ts.t = v.UTC()
	default:
		return fmt.Errorf("a time column holds %T", src)
	}
	return nil
}

// text is s as a text column takes it: PostgreSQL refuses invalid UTF-8
// and NUL, and a result must not be lost for a byte of a peer's message
// (OB-UDPST's ErrorMessage comes from the server), so both engines store
// U+FFFD for them.
func text(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// gzips are compress's writers, reused: a new one allocates about 800 KB
// of tables and costs ten times a 6 KB document's compression, and a
// collector taking a thousand uploads at once made that garbage a
// thousand times over (docs/fleet.md, "Figures: 1,000 probes at once").
var gzips = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestCompression) // a valid level: no error
	return w
}}

// compress gzips a result's document; an empty one is stored as NULL.
func compress(doc []byte) ([]byte, error) {
	if len(doc) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	w := gzips.Get().(*gzip.Writer)
	defer gzips.Put(w)
	w.Reset(&b)
	if _, err := w.Write(doc); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// maxDoc bounds a stored document once decompressed (a damaged or
// hostile row must not fill memory): far above OB-UDPST's largest.
const maxDoc = 64 << 20

func decompress(doc []byte) ([]byte, error) {
	if doc == nil {
		return nil, nil
	}
	r, err := gzip.NewReader(bytes.NewReader(doc))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(r, maxDoc+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxDoc {
		return nil, fmt.Errorf("over %d bytes decompressed", maxDoc)
	}
	return out, nil
}
