//go:build !small

package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/pgtest"
)

// The store's benchmarks (make bench-store; docs/store.md has the figures
// and goals). Their timings are figures to read, never pass or fail.

// benchDoc is a real OB-UDPST document of a default 10 s test.
func benchDoc(b *testing.B, scenario string) []byte {
	doc, err := os.ReadFile(filepath.Join("..", "testdata", "obudpst", scenario, "client.json"))
	if err != nil {
		b.Fatal(err)
	}
	return doc
}

// benchResult is the i-th of n results spread over a year before end,
// alternating between two tests and four servers.
func benchResult(i, n int, end time.Time, doc []byte) *Result {
	r := result(i)
	r.ID = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
	r.Start = end.Add(-365 * 24 * time.Hour).Add(time.Duration(i) * (365 * 24 * time.Hour / time.Duration(n)))
	r.End = r.Start.Add(10 * time.Second)
	r.Test = []string{"home", "work"}[i%2]
	r.Server = fmt.Sprintf("s%d:25000", i%4)
	r.MaxMbps = f64(float64(i % 1200))
	r.Doc = doc
	return r
}

// seedSQLite writes n results into a new SQLite store in one transaction
// per 10,000 (the agent writes one at a time; seeding a year does not
// have to).
func seedSQLite(b *testing.B, path string, n int, doc []byte) *sqlStore {
	ctx := context.Background()
	st, err := Open(ctx, "sqlite:"+path)
	if err != nil {
		b.Fatal(err)
	}
	s := st.(*sqlStore)
	end := time.Now()
	for i := 0; i < n; {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		for stop := min(n, i+10000); i < stop; i++ {
			qs, err := s.insert(benchResult(i, n, end, doc))
			if err != nil {
				b.Fatal(err)
			}
			for _, q := range qs {
				if _, err := tx.ExecContext(ctx, q.String(), q.args...); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkSQLite100k: a store of 100,000 results over a year (50,000 of
// each of two tests), each with a real document: a year of one test for
// the page (goal: under 200 ms), the last 50 for a list, the fleet
// summary, and the bytes on disk per result (goal: under 30 KB).
func BenchmarkSQLite100k(b *testing.B) {
	const n = 100000
	path := filepath.Join(b.TempDir(), "results.db")
	s := seedSQLite(b, path, n, benchDoc(b, "ds_default_v4"))
	defer s.Close()
	ctx := context.Background()
	year := Filter{Test: "home", Since: time.Now().Add(-366 * 24 * time.Hour)}
	b.Run("SeriesYear1000Points", func(b *testing.B) {
		for b.Loop() {
			pts, err := s.Series(ctx, year, "max_mbps", 1000)
			if err != nil || len(pts) == 0 || len(pts) > 1000 {
				b.Fatalf("%d points, %v", len(pts), err)
			}
		}
	})
	b.Run("ListLast50", func(b *testing.B) {
		for b.Loop() {
			rs, err := s.List(ctx, Filter{Test: "home", Limit: 50})
			if err != nil || len(rs) != 50 {
				b.Fatalf("%d results, %v", len(rs), err)
			}
		}
	})
	b.Run("Fleet", func(b *testing.B) {
		for b.Loop() {
			f, err := s.Fleet(ctx, Filter{})
			if err != nil || len(f.Servers) != 4 {
				b.Fatalf("%+v, %v", f, err)
			}
		}
	})
	b.Run("BytesPerResult", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
				b.Fatal(err)
			}
		}
		size := int64(0)
		for _, suffix := range []string{"", "-wal"} {
			if st, err := os.Stat(path + suffix); err == nil {
				size += st.Size()
			}
		}
		b.ReportMetric(float64(size)/n, "bytes/result")
	})
}

// BenchmarkPostgresPut1000: 1,000 agents' uploads at once (one result
// each, 1,000 goroutines through one store's pool) into a durable
// (fsync=on) cluster; goal: under 10 s.
func BenchmarkPostgresPut1000(b *testing.B) {
	c := pgtest.Start(b, "fsync=on", "full_page_writes=on")
	ctx := context.Background()
	s, err := Open(ctx, c.NewDatabase(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	doc := benchDoc(b, "ds_default_v4")
	end := time.Now()
	next := 0
	for b.Loop() {
		var wg sync.WaitGroup
		errs := make(chan error, 1000)
		for range 1000 {
			r := benchResult(next, 1000, end, doc)
			r.ID = fmt.Sprintf("00000000-0000-4000-8000-%012d", next)
			r.Agent = fmt.Sprintf("agent-%d", next%1000)
			next++
			wg.Go(func() {
				if err := s.Put(ctx, r); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
}

// BenchmarkPostgresFleet1M: the fleet page's summary over 1,000,000
// results (1,000 agents, 50 servers, a year), whole and of its last 7
// days; goal: under 2 s. It logs EXPLAIN ANALYZE of both queries.
func BenchmarkPostgresFleet1M(b *testing.B) { benchPostgresFleet(b, 1000000) }

// BenchmarkPostgresFleet10M: the same over 10,000,000 results (the same
// agents and servers, ten times as many tests each); goal: under 2 s.
// Seeding takes minutes: make bench-store runs it, make bench skips it.
func BenchmarkPostgresFleet10M(b *testing.B) { benchPostgresFleet(b, 10000000) }

// benchPostgresFleet seeds n results and measures Fleet over all of them
// and over the last 7 days (the page's default range), in sub-benchmarks
// (-count repeats those, not the seeding). With UDPSTP_BENCH_PG set to a
// database's URL it uses that database instead of a throw-away cluster,
// seeds it only if it has fewer results, and keeps it: the next run
// reuses the seeded table.
func benchPostgresFleet(b *testing.B, n int) {
	ctx := context.Background()
	dsn := os.Getenv("UDPSTP_BENCH_PG")
	if dsn == "" {
		dsn = pgtest.Start(b, "fsync=on", "full_page_writes=on").NewDatabase(b)
	}
	opened := time.Now()
	st, err := Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	b.Logf("opened (and migrated) in %v", time.Since(opened).Round(time.Millisecond))
	s := st.(*sqlStore)
	var have int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM results").Scan(&have); err != nil {
		b.Fatal(err)
	}
	if have < n {
		seedPostgresFleet(b, s, n)
	}
	for _, c := range []struct {
		name string
		f    Filter
	}{{"All", Filter{}}, {"Last7Days", Filter{Since: time.Now().Add(-7 * 24 * time.Hour)}}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				f, err := s.Fleet(ctx, c.f)
				if err != nil || len(f.Servers) != 50 || len(f.Agents) != 1000 {
					b.Fatalf("%d servers, %d agents, %v", len(f.Servers), len(f.Agents), err)
				}
			}
			b.StopTimer()
			for _, q := range []*query{s.fleetServersQuery(c.f), s.fleetAgentsQuery(c.f)} {
				b.Logf("EXPLAIN ANALYZE\n%s", explain(b, s, q))
			}
		})
	}
}

// seedPostgresFleet writes n results over the year before now into s's
// empty database in the server (generate_series; without documents:
// TOAST keeps them out of the rows the summary reads), with its indexes
// built after (from pg_indexes: the migrations' own definitions), which
// is several times faster than maintaining them row by row.
func seedPostgresFleet(b *testing.B, s *sqlStore, n int) {
	ctx := context.Background()
	start := time.Now()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string, args ...any) {
		if _, err := conn.ExecContext(ctx, q, args...); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	rows, err := conn.QueryContext(ctx, "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'results' AND indexname LIKE 'results\\_%' AND indexname <> 'results_pkey'")
	if err != nil {
		b.Fatal(err)
	}
	indexes := map[string]string{}
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			b.Fatal(err)
		}
		indexes[name] = def
	}
	rows.Close()
	exec("SET maintenance_work_mem = '256MB'")
	exec("TRUNCATE results CASCADE")
	for name := range indexes {
		exec("DROP INDEX " + name)
	}
	exec(`INSERT INTO results (id, origin, test, agent, server, start, "end",
		direction, status, error_status, max_mbps, summary_mbps, rtt_min_ms)
		SELECT 'id-' || i, 'client', 'test-' || (i % 3), 'agent-' || (i % 1000), 'server-' || (i % 50) || ':25000',
			now() - make_interval(secs => i * $1::float8), now() - make_interval(secs => i * $1::float8 - 10),
			CASE i % 2 WHEN 0 THEN 'down' ELSE 'up' END,
			CASE WHEN i % 97 = 0 THEN 'missed' WHEN i % 31 = 0 THEN 'error' WHEN i % 7 = 0 THEN 'warning' ELSE 'ok' END,
			CASE WHEN i % 31 = 0 THEN 50 WHEN i % 7 = 0 THEN 1 ELSE 0 END,
			CASE WHEN i % 97 = 0 THEN NULL ELSE (i % 12000) / 3.0 END, (i % 12000) / 3.5, 1 + (i % 40)
		FROM generate_series(1, $2::int) AS i`, 3e7/float64(n), n)
	for _, def := range indexes {
		exec(def)
	}
	exec("VACUUM ANALYZE")
	b.Logf("seeded %d results in %v", n, time.Since(start).Round(time.Second))
}

// explain is q's EXPLAIN (ANALYZE, BUFFERS).
func explain(b *testing.B, s *sqlStore, q *query) string {
	rows, err := s.db.Query("EXPLAIN (ANALYZE, BUFFERS) "+q.String(), q.args...)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			b.Fatal(err)
		}
		plan = append(plan, line)
	}
	return strings.Join(plan, "\n")
}
