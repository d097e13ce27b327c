//go:build !small

package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The fleet summary (Store.Fleet) on the SQL engines. The counts come
// from the rollups (fleet_servers_by_day, fleet_agents_by_day:
// migrations/*/00004_fleet_rollup.sql), which count the results per UTC
// day, where f allows it, and from the results themselves otherwise and
// for the parts of days at either end of f's time range (docs/store.md,
// "The fleet summary").

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

// day is a UTC day's length: the rollups' unit.
const day = 24 * time.Hour

// fleetSplit is how Fleet reads what f selects: the whole UTC days in
// f's range from a rollup (days, when not nil), and raw, the filters of
// the results read one by one: f itself when the rollup cannot answer f,
// else the parts of days at the ends of f's range.
type fleetSplit struct {
	days *dayRange
	raw  []Filter
}

// dayRange is [from, to), each bound only where it is set.
type dayRange struct {
	from, to       time.Time
	hasFrom, hasTo bool
}

// splitFleet splits f; rollup says whether the rollup has the columns of
// f's conditions.
func (s *sqlStore) splitFleet(f Filter, rollup bool) fleetSplit {
	whole := fleetSplit{raw: []Filter{f}}
	if !s.rollups || !rollup || f.Limit > 0 || !f.BeforeStart.IsZero() {
		return whole
	}
	days := dayRange{hasFrom: f.SinceSet || !f.Since.IsZero(), hasTo: f.UntilSet || !f.Until.IsZero()}
	var raw []Filter
	if days.hasFrom {
		// From the first midnight at or after Since; before it, the
		// results from Since.
		days.from = f.Since.UTC().Truncate(day)
		if days.from.Before(f.Since) {
			days.from = days.from.Add(day)
			g := f
			g.Until, g.UntilSet = days.from, true
			raw = append(raw, g)
		}
	}
	if days.hasTo {
		// To the last midnight at or before Until; after it, the
		// results up to Until.
		days.to = f.Until.UTC().Truncate(day)
		if days.to.Before(f.Until) {
			g := f
			g.Since, g.SinceSet = days.to, true
			raw = append(raw, g)
		}
	}
	if days.hasFrom && days.hasTo && !days.from.Before(days.to) {
		return whole // no whole day in range
	}
	return fleetSplit{days: &days, raw: raw}
}

