//go:build !small

package store

import (
	"context"
	"io/fs"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pressly/goose/v3"
)

// migrateDown takes s's schema down to version v with the migrations'
// Down sections: a store as an older udpstp left it.
func migrateDown(t *testing.T, s *sqlStore, v int64) {
	t.Helper()
	dialect, dir := goose.DialectSQLite3, "sqlite"
	if s.d.dollar {
		dialect, dir = goose.DialectPostgres, "postgres"
	}
	sub, err := fs.Sub(migrations, "migrations/"+dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(dialect, s.db, sub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(context.Background(), v); err != nil {
		t.Fatalf("migrations down to %d: %v", v, err)
	}
}

// suiteFleetRollup: Fleet read from the rollups (and the results at the
// ends of a time range) equals Fleet summed from the results alone, for
// every kind of filter, after inserts (some written twice, some at
// once), prunes and deletes (an update of what they count is refused),
// and after the migration counted
// a store's results that were there before it (docs/store.md, "The
// fleet summary").
func suiteFleetRollup(t *testing.T, s Store, spec string) {
	ctx := context.Background()
	ss := s.(*sqlStore)
	if ss.d.dollar {
		// A session time zone other than UTC, half an hour off: the
		// rollups' days are UTC days whatever it is.
		if _, err := ss.db.Exec(`DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET timezone = %L', current_database(), 'Asia/Kolkata'); END $$`); err != nil {
			t.Fatal(err)
		}
		s.Close()
		var err error
		if s, err = Open(ctx, spec); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ss = s.(*sqlStore)
	}
	raw := *ss
	raw.rollups = false
	// Results every 53 minutes over 20 days before now (Prune's age is
	// from now), so that each part of a day a range's ends cut has some:
	// maxima
	// at, just under and between every capacity edge, none and negative;
	// two origins, three agents, servers (two names of one), tests,
	// directions and every status.
	now := time.Now().UTC()
	var maxima []*float64
	for _, e := range CapacityEdges {
		maxima = append(maxima, f64(e), f64(e-1e-9), f64(e*1.5+0.25))
	}
	maxima = append(maxima, nil, f64(-3))
	statuses := []Status{StatusOK, StatusWarning, StatusError, StatusMissed}
	var all []*Result
	const n = 20 * 24 * 60 / 53
	for i := range n {
		r := result(i)
		r.Start = now.Add(-time.Duration(n-1-i)*53*time.Minute - 90*time.Second)
		r.End = r.Start.Add(10 * time.Second)
		r.Origin = []Origin{OriginClient, OriginClient, OriginServer}[i%3]
		r.Agent = []string{"a1", "a2", "a3"}[i/2%3]
		r.Server = []string{"s1.example:25000", "S1.example.:25000", "s2.example:24601", "s2.example"}[i%4]
		r.Test = []string{"home", "work"}[i%2]
		r.Direction = []string{"up", "down", "bidirectional"}[i%5%3]
		r.Status = statuses[i%7%4]
		r.MaxMbps = maxima[i%len(maxima)]
		all = append(all, r)
	}
	ago := func(days float64) time.Time { return now.Add(-time.Duration(days * float64(24*time.Hour))) }
	midnight := now.Truncate(24 * time.Hour)
	filters := []Filter{
		{},
		{Since: ago(5.3)},
		{Until: ago(2.7)},
		{Since: ago(9.9), Until: ago(1.2)},
		{Since: ago(3.5), Until: ago(3.2)}, // within a day or across one midnight
		{Since: midnight.Add(-5 * 24 * time.Hour), Until: midnight}, // whole days
		{Since: midnight.Add(-2 * 24 * time.Hour)},
		{Until: midnight.Add(-24 * time.Hour)},
		{SinceSet: true, UntilSet: true, Until: now.Add(time.Hour)}, // from the zero time
		{Since: now.Add(time.Hour)},                                 // nothing
		{Origin: OriginClient},
		{Origin: OriginServer, Since: ago(4.1)},
		{Server: "s1.example:25000"},
		{Server: "s2.example", Since: ago(6.6)},
		{Agent: "a2"},
		{Agents: []string{"a1", "a3"}, Since: ago(8.2)},
		{Test: "work", Since: ago(11)},
		{Direction: "up"},
		{Status: StatusMissed},
		{Status: StatusOK, Since: ago(7.5), Until: ago(0.5)},
		{Limit: 17},
		{BeforeStart: ago(10.4)},
	}
	check := func(when string) {
		t.Helper()
		for _, f := range filters {
			got, err := s.Fleet(ctx, f)
			if err != nil {
				t.Fatalf("%s: Fleet %+v: %v", when, f, err)
			}
			want, err := raw.Fleet(ctx, f)
			if err != nil {
				t.Fatalf("%s: Fleet %+v from the results: %v", when, f, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: Fleet %+v:\n got %+v\nwant %+v (from the results)", when, f, got, want)
			}
		}
		// Each result counted once in each rollup.
		var results, servers, agents int
		for q, n := range map[string]*int{
			"SELECT COUNT(*) FROM results":                         &results,
			"SELECT COALESCE(SUM(n), 0) FROM fleet_servers_by_day": &servers,
			"SELECT COALESCE(SUM(n), 0) FROM fleet_agents_by_day":  &agents,
		} {
			if err := ss.db.QueryRow(q).Scan(n); err != nil {
				t.Fatalf("%s: %s: %v", when, q, err)
			}
		}
		if servers != results || agents != results {
			t.Errorf("%s: %d results, counted %d times per server and %d per agent", when, results, servers, agents)
		}
	}
	// The first 100 were there before the rollups.
	migrateDown(t, ss, fleetRollupVersion-1)
	put(t, s, all[:100]...)
	s2, err := Open(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
	check("after the migration")
	put(t, s, all[100:]...)
	check("after inserts")
	// Written again, some at once: counted once.
	put(t, s, all[:30]...)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for _, r := range all[n-10:] {
				if err := s.Put(ctx, r); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	check("after writing results again")
	if len(s.(*sqlStore).splitFleet(Filter{}, true).raw) != 0 || s.(*sqlStore).splitFleet(Filter{Since: ago(1)}, true).days == nil {
		t.Fatal("Fleet does not read the rollups")
	}
	if n, err := s.Prune(ctx, Retention{MaxAge: 16 * 24 * time.Hour}); err != nil || n == 0 {
		t.Fatalf("Prune by age: %d, %v", n, err)
	}
	check("after a prune by age")
	if n, err := s.Prune(ctx, Retention{MaxCount: 300}); err != nil || n == 0 {
		t.Fatalf("Prune by count: %d, %v", n, err)
	}
	check("after a prune by count")
	// An agent's last result and a day's only ones deleted.
	for _, r := range all[n-3:] {
		if err := s.(*sqlStore).Delete(ctx, r.ID); err != nil {
			t.Fatal(err)
		}
	}
	check("after deletes")
	// A counted column is not updated; another is.
	if _, err := ss.db.Exec("UPDATE results SET status = 'missed', server = 'moved:1' WHERE id = '" + all[n-50].ID + "'"); err == nil ||
		!strings.Contains(err.Error(), "not updated") {
		t.Errorf("an update of a result's status and server: %v, want refused", err)
	}
	if _, err := ss.db.Exec("UPDATE results SET warning = 'w' WHERE id = '" + all[n-50].ID + "'"); err != nil {
		t.Errorf("an update of a result's warning: %v", err)
	}
	check("after updates")
	if ss.d.dollar {
		if _, err := ss.db.Exec("TRUNCATE results CASCADE"); err != nil {
			t.Fatal(err)
		}
		check("after a truncate")
		put(t, s, all[n-20:]...)
		check("after a truncate and inserts")
	}
	// A reader of a store before the rollups sums the results.
	migrateDown(t, ss, fleetRollupVersion-1)
	r, err := OpenReader(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.Fleet(ctx, Filter{Since: ago(3.5)})
	want, _ := raw.Fleet(ctx, Filter{Since: ago(3.5)})
	if err != nil || !reflect.DeepEqual(got, want) || len(got.Agents) != 3 {
		t.Errorf("a reader of a version %d store: %+v, %v; want %+v", fleetRollupVersion-1, got, err, want)
	}
}
