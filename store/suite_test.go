//go:build !small

package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// The conformance suite: what every engine must do, run on each
// (TestSQLite, TestPostgres). spec gives a fresh, empty store's --store
// argument on each call.
func runSuite(t *testing.T, spec func(t *testing.T) string) {
	open := func(t *testing.T) (Store, string) {
		sp := spec(t)
		s, err := Open(context.Background(), sp)
		if err != nil {
			t.Fatalf("Open(%s): %v", sp, err)
		}
		t.Cleanup(func() { s.Close() })
		return s, sp
	}
	t.Run("PutGet", func(t *testing.T) { s, _ := open(t); suitePutGet(t, s) })
	t.Run("Idempotent", func(t *testing.T) { s, _ := open(t); suiteIdempotent(t, s) })
	t.Run("PutRefused", func(t *testing.T) { s, _ := open(t); suitePutRefused(t, s) })
	t.Run("ListFilters", func(t *testing.T) { s, _ := open(t); suiteList(t, s) })
	t.Run("Paging", func(t *testing.T) { s, _ := open(t); suitePaging(t, s) })
	t.Run("Series", func(t *testing.T) { s, _ := open(t); suiteSeries(t, s) })
	t.Run("Prune", func(t *testing.T) { s, _ := open(t); suitePrune(t, s) })
	t.Run("Fleet", func(t *testing.T) { s, _ := open(t); suiteFleet(t, s) })
	t.Run("FleetServerNames", func(t *testing.T) { s, _ := open(t); suiteFleetServerNames(t, s) })
	t.Run("FleetRollup", func(t *testing.T) { s, sp := open(t); suiteFleetRollup(t, s, sp) })
	t.Run("PerAgent", func(t *testing.T) { s, _ := open(t); suitePerAgent(t, s) })
	t.Run("EnrolledProbes", func(t *testing.T) { s, _ := open(t); suiteEnrolledProbes(t, s) })
	t.Run("ConcurrentWriters", func(t *testing.T) { s, _ := open(t); suiteConcurrent(t, s) })
	t.Run("Reopen", func(t *testing.T) { s, sp := open(t); suiteReopen(t, s, sp) })
	t.Run("NewerSchemaRefused", func(t *testing.T) { s, sp := open(t); suiteNewer(t, s, sp) })
	t.Run("Reader", func(t *testing.T) { s, sp := open(t); suiteReader(t, s, sp) })
	t.Run("ReaderBeforeCrossTraffic", func(t *testing.T) { s, sp := open(t); suiteReaderBeforeCross(t, s, sp) })
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func f64(v float64) *float64 { return &v }

// result is a complete result numbered i, i minutes after t0.
func result(i int) *Result {
	start := t0.Add(time.Duration(i) * time.Minute)
	return &Result{
		ID:     fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
		Origin: OriginClient, Test: "home", Agent: "probe-1", Server: "srv.example:25000", Client: "192.0.2.7",
		Start: start, End: start.Add(10 * time.Second), Direction: "down",
		Status: StatusOK, ErrorStatus: 0,
		MaxMbps: f64(float64(100 + i)), SummaryMbps: f64(90), LossRatio: f64(0.001), RTTMinMs: f64(1.5),
		RTTRangeMs: f64(3.25), DelayVarMs: f64(0.5), LoadedMs: f64(20), RPM: f64(3000), Grade: "good",
		CrossMbps: f64(float64(i) / 4), CrossBusy: i%2 == 1,
		Doc: []byte(fmt.Sprintf(`{"Summary":{"i":%d}}`, i)),
	}
}

func put(t *testing.T, s Store, rs ...*Result) {
	t.Helper()
	for _, r := range rs {
		if err := s.Put(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
}

func ids(rs []Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func suitePutGet(t *testing.T, s Store) {
	ctx := context.Background()
	want := result(1)
	// Sub-microsecond parts are not kept; a zone is not either (UTC).
	want.Start = want.Start.Add(123456789 * time.Nanosecond).In(time.FixedZone("x", 3600))
	want.Warning = "it's \"quoted\"; DROP TABLE results; --"
	put(t, s, want)
	// A result without the optional figures: they come back nil.
	bare := &Result{ID: "00000000-0000-4000-8000-bare00000000", Origin: OriginServer, Start: t0, End: t0,
		Status: StatusMissed, Warning: "asleep"}
	put(t, s, bare)

	got, err := s.Get(ctx, want.ID)
	if err != nil {
		t.Fatal(err)
	}
	exp := *want
	exp.Start = want.Start.Truncate(time.Microsecond).UTC()
	exp.End = want.End.UTC()
	if !reflect.DeepEqual(got, &exp) {
		t.Errorf("Get:\n got %+v\nwant %+v", got, &exp)
	}
	got, err = s.Get(ctx, bare.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, bare) {
		t.Errorf("Get bare:\n got %+v\nwant %+v", got, bare)
	}
	// Bytes PostgreSQL's text refuses (a hostile server's message): kept
	// as U+FFFD, not a lost result.
	odd := result(2)
	odd.Warning = "bad \xff\x00 bytes"
	put(t, s, odd)
	if got, err := s.Get(ctx, odd.ID); err != nil {
		t.Error(err)
	} else if got.Warning != "bad \uFFFD\uFFFD bytes" {
		t.Errorf("Get of a warning with invalid UTF-8 and NUL: %q", got.Warning)
	}
	if _, err := s.Get(ctx, "00000000-0000-4000-8000-999999999999"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of an unknown ID: %v, want ErrNotFound", err)
	}
}

func suiteIdempotent(t *testing.T, s Store) {
	ctx := context.Background()
	r := result(1)
	put(t, s, r)
	again := *r
	again.Test = "changed"
	again.Doc = []byte(`{}`)
	// The retry succeeds and changes nothing.
	put(t, s, &again, &again)
	got, err := s.Get(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Test != "home" || string(got.Doc) != string(r.Doc) {
		t.Errorf("a retried Put changed the row: %+v", got)
	}
	list, err := s.List(ctx, Filter{})
	if err != nil || len(list) != 1 {
		t.Errorf("List after retries: %d rows, %v; want 1", len(list), err)
	}
}

func suitePutRefused(t *testing.T, s Store) {
	ctx := context.Background()
	for _, r := range []*Result{
		{Origin: OriginClient, Start: t0, Status: StatusOK},
		{ID: "x", Start: t0, Status: StatusOK},
		{ID: "x", Origin: OriginClient, Status: StatusOK},
		{ID: "x", Origin: OriginClient, Start: t0},
	} {
		if err := s.Put(ctx, r); err == nil {
			t.Errorf("Put(%+v) took an incomplete result", r)
		}
	}
	if _, err := s.Series(ctx, Filter{}, "max_mbps); DROP TABLE results; --", 10); err == nil {
		t.Error("Series took an unknown figure")
	}
	if _, err := s.Series(ctx, Filter{}, "max_mbps", 0); err == nil {
		t.Error("Series took 0 points")
	}
	if _, err := s.Prune(ctx, Retention{MaxCount: -1}); err == nil {
		t.Error("Prune took a negative count")
	}
}

func suiteList(t *testing.T, s Store) {
	ctx := context.Background()
	var all []*Result
	for i := range 24 {
		r := result(i)
		r.Test = []string{"home", "work", "lab"}[i%3]
		r.Agent = []string{"a1", "a2"}[i%2]
		r.Server = []string{"s1:1", "s2:1", "s3:1", "s4:1"}[i%4]
		r.Direction = []string{"up", "down", "bidirectional"}[(i/3)%3]
		if i%5 == 0 {
			r.Origin = OriginServer
		}
		all = append(all, r)
	}
	// Written out of order: List orders.
	for _, i := range []int{5, 0, 23, 12, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22} {
		put(t, s, all[i])
	}
	check := func(name string, f Filter, keep func(r *Result) bool) {
		t.Helper()
		var want []string
		for i := len(all) - 1; i >= 0; i-- {
			if keep(all[i]) {
				want = append(want, all[i].ID)
			}
		}
		if f.Limit > 0 && len(want) > f.Limit {
			want = want[:f.Limit]
		}
		got, err := s.List(ctx, f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(ids(got), want) {
			t.Errorf("%s:\n got %v\nwant %v", name, ids(got), want)
		}
		for _, r := range got {
			if r.Doc != nil {
				t.Errorf("%s: List filled Doc", name)
			}
		}
	}
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	check("all", Filter{}, func(*Result) bool { return true })
	check("test", Filter{Test: "work"}, func(r *Result) bool { return r.Test == "work" })
	check("agent", Filter{Agent: "a2"}, func(r *Result) bool { return r.Agent == "a2" })
	check("server", Filter{Server: "s3:1"}, func(r *Result) bool { return r.Server == "s3:1" })
	check("direction", Filter{Direction: "up"}, func(r *Result) bool { return r.Direction == "up" })
	check("origin", Filter{Origin: OriginServer}, func(r *Result) bool { return r.Origin == OriginServer })
	check("since-until", Filter{Since: at(4), Until: at(10)}, func(r *Result) bool {
		return !r.Start.Before(at(4)) && r.Start.Before(at(10))
	})
	check("combined", Filter{Test: "home", Agent: "a1", Since: at(6)}, func(r *Result) bool {
		return r.Test == "home" && r.Agent == "a1" && !r.Start.Before(at(6))
	})
	check("limit", Filter{Limit: 5}, func(*Result) bool { return true })
	check("limit-filter", Filter{Server: "s1:1", Limit: 2}, func(r *Result) bool { return r.Server == "s1:1" })
	check("none", Filter{Test: "nowhere"}, func(*Result) bool { return false })
}

func suitePaging(t *testing.T, s Store) {
	ctx := context.Background()
	for i := range 23 {
		put(t, s, result(i))
	}
	var seen []string
	f := Filter{Limit: 5}
	for page := 0; ; page++ {
		if page > 10 {
			t.Fatal("paging does not end")
		}
		got, err := s.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		seen = append(seen, ids(got)...)
		f.BeforeStart = got[len(got)-1].Start
	}
	if len(seen) != 23 {
		t.Fatalf("pages held %d results, want 23", len(seen))
	}
	for i, id := range seen {
		if want := result(22 - i).ID; id != want {
			t.Fatalf("page order: result %d is %s, want %s", i, id, want)
		}
	}
}

func suiteSeries(t *testing.T, s Store) {
	ctx := context.Background()
	// 500 results at uneven times (i² seconds), the figure i; one without
	// the figure, and another test's.
	const n = 500
	var starts []time.Time
	for i := range n {
		r := result(i)
		r.Start = t0.Add(time.Duration(i*i) * time.Second)
		r.RTTMinMs = f64(float64(i))
		starts = append(starts, r.Start)
		put(t, s, r)
	}
	none := result(n)
	none.RTTMinMs = nil
	other := result(n + 1)
	other.Test = "other"
	put(t, s, none, other)

	f := Filter{Test: "home"}
	// Enough points: every result, oldest first.
	got, err := s.Series(ctx, f, "rtt_min_ms", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("Series with room for all: %d points, want %d", len(got), n)
	}
	for i, p := range got {
		if !p.T.Equal(starts[i]) || p.V != float64(i) {
			t.Fatalf("point %d: %v, want %v %d", i, p, starts[i], i)
		}
	}
	// Reduced: the mean of each of equal-width buckets, computed here.
	for _, points := range []int{1, 7, 100, 499} {
		got, err := s.Series(ctx, f, "rtt_min_ms", points)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := starts[0].UnixMicro(), starts[n-1].UnixMicro()
		w := (hi-lo)/int64(points) + 1
		type acc struct{ t, v, n float64 }
		// Times summed from the first: exact in a float64.
		buckets := map[int64]*acc{}
		for i, st := range starts {
			b := (st.UnixMicro() - lo) / w
			if buckets[b] == nil {
				buckets[b] = &acc{}
			}
			buckets[b].t += float64(st.UnixMicro() - lo)
			buckets[b].v += float64(i)
			buckets[b].n++
		}
		keys := make([]int64, 0, len(buckets))
		for k := range buckets {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
		if len(got) != len(keys) || len(got) > points {
			t.Fatalf("Series to %d points: %d points, want %d", points, len(got), len(keys))
		}
		for i, k := range keys {
			a := buckets[k]
			wantT := time.UnixMicro(lo + int64(a.t/a.n)).UTC()
			if d := got[i].T.Sub(wantT); d < -time.Microsecond || d > time.Microsecond ||
				math.Abs(got[i].V-a.v/a.n) > 1e-9 {
				t.Fatalf("Series to %d points, bucket %d: %v, want %v %v", points, i, got[i], wantT, a.v/a.n)
			}
		}
	}
	// A limit: the newest results only.
	got, err = s.Series(ctx, Filter{Test: "home", Limit: 10}, "rtt_min_ms", 100)
	if err != nil || len(got) != 10 || got[0].V != n-10 {
		t.Errorf("Series of the last 10: %v, %v", got, err)
	}
	got, err = s.Series(ctx, Filter{Test: "nowhere"}, "rtt_min_ms", 100)
	if err != nil || len(got) != 0 {
		t.Errorf("Series of nothing: %v, %v", got, err)
	}
}

func suitePrune(t *testing.T, s Store) {
	ctx := context.Background()
	now := time.Now().UTC()
	for i := range 10 {
		r := result(i)
		r.Start = now.Add(-time.Duration(10-i) * time.Hour)
		put(t, s, r)
	}
	if n, err := s.Prune(ctx, Retention{}); err != nil || n != 0 {
		t.Errorf("Prune of nothing: %d, %v", n, err)
	}
	// By age: results 0-2 started over 7.5 h ago.
	n, err := s.Prune(ctx, Retention{MaxAge: 7*time.Hour + 30*time.Minute})
	if err != nil || n != 3 {
		t.Fatalf("Prune by age: %d, %v; want 3", n, err)
	}
	// By count: the 4 newest stay.
	n, err = s.Prune(ctx, Retention{MaxCount: 4})
	if err != nil || n != 3 {
		t.Fatalf("Prune by count: %d, %v; want 3", n, err)
	}
	left, err := s.List(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{result(9).ID, result(8).ID, result(7).ID, result(6).ID}
	if !reflect.DeepEqual(ids(left), want) {
		t.Errorf("after Prune: %v, want %v", ids(left), want)
	}
	// Their documents went with them.
	var docs int
	if err := s.(*sqlStore).db.QueryRow("SELECT COUNT(*) FROM result_docs").Scan(&docs); err != nil || docs != 4 {
		t.Errorf("after Prune: %d documents, %v; want 4", docs, err)
	}
	if n, err := s.Prune(ctx, Retention{MaxCount: 4}); err != nil || n != 0 {
		t.Errorf("Prune again: %d, %v", n, err)
	}
	if n, err := s.Prune(ctx, Retention{MaxCount: 100}); err != nil || n != 0 {
		t.Errorf("Prune with room: %d, %v", n, err)
	}
}

func suiteFleet(t *testing.T, s Store) {
	ctx := context.Background()
	// Server s1 gets maxima 0.5 (bucket 0), 1 (bucket 1, an edge), 99.9
	// (bucket 4), 20000 (the last) and one without; s2 two in bucket 3.
	type row struct {
		server, agent string
		status        Status
		max           *float64
	}
	rows := []row{
		{"s1:1", "a1", StatusOK, f64(0.5)},
		{"s1:1", "a2", StatusWarning, f64(1)},
		{"s1:1", "a1", StatusOK, f64(99.9)},
		{"s1:1", "a2", StatusError, f64(20000)},
		{"s1:1", "a2", StatusMissed, nil},
		{"s2:1", "a1", StatusOK, f64(30)},
		{"s2:1", "a3", StatusOK, f64(49.99)},
	}
	for i, x := range rows {
		r := result(i)
		r.Server, r.Agent, r.Status, r.MaxMbps = x.server, x.agent, x.status, x.max
		put(t, s, r)
	}
	got, err := s.Fleet(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	caps := func(buckets ...int) []int {
		c := make([]int, len(CapacityEdges))
		for _, b := range buckets {
			c[b]++
		}
		return c
	}
	want := &Fleet{
		Servers: []ServerSummary{
			{Server: "s1:1", Tests: 5, ByStatus: map[Status]int{StatusOK: 2, StatusWarning: 1, StatusError: 1, StatusMissed: 1},
				Capacity: caps(0, 1, 4, len(CapacityEdges)-1)},
			{Server: "s2:1", Tests: 2, ByStatus: map[Status]int{StatusOK: 2}, Capacity: caps(3, 3)},
		},
		Agents: []AgentSummary{
			{Agent: "a1", Tests: 3, Last: result(5).Start, LastStatus: StatusOK, LastMaxMbps: f64(30)},
			{Agent: "a2", Tests: 3, Missed: 1, Last: result(4).Start, LastStatus: StatusMissed},
			{Agent: "a3", Tests: 1, Last: result(6).Start, LastStatus: StatusOK, LastMaxMbps: f64(49.99)},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Fleet:\n got %+v\nwant %+v", got, want)
	}
	// Filtered: server s1 only; a1's last there is result 2.
	got, err = s.Fleet(ctx, Filter{Server: "s1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Servers) != 1 || len(got.Agents) != 2 || got.Agents[0].Last != result(2).Start ||
		*got.Agents[0].LastMaxMbps != 99.9 || got.Agents[0].Tests != 2 {
		t.Errorf("Fleet of s1: %+v", got)
	}
	got, err = s.Fleet(ctx, Filter{Test: "nowhere"})
	if err != nil || len(got.Servers) != 0 || len(got.Agents) != 0 {
		t.Errorf("Fleet of nothing: %+v, %v", got, err)
	}
}

// suiteFleetServerNames: a server's archive records (Origin server, its
// name as Agent and Server) are counted under servers and are no probe;
// the probes' records of it (host:port, the default port, another case)
// and the archive's (its name alone) are one server, and a Server filter
// of either name selects all of them; a server on another port is
// another row.
func suiteFleetServerNames(t *testing.T, s Store) {
	ctx := context.Background()
	rows := []struct {
		origin        Origin
		server, agent string
	}{
		{OriginClient, "srv1.example:24601", "probe-a"},
		{OriginClient, "SRV1.example.:24601", "probe-b"},
		{OriginServer, "srv1.example", "srv1.example"},
		{OriginServer, "srv1.example", "srv1.example"},
		{OriginClient, "srv1.example:25000", "probe-a"},
	}
	for i, x := range rows {
		r := result(i)
		r.Origin, r.Server, r.Agent = x.origin, x.server, x.agent
		put(t, s, r)
	}
	got, err := s.Fleet(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var servers, agents []string
	tests := map[string]int{}
	for _, sv := range got.Servers {
		servers = append(servers, sv.Server)
		tests[sv.Server] = sv.Tests
	}
	for _, a := range got.Agents {
		agents = append(agents, a.Agent)
	}
	if want := []string{"srv1.example", "srv1.example:25000"}; !reflect.DeepEqual(servers, want) {
		t.Errorf("servers %q, want %q", servers, want)
	}
	if tests["srv1.example"] != 4 || tests["srv1.example:25000"] != 1 {
		t.Errorf("servers' tests %v, want srv1.example 4 and :25000 1", tests)
	}
	if want := []string{"probe-a", "probe-b"}; !reflect.DeepEqual(agents, want) {
		t.Errorf("probes %q, want %q (the archive is no probe)", agents, want)
	}
	for _, name := range []string{"srv1.example", "srv1.example:24601"} {
		l, err := s.List(ctx, Filter{Server: name})
		if err != nil {
			t.Fatal(err)
		}
		if len(l) != 3 { // srv1.example:24601 and the archive's two (a filter is exact: not SRV1)
			var got []string
			for _, r := range l {
				got = append(got, r.Server)
			}
			t.Errorf("List of server %q: %q", name, got)
		}
	}
}

// suitePerAgent: the newest n results of each of some probes, in one
// List (the fleet page's), with the other filters; Status and Agents
// select.
func suitePerAgent(t *testing.T, s Store) {
	ctx := context.Background()
	// Agents a0..a3, 10 results each, interleaved; every third missed.
	want := map[string][]string{} // agent -> its IDs, newest first
	for i := range 40 {
		r := result(i)
		r.Agent = fmt.Sprintf("a%d", i%4)
		if i%3 == 0 {
			r.Status, r.Warning = StatusMissed, "asleep"
		}
		put(t, s, r)
		want[r.Agent] = append([]string{r.ID}, want[r.Agent]...)
	}
	// A tie on start: the greater ID first, as List orders.
	tie := result(39)
	tie.ID, tie.Agent = "00000000-0000-4000-8000-999999999999", "a1"
	put(t, s, tie)
	want["a1"] = append([]string{tie.ID}, want["a1"]...)

	got, err := s.List(ctx, Filter{Agents: []string{"a1", "a2"}, PerAgent: 3})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string][]string{}
	for i, r := range got {
		by[r.Agent] = append(by[r.Agent], r.ID)
		if i > 0 && r.Start.After(got[i-1].Start) {
			t.Errorf("not newest first at %d", i)
		}
	}
	if len(by) != 2 || !slices.Equal(by["a1"], want["a1"][:3]) || !slices.Equal(by["a2"], want["a2"][:3]) {
		t.Errorf("3 per agent of a1, a2: %v, want %v and %v", by, want["a1"][:3], want["a2"][:3])
	}
	// The missed of every agent, 2 each, since a time.
	since := result(12).Start
	got, err = s.List(ctx, Filter{Status: StatusMissed, PerAgent: 2, Since: since})
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, r := range got {
		n[r.Agent]++
		if r.Status != StatusMissed || r.Warning != "asleep" || r.Start.Before(since) {
			t.Errorf("missed since %v: %+v", since, r)
		}
	}
	if len(got) != 8 || len(n) != 4 {
		t.Errorf("2 missed per agent: %d results, per agent %v", len(got), n)
	}
	// An agent list with Agent: both hold; Limit bounds the whole.
	got, err = s.List(ctx, Filter{Agents: []string{"a1", "a2"}, Agent: "a2", PerAgent: 5, Limit: 2})
	if err != nil || len(got) != 2 || got[0].ID != want["a2"][0] || got[1].ID != want["a2"][1] {
		t.Errorf("a2 of a1, a2, limit 2: %v, %v", ids(got), err)
	}
	if got, err := s.List(ctx, Filter{Agents: []string{"a1"}, Agent: "a2", PerAgent: 5}); err != nil || len(got) != 0 {
		t.Errorf("a2 of a1 only: %v, %v", ids(got), err)
	}
	if _, err := s.List(ctx, Filter{PerAgent: -1}); err == nil {
		t.Error("a negative PerAgent was taken")
	}
}

func suiteConcurrent(t *testing.T, s Store) {
	ctx := context.Background()
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				// Every writer also retries its neighbour's results.
				for _, k := range []int{w*each + i, ((w+1)%writers)*each + i} {
					if err := s.Put(ctx, result(k)); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := s.List(ctx, Filter{})
	if err != nil || len(got) != writers*each {
		t.Fatalf("after concurrent writes: %d rows, %v; want %d", len(got), err, writers*each)
	}
}

func suiteReopen(t *testing.T, s Store, spec string) {
	put(t, s, result(1))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Opened again (the migrations already applied): the row is there.
	s2, err := Open(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := s2.Get(context.Background(), result(1).ID); err != nil {
		t.Fatal(err)
	}
}

func suiteNewer(t *testing.T, s Store, spec string) {
	// A newer udpstp's migration ran on this store.
	db := s.(*sqlStore).db
	if _, err := db.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (9999, true)`); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(context.Background(), spec)
	if err == nil {
		s2.Close()
		t.Fatal("a store with a newer schema was opened")
	}
	if !strings.Contains(err.Error(), "newer than this udpstp") || !strings.Contains(err.Error(), "9999") {
		t.Errorf("the error does not say the store is newer: %v", err)
	}
}

// suiteReader: OpenReader reads what a writer wrote, cannot write, and
// refuses a schema other than its own without migrating it
// (docs/store.md, "Readers").
// suiteReaderBeforeCross: a store of schema version 2 (before the
// cross-traffic columns; made here by the migrations' Down to version 2)
// stays readable by a reader, which does not upgrade it: Get, List (each
// of its queries) and Fleet read its rows as unmeasured. A writer then
// upgrades it, and its rows still read.
func suiteReaderBeforeCross(t *testing.T, s Store, spec string) {
	ctx := context.Background()
	for i := range 3 {
		put(t, s, result(i))
	}
	db := s.(*sqlStore).db
	migrateDown(t, s.(*sqlStore), 2)
	check := func(who string, st Store) {
		t.Helper()
		got, err := st.Get(ctx, result(1).ID)
		if err != nil || got.CrossMbps != nil || got.CrossBusy || got.MaxMbps == nil || *got.MaxMbps != 101 {
			t.Errorf("%s: Get of a version 2 row: %+v, %v", who, got, err)
		}
		for _, f := range []Filter{{}, {Agents: []string{"probe-1"}, PerAgent: 2}, {PerAgent: 2}} {
			l, err := st.List(ctx, f)
			if err != nil || len(l) == 0 || l[0].CrossMbps != nil {
				t.Errorf("%s: List %+v of version 2 rows: %d, %v", who, f, len(l), err)
			}
		}
		if fl, err := st.Fleet(ctx, Filter{}); err != nil || len(fl.Agents) != 1 {
			t.Errorf("%s: Fleet of version 2 rows: %+v, %v", who, fl, err)
		}
	}
	r, err := OpenReader(ctx, spec)
	if err != nil {
		t.Fatalf("a reader of a version 2 store: %v", err)
	}
	check("reader", r)
	r.Close()
	var v int
	if err := db.QueryRow("SELECT MAX(version_id) FROM goose_db_version").Scan(&v); err != nil || v != 2 {
		t.Errorf("after the reader, version %d (%v), want 2 as it was", v, err)
	}
	w, err := Open(ctx, spec)
	if err != nil {
		t.Fatalf("a writer upgrading a version 2 store: %v", err)
	}
	defer w.Close()
	check("upgraded", w)
	put(t, w, result(5))
	if got, err := w.Get(ctx, result(5).ID); err != nil || got.CrossMbps == nil || *got.CrossMbps != 1.25 || !got.CrossBusy {
		t.Errorf("upgraded: a new row's cross-traffic: %+v, %v", got, err)
	}
}

func suiteReader(t *testing.T, s Store, spec string) {
	ctx := context.Background()
	put(t, s, result(1))
	r, err := OpenReader(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Get(ctx, result(1).ID); err != nil || string(got.Doc) != string(result(1).Doc) {
		t.Errorf("a reader's Get: %v", err)
	}
	if err := r.Put(ctx, result(2)); err == nil {
		t.Error("a reader's Put succeeded")
	}
	if _, err := r.Prune(ctx, Retention{MaxCount: 1}); err == nil {
		t.Error("a reader's Prune succeeded")
	}
	r.Close()
	if _, err := s.Get(ctx, result(2).ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("the reader's Put wrote: %v", err)
	}

	db := s.(*sqlStore).db
	versions := func() int {
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM goose_db_version`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// An older schema: the store's migrations forgotten.
	if _, err := db.Exec(`DELETE FROM goose_db_version WHERE version_id > 0`); err != nil {
		t.Fatal(err)
	}
	n := versions()
	if r, err := OpenReader(ctx, spec); err == nil {
		r.Close()
		t.Error("a reader opened an older schema")
	} else if !strings.Contains(err.Error(), "older than this udpstp") || !strings.Contains(err.Error(), "run the agent") {
		t.Errorf("a reader of an older schema: %v", err)
	}
	if versions() != n {
		t.Error("a reader migrated an older schema")
	}
	if _, err := db.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (9999, true)`); err != nil {
		t.Fatal(err)
	}
	if r, err := OpenReader(ctx, spec); err == nil {
		r.Close()
		t.Error("a reader opened a newer schema")
	} else if !strings.Contains(err.Error(), "newer than this udpstp") {
		t.Errorf("a reader of a newer schema: %v", err)
	}
}

// badSpecs checks that Open refuses each spec with an error that says
// the text it maps to, and never shows a password ("secret").
func badSpecs(t *testing.T, specs map[string]string) {
	t.Helper()
	for spec, want := range specs {
		s, err := Open(context.Background(), spec)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) worked", spec)
			continue
		}
		if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q): %v; want it to say %q, without the password", spec, err, want)
		}
	}
}
