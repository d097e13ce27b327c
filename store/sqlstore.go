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
}

// columns are results' columns, in the order Result.dest has them.
const columns = `id, origin, test, agent, server, client, start, "end", direction, status, error_status, warning, ` +
	`max_mbps, summary_mbps, loss_ratio, rtt_min_ms, rtt_range_ms, delay_var_ms, loaded_ms, rpm, grade`

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
	eq("server", f.Server)
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
	if !f.Since.IsZero() {
		q.sql(" AND " + col("start") + " >= ").arg(q.d.timeArg(f.Since))
	}
	if !f.Until.IsZero() {
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

func (s *sqlStore) q() *query { return &query{d: s.d} }

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
		text(r.Grade),
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
	q.sql("SELECT " + columns + ", (SELECT doc FROM result_docs WHERE result_docs.id = results.id) FROM results WHERE id = ").arg(id)
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
		&r.Grade,
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
		q.sql("SELECT " + columns + " FROM (SELECT " + columns +
			", ROW_NUMBER() OVER (PARTITION BY agent ORDER BY start DESC, id DESC) AS nth FROM results WHERE 1 = 1")
		q.where(f, "")
		q.sql(") p WHERE nth <= ").arg(f.PerAgent)
	default:
		q.sql("SELECT " + columns + " FROM results WHERE 1 = 1")
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
		q.sql("SELECT * FROM (SELECT " + columns + " FROM results WHERE 1 = 1")
		q.where(g, "")
		q.sql(" ORDER BY start DESC, id DESC LIMIT ").arg(f.PerAgent)
		q.sql(") a" + strconv.Itoa(n))
	}
	if n == 0 {
		q.sql("SELECT " + columns + " FROM results WHERE 1 = 0")
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

func (s *sqlStore) exec(ctx context.Context, q *query) (int, error) {
	res, err := s.db.ExecContext(ctx, q.String(), q.args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func (s *sqlStore) Fleet(ctx context.Context, f Filter) (*Fleet, error) {
	out := &Fleet{}
	if err := s.fleetServers(ctx, f, out); err != nil {
		return nil, fmt.Errorf("store: fleet's servers: %w", err)
	}
	if err := s.fleetAgents(ctx, f, out); err != nil {
		return nil, fmt.Errorf("store: fleet's agents: %w", err)
	}
	return out, nil
}

// fleetServers counts per server, status and capacity bucket (one CASE
// gives a maximum's bucket: one comparison chain per row, not one sum per
// bucket); Go only adds the counts up.
func (s *sqlStore) fleetServers(ctx context.Context, f Filter, out *Fleet) error {
	q := s.fleetServersQuery(f)
	rows, err := s.db.QueryContext(ctx, q.String(), q.args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var cur *ServerSummary
	for rows.Next() {
		var server, status string
		var bucket sql.NullInt64
		var n int
		if err := rows.Scan(&server, &status, &bucket, &n); err != nil {
			return err
		}
		if cur == nil || cur.Server != server {
			out.Servers = append(out.Servers, ServerSummary{
				Server: server, ByStatus: map[Status]int{}, Capacity: make([]int, len(CapacityEdges)),
			})
			cur = &out.Servers[len(out.Servers)-1]
		}
		cur.Tests += n
		cur.ByStatus[Status(status)] += n
		if bucket.Valid && bucket.Int64 >= 0 && bucket.Int64 < int64(len(cur.Capacity)) {
			cur.Capacity[bucket.Int64] += n
		}
	}
	return rows.Err()
}

func (s *sqlStore) fleetServersQuery(f Filter) *query {
	q := s.q()
	// The bucket of a maximum: the highest edge at or below it; none for
	// no maximum (or a negative one).
	q.sql("SELECT server, status, CASE")
	for i := len(CapacityEdges) - 1; i >= 0; i-- {
		q.sql(" WHEN max_mbps >= " + edge(CapacityEdges[i]) + " THEN " + strconv.Itoa(i))
	}
	q.sql(" END, COUNT(*) FROM ")
	q.selected(f, "server, status, max_mbps")
	q.sql(" GROUP BY 1, 2, 3 ORDER BY 1, 2")
	return q
}

// edge is a capacity edge as an SQL literal.
func edge(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// fleetAgents counts per agent, and joins each agent's last result (the
// (agent, start) index finds it).
func (s *sqlStore) fleetAgents(ctx context.Context, f Filter, out *Fleet) error {
	q := s.fleetAgentsQuery(f)
	rows, err := s.db.QueryContext(ctx, q.String(), q.args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var a AgentSummary
		var status string
		if err := rows.Scan(&a.Agent, &a.Tests, &a.Missed, timeScan{&a.Last}, &status, &a.LastMaxMbps); err != nil {
			return err
		}
		a.LastStatus = Status(status)
		// Two results of one agent that started at the same time: the
		// first (the greater ID) is its last.
		if n := len(out.Agents); n > 0 && out.Agents[n-1].Agent == a.Agent {
			continue
		}
		out.Agents = append(out.Agents, a)
	}
	return rows.Err()
}

func (s *sqlStore) fleetAgentsQuery(f Filter) *query {
	q := s.q()
	q.sql("SELECT a.agent, a.n, a.missed, l.start, l.status, l.max_mbps FROM (SELECT agent, COUNT(*) AS n, " +
		"SUM(CASE WHEN status = '" + string(StatusMissed) + "' THEN 1 ELSE 0 END) AS missed, MAX(start) AS last FROM ")
	q.selected(f, "agent, status, start")
	q.sql(" GROUP BY agent) a JOIN results l ON l.agent = a.agent AND l.start = a.last")
	q.where(f, "l")
	q.sql(" ORDER BY a.agent, l.id DESC")
	return q
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

// compress gzips a result's document; an empty one is stored as NULL.
func compress(doc []byte) ([]byte, error) {
	if len(doc) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
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
