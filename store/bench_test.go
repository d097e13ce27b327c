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

	"github.com/udpstp/udpstp/internal/pgtest"
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
// results (1,000 agents, 50 servers), seeded by generate_series in the
// server (without documents: TOAST keeps them out of the rows the summary
// reads); goal: under 2 s. It logs EXPLAIN ANALYZE of both queries.
func BenchmarkPostgresFleet1M(b *testing.B) {
	c := pgtest.Start(b, "fsync=on", "full_page_writes=on")
	ctx := context.Background()
	st, err := Open(ctx, c.NewDatabase(b))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	s := st.(*sqlStore)
	if _, err := s.db.ExecContext(ctx, `INSERT INTO results (id, origin, test, agent, server, start, "end",
		direction, status, error_status, max_mbps, summary_mbps, rtt_min_ms)
		SELECT 'id-' || i, 'client', 'test-' || (i % 3), 'agent-' || (i % 1000), 'server-' || (i % 50) || ':25000',
			now() - make_interval(secs => i * 30), now() - make_interval(secs => i * 30 - 10),
			CASE i % 2 WHEN 0 THEN 'down' ELSE 'up' END,
			CASE WHEN i % 97 = 0 THEN 'missed' WHEN i % 31 = 0 THEN 'error' WHEN i % 7 = 0 THEN 'warning' ELSE 'ok' END,
			CASE WHEN i % 31 = 0 THEN 50 WHEN i % 7 = 0 THEN 1 ELSE 0 END,
			CASE WHEN i % 97 = 0 THEN NULL ELSE (i % 12000) / 3.0 END, (i % 12000) / 3.5, 1 + (i % 40)
		FROM generate_series(1, 1000000) AS i`); err != nil {
		b.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, "VACUUM ANALYZE results"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		f, err := s.Fleet(ctx, Filter{})
		if err != nil || len(f.Servers) != 50 || len(f.Agents) != 1000 {
			b.Fatalf("%d servers, %d agents, %v", len(f.Servers), len(f.Agents), err)
		}
	}
	b.StopTimer()
	for _, q := range []*query{s.fleetServersQuery(Filter{}), s.fleetAgentsQuery(Filter{})} {
		rows, err := s.db.QueryContext(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+q.String(), q.args...)
		if err != nil {
			b.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				b.Fatal(err)
			}
			plan = append(plan, line)
		}
		rows.Close()
		b.Logf("EXPLAIN ANALYZE\n%s", strings.Join(plan, "\n"))
	}
}