// rollupWhere appends the conditions of f but its time range (a rollup's
// columns are named as results') and the days' bounds.
func (q *query) rollupWhere(f Filter, days *dayRange) {
	g := f
	g.Since, g.SinceSet, g.Until, g.UntilSet = time.Time{}, false, time.Time{}, false
	q.where(g, "")
	if days.hasFrom {
		q.sql(" AND day >= ").arg(q.d.timeArg(days.from))
	}
	if days.hasTo {
		q.sql(" AND day < ").arg(q.d.timeArg(days.to))
	}
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
	at := map[string]int{} // a server's index in out.Servers
	for rows.Next() {
		var server, status string
		var bucket sql.NullInt64
		var n int
		if err := rows.Scan(&server, &status, &bucket, &n); err != nil {
			return err
		}
		// One server's names (a probe's host:port, its archive's name)
		// are one row (ServerName); so are its rows from the rollup and
		// from the results.
		server = ServerName(server)
		i, ok := at[server]
		if !ok {
			i = len(out.Servers)
			at[server] = i
			out.Servers = append(out.Servers, ServerSummary{
				Server: server, ByStatus: map[Status]int{}, Capacity: make([]int, len(CapacityEdges)),
			})
		}
		cur := &out.Servers[i]
		cur.Tests += n
		cur.ByStatus[Status(status)] += n
		if bucket.Valid && bucket.Int64 >= 0 && bucket.Int64 < int64(len(cur.Capacity)) {
			cur.Capacity[bucket.Int64] += n
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	slices.SortFunc(out.Servers, func(a, b ServerSummary) int { return strings.Compare(a.Server, b.Server) })
	return nil
}

// fleetServersQuery: server, status, bucket (NULL or -1: none) and a
// count, from fleet_servers_by_day (which has no test, direction or
// agent) and the results; a group may come twice.
func (s *sqlStore) fleetServersQuery(f Filter) *query {
	sp := s.splitFleet(f, f.Test == "" && f.Direction == "" && f.Agent == "" && len(f.Agents) == 0)
	q := s.q()
	parts := 0
	if sp.days != nil {
		q.sql("SELECT server, status, bucket, CAST(SUM(n) AS BIGINT) FROM fleet_servers_by_day WHERE 1 = 1")
		q.rollupWhere(f, sp.days)
		q.sql(" GROUP BY server, status, bucket")
		parts++
	}
	for _, g := range sp.raw {
		if parts++; parts > 1 {
			q.sql(" UNION ALL ")
		}
		// The bucket of a maximum: the highest edge at or below it;
		// none for no maximum (or a negative one).
		q.sql("SELECT server, status, CASE")
		for i := len(CapacityEdges) - 1; i >= 0; i-- {
			q.sql(" WHEN max_mbps >= " + edge(CapacityEdges[i]) + " THEN " + strconv.Itoa(i))
		}
		q.sql(" END, COUNT(*) FROM ")
		q.selected(g, "server, status, max_mbps")
		q.sql(" GROUP BY 1, 2, 3")
	}
	return q
}

// edge is a capacity edge as an SQL literal.
func edge(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// fleetAgents counts per agent, and finds each agent's last result.
func (s *sqlStore) fleetAgents(ctx context.Context, f Filter, out *Fleet) error {
	if f.Origin != "" && f.Origin != OriginClient {
		return nil // only servers' records: no probe
	}
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
		out.Agents = append(out.Agents, a)
	}
	return rows.Err()
}

// fleetAgentsQuery: per agent, its count and missed count summed from
// fleet_agents_by_day (which has no test, direction, server or status)
// and the results, and its last result: each agent's newest that f
// selects (two that started at once: the greater ID), read newest first
// from the (agent, start) index and stopped at the first.
func (s *sqlStore) fleetAgentsQuery(f Filter) *query {
	// The probes are the clients: a server's archive records (Origin
	// server) name the server as their Agent, and are the servers' rows,
	// not a probe's (docs/fleet.md, "The server's archive").
	if f.Origin == "" {
		f.Origin = OriginClient
	}
	sp := s.splitFleet(f, f.Test == "" && f.Direction == "" && f.Server == "" && f.Status == "")
	q := s.q()
	q.sql("SELECT a.agent, a.n, a.missed, l.start, l.status, l.max_mbps FROM (SELECT c.agent, c.n, c.missed, " +
		"(SELECT r.id FROM results r WHERE r.agent = c.agent")
	q.where(f, "r")
	q.sql(" ORDER BY r.start DESC, r.id DESC LIMIT 1) AS last FROM " +
		"(SELECT agent, CAST(SUM(n) AS BIGINT) AS n, CAST(SUM(missed) AS BIGINT) AS missed FROM (")
	parts := 0
	if sp.days != nil {
		q.sql("SELECT agent, n, missed FROM fleet_agents_by_day WHERE 1 = 1")
		q.rollupWhere(f, sp.days)
		parts++
	}
	for _, g := range sp.raw {
		if parts++; parts > 1 {
			q.sql(" UNION ALL ")
		}
		q.sql("SELECT agent, COUNT(*) AS n, SUM(CASE WHEN status = '" + string(StatusMissed) + "' THEN 1 ELSE 0 END) AS missed FROM ")
		q.selected(g, "agent, status")
		q.sql(" GROUP BY agent")
	}
	q.sql(") p GROUP BY agent) c) a JOIN results l ON l.id = a.last ORDER BY a.agent")
	return q
}
