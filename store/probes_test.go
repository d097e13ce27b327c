//go:build !small

package store

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// suiteEnrolledProbes: EnrolledProbes lists each enrolled name once, by
// name, with its newest enrolment, its revocation only once no
// credential of it is in force, and the start of its newest result of
// any status (none for a probe that never uploaded; an agent never
// enrolled is not a probe); and it reads the results through their
// (agent, start) index.
func suiteEnrolledProbes(t *testing.T, s Store) {
	ctx := context.Background()
	p := s.(Probes)
	if got, err := p.EnrolledProbes(ctx); err != nil || len(got) != 0 {
		t.Fatalf("an empty store's probes: %v, %v", got, err)
	}
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	enrol := func(name, serial string, m int) {
		t.Helper()
		if err := p.Enrol(ctx, name, serial, at(m)); err != nil {
			t.Fatal(err)
		}
	}
	revoke := func(name string, m, want int) {
		t.Helper()
		if n, err := p.Revoke(ctx, name, at(m)); err != nil || n != want {
			t.Fatalf("Revoke(%s): %d, %v; want %d", name, n, err, want)
		}
	}
	enrol("probe-1", "01", -100)
	enrol("quiet", "02", -90)
	// Re-keyed: the old credential revoked, the new one in force.
	enrol("rekeyed", "03", -80)
	revoke("rekeyed", -70, 1)
	enrol("rekeyed", "04", -60)
	// Gone: both credentials revoked, the last at -20.
	enrol("gone", "05", -50)
	revoke("gone", -40, 1)
	enrol("gone", "06", -30)
	revoke("gone", -20, 1)

	// probe-1's results: its newest (result 7) a missed schedule;
	// gone's one result; "stranger" uploaded without an enrolment.
	var rs []*Result
	for i := 1; i <= 7; i++ {
		rs = append(rs, result(i))
	}
	rs[6].Status, rs[6].MaxMbps = StatusMissed, nil
	g := result(20)
	g.ID, g.Agent = "00000000-0000-4000-8000-gone00000020", "gone"
	st := result(30)
	st.ID, st.Agent = "00000000-0000-4000-8000-strange00030", "stranger"
	put(t, s, append(rs, g, st)...)

	got, err := p.EnrolledProbes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Probe{
		{Name: "gone", Enrolled: at(-30), Revoked: at(-20), Last: at(20)},
		{Name: "probe-1", Enrolled: at(-100), Last: at(7)},
		{Name: "quiet", Enrolled: at(-90)},
		{Name: "rekeyed", Enrolled: at(-60)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("EnrolledProbes:\n got %+v\nwant %+v", got, want)
	}

	// The plan: each probe's last result is a seek into
	// results_agent_start, never a scan of the results. PostgreSQL's
	// planner scans a table this small whole, so it is asked not to: the
	// index must serve the query when the table is large.
	ss := s.(*sqlStore)
	conn, err := ss.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	explain := "EXPLAIN QUERY PLAN "
	if ss.d.dollar {
		explain = "EXPLAIN (COSTS OFF) "
		if _, err := conn.ExecContext(ctx, "SET enable_seqscan = off"); err != nil {
			t.Fatal(err)
		}
		defer conn.ExecContext(ctx, "RESET enable_seqscan")
	}
	rows, err := conn.QueryContext(ctx, explain+enrolledProbesQuery)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var plan []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, toString(vals[len(vals)-1]))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	scans := slices.ContainsFunc(plan, func(l string) bool {
		return strings.HasPrefix(strings.TrimSpace(l), "SCAN r") || strings.Contains(l, "Seq Scan on results")
	})
	if !strings.Contains(text, "results_agent_start") || scans {
		t.Errorf("the plan does not seek results_agent_start per probe:\n%s", text)
	}
}

// toString is a plan row's text column (a string or bytes per driver).
func toString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}

func TestProbeSilentSince(t *testing.T) {
	enrolled := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	last := enrolled.Add(26 * time.Hour)
	if got := (Probe{Enrolled: enrolled}).SilentSince(); !got.Equal(enrolled) {
		t.Errorf("never uploaded: silent since %v, want its enrolment %v", got, enrolled)
	}
	if got := (Probe{Enrolled: enrolled, Last: last}).SilentSince(); !got.Equal(last) {
		t.Errorf("uploaded: silent since %v, want its last result %v", got, last)
	}
}
