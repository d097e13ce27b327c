//go:build !small

package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/store"
)

// TestCollectorProbes: `collector probes` lists every enrolled probe by
// name, with its enrolment, revocation and last result, and how long it
// has been silent (since its enrolment for one that never uploaded), as
// a table and as JSON; a store without probes lists none, and a command
// line without --store or with an argument is refused.
func TestCollectorProbes(t *testing.T) {
	ctx := context.Background()
	spec := "sqlite:" + filepath.Join(t.TempDir(), "c.db")
	st, err := store.Open(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	p := st.(store.Probes)
	for _, e := range []struct {
		name, serial string
		ago          time.Duration
	}{{"home-0001", "01", 72 * time.Hour}, {"home-0002", "02", 50 * time.Hour}, {"home-0003", "03", 30 * time.Hour}} {
		if err := p.Enrol(ctx, e.name, e.serial, now.Add(-e.ago)); err != nil {
			t.Fatal(err)
		}
	}
	// home-0001 uploaded 3 h 5 min ago; home-0002 never; home-0003 a
	// day ago, then was revoked.
	for i, r := range []struct {
		agent string
		ago   time.Duration
	}{{"home-0001", 5 * time.Hour}, {"home-0001", 3*time.Hour + 5*time.Minute}, {"home-0003", 24 * time.Hour}} {
		start := now.Add(-r.ago)
		res := &store.Result{ID: "00000000-0000-4000-8000-00000000000" + string(rune('1'+i)), Origin: store.OriginClient,
			Agent: r.agent, Test: "down", Start: start, End: start.Add(10 * time.Second), Status: store.StatusOK}
		if err := st.Put(ctx, res); err != nil {
			t.Fatal(err)
		}
	}
	revoked := now.Add(-2 * time.Hour)
	if n, err := p.Revoke(ctx, "home-0003", revoked); err != nil || n != 1 {
		t.Fatalf("Revoke: %d, %v", n, err)
	}
	st.Close()

	before := time.Now()
	r := run(t, "collector", "probes", "--store", spec)
	after := time.Now()
	// The silence the command saw: from before to after it ran.
	silent := func(d time.Duration) string {
		a, b := silentText(before.Sub(now.Add(-d))), silentText(after.Sub(now.Add(-d)))
		if a != b {
			return a + " or " + b
		}
		return a
	}
	if r.code != 0 {
		t.Fatalf("collector probes: exit %d %q", r.code, r.msg)
	}
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	cells := func(l string) []string { return columnGap.Split(strings.TrimSpace(l), -1) }
	f := func(d time.Duration) string { return now.Add(-d).Format("2006-01-02 15:04") }
	want := [][]string{
		{"NAME", "ENROLLED (UTC)", "REVOKED (UTC)", "LAST RESULT (UTC)", "SILENT FOR"},
		{"home-0001", f(72 * time.Hour), "-", f(3*time.Hour + 5*time.Minute), silent(3*time.Hour + 5*time.Minute)},
		{"home-0002", f(50 * time.Hour), "-", "never", silent(50 * time.Hour)},
		{"home-0003", f(30 * time.Hour), f(2 * time.Hour), f(24 * time.Hour), silent(24 * time.Hour)},
	}
	if len(lines) != len(want) {
		t.Fatalf("table:\n%s", r.out)
	}
	for i, l := range lines {
		got := cells(l)
		ok := len(got) == len(want[i])
		for j := range min(len(got), len(want[i])) {
			ok = ok && slices.Contains(strings.Split(want[i][j], " or "), got[j])
		}
		if !ok {
			t.Errorf("table line %d: %q, want %q", i, got, want[i])
		}
	}

	before = time.Now()
	r = run(t, "collector", "probes", "--json", "--store", spec)
	after = time.Now()
	var rows []probeRow
	if err := json.Unmarshal([]byte(r.out), &rows); err != nil || len(rows) != 3 {
		t.Fatalf("--json: %v, %d rows:\n%s", err, len(rows), r.out)
	}
	if g := rows[1]; g.Name != "home-0002" || g.Last != nil || g.Revoked != nil || !g.Enrolled.Equal(now.Add(-50*time.Hour)) {
		t.Errorf("--json: the probe that never uploaded: %+v", g)
	}
	if g := rows[2]; g.Revoked == nil || !g.Revoked.Equal(revoked) || g.Last == nil || !g.Last.Equal(now.Add(-24*time.Hour)) {
		t.Errorf("--json: the revoked probe: %+v", g)
	}
	// Seconds since the last result, as the command saw them between
	// before and after it ran.
	if rows[0].Last == nil {
		t.Fatalf("--json: home-0001 has no last result: %+v", rows[0])
	}
	lo, hi := int64(before.Sub(*rows[0].Last)/time.Second), int64(after.Sub(*rows[0].Last)/time.Second)
	if s := rows[0].SilentS; s < lo || s > hi+1 {
		t.Errorf("--json: home-0001 silent for %d s, want %d to %d", s, lo, hi)
	}
	var raw []map[string]any
	if err := json.Unmarshal([]byte(r.out), &raw); err != nil || raw[0]["revoked"] != nil || raw[1]["last_result"] != nil {
		t.Errorf("--json: a time it has not is not null: %v %v", raw, err)
	}

	empty := "sqlite:" + filepath.Join(t.TempDir(), "empty.db")
	if st, err := store.Open(ctx, empty); err != nil {
		t.Fatal(err)
	} else {
		st.Close()
	}
	if r := run(t, "collector", "probes", "--json", "--store", empty); r.code != 0 || strings.TrimSpace(r.out) != "[]" {
		t.Errorf("no probes: exit %d %q, printed %q", r.code, r.msg, r.out)
	}
	mustFail(t, exitConfig, []string{"collector", "probes"}, "--store is required")
	mustFail(t, exitConfig, []string{"collector", "probes", "home-0001", "--store", spec}, "unexpected argument")
	mustFail(t, exitInit, []string{"collector", "probes", "--store", "sqlite:" + filepath.Join(t.TempDir(), "none.db")}, "collector probes:")
}

// columnGap parts a tabwriter table's cells (two spaces or more).
var columnGap = regexp.MustCompile(`\s{2,}`)
