//go:build !small

package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/udpstp/udpstp/internal/testkit/golden"
	"github.com/udpstp/udpstp/store"
)

// seeded is a store seeded with Summarize over real documents, and what
// went in.
type seeded struct {
	spec  string
	rows  []store.Result // newest first
	docs  map[string][]byte
	empty string // a --store of the same engine that does not exist
}

// seedDocs are the documents the history tests store: OB-UDPST's own
// (both directions, an error without Output) and udpstp's (a
// --bidirectional pair, a downstream test with µs delays).
var seedDocs = []string{
	"obudpst:ds_default_v4", "obudpst:us_default_v4", "obudpst:no_server_closed_port",
	"obudpst:ds_dualphase_i-3", "udpstp:udpstp_bidir_t5.json", "udpstp:udpstp_ds_t5_fine.json",
}

// seedStore puts one result per seed document into st: IDs in order,
// started an hour apart back from now (the newest first in seedDocs), two
// tests and two agents, and a warning that needs CSV's quoting.
func seedStore(t *testing.T, st store.Store, spec, empty string) *seeded {
	t.Helper()
	s := &seeded{spec: spec, empty: empty, docs: map[string][]byte{}}
	now := time.Now().UTC().Truncate(time.Second)
	for i, name := range seedDocs {
		kind, file, _ := strings.Cut(name, ":")
		var path string
		if kind == "obudpst" {
			path = golden.File(t, filepath.Join(file, "client.json"))
		} else {
			path = filepath.Join("..", "..", "report", "plot", "testdata", file)
		}
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := store.Summarize(doc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r.ID = fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1)
		r.Origin = store.OriginClient
		r.Test = []string{"home", "rack"}[i%2]
		r.Agent = []string{"probe-a", "probe-b"}[i/3]
		// The agent's clock, not the document's: the results an hour
		// apart back from now, so that --since 7d finds them.
		d := r.End.Sub(r.Start)
		r.Start = now.Add(-time.Duration(i) * time.Hour)
		r.End = r.Start.Add(d)
		if r.Status == store.StatusError {
			r.Warning = "refused, \"busy\"\nretry later"
		}
		if err := st.Put(context.Background(), &r); err != nil {
			t.Fatal(err)
		}
		s.docs[r.ID] = doc
		r.Doc = nil
		s.rows = append(s.rows, r)
	}
	// A scheduled test that did not run: no document, no figures.
	missed := store.Result{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", len(seedDocs)+1), Origin: store.OriginClient,
		Test: "home", Agent: "probe-b", Direction: "down", Status: store.StatusMissed,
		Warning: "every server refused", Start: now.Add(-time.Duration(len(seedDocs)) * time.Hour)}
	if err := st.Put(context.Background(), &missed); err != nil {
		t.Fatal(err)
	}
	s.rows = append(s.rows, missed)
	return s
}

// seedSQLite is an SQLite store in a file, seeded by seedStore.
func seedSQLite(t *testing.T) *seeded {
	t.Helper()
	dir := t.TempDir()
	spec := "sqlite:" + filepath.Join(dir, "results.db")
	st, err := store.Open(context.Background(), spec)
	if err != nil {
		t.Fatalf("SQLite store: %v", err)
	}
	defer st.Close()
	return seedStore(t, st, spec, "sqlite:"+filepath.Join(dir, "none.db"))
}

func TestHistoryList(t *testing.T) { historyList(t, seedSQLite(t)) }

func historyList(t *testing.T, s *seeded) {
	// Not a terminal: ndjson, newest first, every field.
	r := run(t, "history", "--store", s.spec)
	if r.code != 0 {
		t.Fatalf("history: exit %d %q", r.code, r.msg)
	}
	var got []store.Row
	for _, l := range strings.Split(strings.TrimSpace(r.out), "\n") {
		var h store.Row
		if err := json.Unmarshal([]byte(l), &h); err != nil {
			t.Fatalf("ndjson line %q: %v", l, err)
		}
		got = append(got, h)
	}
	if len(got) != len(s.rows) {
		t.Fatalf("ndjson: %d rows, want %d", len(got), len(s.rows))
	}
	for i, h := range got {
		w := s.rows[i].Row()
		hb, _ := json.Marshal(h)
		wb, _ := json.Marshal(w)
		if !bytes.Equal(hb, wb) {
			t.Errorf("row %d:\n got %s\nwant %s", i, hb, wb)
		}
	}
	// The keys are the store's column names, a missing figure null.
	var raw map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(r.out, "\n", 4)[2]), &raw); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := slices.Clone(store.RowColumns)
	sort.Strings(want)
	if !slices.Equal(keys, want) {
		t.Errorf("ndjson keys %v, want %v", keys, want)
	}
	if raw["max_mbps"] != nil || raw["start"] == nil || raw["status"] != "error" {
		t.Errorf("the error result: %v", raw)
	}

	// json: one array, the same rows.
	r = run(t, "history", "--store", s.spec, "--format", "json")
	var arr []store.Row
	if err := json.Unmarshal([]byte(r.out), &arr); err != nil || len(arr) != len(s.rows) || arr[0].ID != s.rows[0].ID {
		t.Errorf("json: %v, %d rows", err, len(arr))
	}

	// csv: a header, RFC 4180 quoting of the warning with a comma,
	// quotes and a newline.
	r = run(t, "history", "list", "--format=csv", "--store", s.spec)
	recs, err := csv.NewReader(strings.NewReader(r.out)).ReadAll()
	if err != nil || len(recs) != len(s.rows)+1 || !slices.Equal(recs[0], store.RowColumns) {
		t.Fatalf("csv: %v, %d records, header %v", err, len(recs), recs[0])
	}
	for i, rec := range recs[1:] {
		w := s.rows[i].Row()
		if !slices.Equal(rec, w.Record()) {
			t.Errorf("csv row %d: %q, want %q", i, rec, w.Record())
		}
	}
	if !strings.Contains(r.out, `"refused, ""busy""`+"\n"+`retry later"`) {
		t.Errorf("csv: the warning is not quoted as RFC 4180 says:\n%s", r.out)
	}

	// table: a header, a line per result with its whole ID, newest
	// first, the bidirectional one with its RPM and grade.
	r = run(t, "history", "--format", "table", "--store", s.spec)
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if len(lines) != len(s.rows)+1 || !strings.HasPrefix(lines[0], "START (UTC)") {
		t.Fatalf("table:\n%s", r.out)
	}
	for i, row := range s.rows {
		if !strings.HasSuffix(lines[i+1], row.ID) {
			t.Errorf("table line %d %q: want ID %s", i+1, lines[i+1], row.ID)
		}
	}
	if !strings.Contains(lines[5], "bidirectional") || !strings.Contains(lines[5], "60000") || !strings.Contains(lines[5], "High") {
		t.Errorf("table: bidirectional line %q", lines[5])
	}
}

func TestHistoryFilters(t *testing.T) { historyFilters(t, seedSQLite(t)) }

func historyFilters(t *testing.T, s *seeded) {
	list := func(args ...string) []string {
		t.Helper()
		r := run(t, append([]string{"history", "--store", s.spec, "--format", "json"}, args...)...)
		if r.code != 0 {
			t.Fatalf("%q: exit %d %q", args, r.code, r.msg)
		}
		var rows []store.Row
		if err := json.Unmarshal([]byte(r.out), &rows); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		var out []string
		for _, h := range rows {
			out = append(out, h.ID)
		}
		return out
	}
	want := func(args []string, keep func(i int, r *store.Result) bool) {
		t.Helper()
		var w []string
		for i := range s.rows {
			if keep(i, &s.rows[i]) {
				w = append(w, s.rows[i].ID)
			}
		}
		if got := list(args...); !slices.Equal(got, w) {
			t.Errorf("%q: %v, want %v", args, got, w)
		}
	}
	want([]string{"--test", "rack"}, func(_ int, r *store.Result) bool { return r.Test == "rack" })
	want([]string{"--agent", "probe-b", "--test", "home"}, func(_ int, r *store.Result) bool { return r.Agent == "probe-b" && r.Test == "home" })
	want([]string{"--direction", "down"}, func(_ int, r *store.Result) bool { return r.Direction == "down" })
	want([]string{"--direction", "bidirectional"}, func(_ int, r *store.Result) bool { return r.Direction == "bidirectional" })
	srv := s.rows[0].Server
	want([]string{"--server", srv}, func(_ int, r *store.Result) bool { return r.Server == srv })
	want([]string{"--limit", "2"}, func(i int, _ *store.Result) bool { return i < 2 })
	// Started 0, 1, ..., 5 h ago: --since 150m keeps three, --since 7d all.
	want([]string{"--since", "150m"}, func(i int, _ *store.Result) bool { return i < 3 })
	want([]string{"--since", "7d"}, func(int, *store.Result) bool { return true })
	until := s.rows[2].Start.Format(time.RFC3339)
	want([]string{"--until", until}, func(i int, _ *store.Result) bool { return i > 2 })
	want([]string{"--since", "1d", "--until", until, "--limit", "1"}, func(i int, _ *store.Result) bool { return i == 3 })
	// A time given always bounds, the zero time (year 1) too: nothing
	// started before it, nothing after the far future. Only an absent
	// flag means no bound (docs/history.md).
	none := func(int, *store.Result) bool { return false }
	want([]string{"--until", "0001-01-01T00:00:00Z"}, none)
	want([]string{"--until", "0001-01-01T01:00:00+01:00"}, none) // the same instant
	want([]string{"--since", "9999-12-31T23:59:59Z"}, none)
	want([]string{"--since", "0001-01-01T00:00:00Z"}, func(int, *store.Result) bool { return true })
}

func TestHistoryShowExportPlot(t *testing.T) { historyShowExportPlot(t, seedSQLite(t)) }

func historyShowExportPlot(t *testing.T, s *seeded) {
	bidir := s.rows[4]
	r := run(t, "history", "show", bidir.ID, "--store", s.spec)
	if r.code != 0 {
		t.Fatalf("show: exit %d %q", r.code, r.msg)
	}
	for _, w := range []string{"Direction:", "bidirectional", "Maximum capacity (L3/IP):", "479.20 Mbit/s",
		"Responsiveness:", "60000 RPM (High)", "Upstream maximum/summary (L3/IP):", "473.50/277.62 Mbit/s", "Downstream maximum/summary (L3/IP):", `"Bidirectional": {`} {
		if !strings.Contains(r.out, w) {
			t.Errorf("show: no %q in\n%.1500s", w, r.out)
		}
	}
	// --json: the document as the client wrote it, byte for byte.
	r = run(t, "history", "--json", "show", bidir.ID, "--store", s.spec)
	if r.code != 0 || r.out != string(withNewline(s.docs[bidir.ID])) {
		t.Errorf("show --json: exit %d, %d bytes, want the %d of the document", r.code, len(r.out), len(s.docs[bidir.ID]))
	}

	// export: every result with its document, in ndjson.
	r = run(t, "history", "export", "--store", s.spec)
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if r.code != 0 || len(lines) != len(s.rows) {
		t.Fatalf("export: exit %d %q, %d lines", r.code, r.msg, len(lines))
	}
	for i, l := range lines {
		var h store.Row
		if err := json.Unmarshal([]byte(l), &h); err != nil {
			t.Fatalf("export line %d: %v", i, err)
		}
		var want bytes.Buffer
		if doc := s.docs[h.ID]; doc != nil { // a missed test has none
			if err := json.Compact(&want, doc); err != nil {
				t.Fatal(err)
			}
		}
		if h.ID != s.rows[i].ID || !bytes.Equal(h.Doc, want.Bytes()) {
			t.Errorf("export line %d: ID %s, doc of %d bytes, want %s's %d", i, h.ID, len(h.Doc), s.rows[i].ID, want.Len())
		}
	}
	r = run(t, "history", "export", "--store", s.spec, "--direction", "up")
	if n := strings.Count(r.out, "\n"); r.code != 0 || n != 1 {
		t.Errorf("export --direction up: exit %d, %d lines", r.code, n)
	}
	// --format csv: csv (it printed ndjson), a header and every row.
	r = run(t, "history", "export", "--format", "csv", "--store", s.spec)
	if recs, err := csv.NewReader(strings.NewReader(r.out)).ReadAll(); r.code != 0 || err != nil || len(recs) != len(s.rows)+1 || recs[0][0] != "id" {
		t.Errorf("export --format csv: exit %d %q, %d records, %v:\n%.300s", r.code, r.msg, len(recs), err, r.out)
	}
	if r = run(t, "history", "export", "--format", "table", "--store", s.spec); r.code == 0 {
		t.Errorf("export --format table: exit 0")
	}

	// plot: PNG to a file, SVG to standard output.
	out := filepath.Join(t.TempDir(), "r.png")
	if r := run(t, "history", "plot", bidir.ID, "-o", out, "--store", s.spec); r.code != 0 {
		t.Fatalf("plot: exit %d %q", r.code, r.msg)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("plot -o r.png: %v", err)
	}
	r = run(t, "history", "plot", s.rows[0].ID, "-o", "-", "--store", s.spec)
	if r.code != 0 || !strings.Contains(r.out, "</svg>") {
		t.Errorf("plot -o -: exit %d %q", r.code, r.msg)
	}
	// A missed test: show says it has no document, --json and plot refuse.
	missed := s.rows[len(s.rows)-1]
	r = run(t, "history", "show", missed.ID, "--store", s.spec)
	if r.code != 0 || !strings.Contains(r.out, "missed") || !strings.Contains(r.out, "No JSON document") {
		t.Errorf("show of a missed test: exit %d %q\n%s", r.code, r.msg, r.out)
	}
	for _, args := range [][]string{{"show", missed.ID, "--json"}, {"plot", missed.ID, "-o", "-"}} {
		r = run(t, append([]string{"history", "--store", s.spec}, args...)...)
		if r.code != exitFailure || !strings.Contains(r.msg, "no JSON document") {
			t.Errorf("%q of a missed test: exit %d %q", args, r.code, r.msg)
		}
	}
	// An error result has nothing to draw: said, not drawn.
	r = run(t, "history", "plot", s.rows[2].ID, "-o", "-", "--store", s.spec)
	if r.code != exitFailure || !strings.Contains(r.msg, s.rows[2].ID) {
		t.Errorf("plot of an error result: exit %d %q", r.code, r.msg)
	}
}

func TestHistoryErrors(t *testing.T) { historyErrors(t, seedSQLite(t)) }

func historyErrors(t *testing.T, s *seeded) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"show", "00000000-0000-4000-8000-999999999999"}, exitFailure, "no result"},
		{[]string{"plot", "nope"}, exitFailure, "no result"},
		{[]string{"show"}, exitConfig, "one result ID"},
		{[]string{"list", "extra"}, exitConfig, "unexpected argument"},
		{[]string{"delete"}, exitConfig, "unknown verb"},
		{[]string{"--since", "yesterday"}, exitConfig, "--since"},
		{[]string{"--since", "-3h"}, exitConfig, "--since"},
		{[]string{"--until", "7x"}, exitConfig, "--until"},
		{[]string{"--format", "xml"}, exitConfig, "--format"},
		{[]string{"--direction", "sideways"}, exitConfig, "--direction"},
		{[]string{"--limit", "-1"}, exitConfig, "--limit"},
		{[]string{"--bogus"}, exitConfig, "Unknown option"},
		{[]string{"plot", s.rows[0].ID, "-o", "x.gif"}, exitConfig, ""},
	} {
		r := run(t, append([]string{"history", "--store", s.spec}, c.args...)...)
		if r.code != c.code || !strings.Contains(r.msg, c.msg) {
			t.Errorf("history %q: exit %d %q, want %d and %q", c.args, r.code, r.msg, c.code, c.msg)
		}
	}
	// A store that is not there: an error, and no empty store made.
	r := run(t, "history", "--store", s.empty)
	if r.code != exitInit {
		t.Errorf("missing store: exit %d %q", r.code, r.msg)
	}
	if path, ok := strings.CutPrefix(s.empty, "sqlite:"); ok {
		if !strings.Contains(r.msg, "readers only read") {
			t.Errorf("missing store: %q", r.msg)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("history made %s (%v)", path, err)
		}
	}
	r = run(t, "history", "--store", "nosuch:x")
	if r.code != exitInit || !strings.Contains(r.msg, "no nosuch engine") {
		t.Errorf("unknown engine: exit %d %q", r.code, r.msg)
	}
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for s, want := range map[string]time.Time{
		"7d":                        now.Add(-7 * 24 * time.Hour),
		"1d12h":                     now.Add(-36 * time.Hour),
		"24h":                       now.Add(-24 * time.Hour),
		"90m":                       now.Add(-90 * time.Minute),
		"0s":                        now,
		"2026-11-30T08:00:00Z":      time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC),
		"2026-11-30T09:00:00+01:00": time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC),
		"2026-11-30":                time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
	} {
		got, err := parseWhen(s, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseWhen(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "d", "7", "-7d", "7dd", "x7d", "+7d", "1e3d", "7d-1h", "999999999d", "2026-13-01"} {
		if got, err := parseWhen(s, now); err == nil {
			t.Errorf("parseWhen(%q) = %v, want an error", s, got)
		}
	}
}

// TestHistoryTableOnTerminal: without --format, a terminal gets the table
// (a pipe gets ndjson: TestHistoryList).
func TestHistoryTableOnTerminal(t *testing.T) {
	s := seedSQLite(t)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(ptmx) // until the terminal's side is closed (EIO)
		done <- b
	}()
	app := newApp()
	app.Writer, app.ErrWriter = tty, io.Discard
	runErr := app.Run([]string{"udpstp", "history", "--store", s.spec})
	tty.Close()
	out := string(<-done)
	if runErr != nil {
		t.Fatal(runErr)
	}
	if !strings.Contains(out, "START (UTC)") || !strings.Contains(out, s.rows[0].ID) || strings.Contains(out, `"id":`) {
		t.Errorf("history on a terminal:\n%s", out)
	}
}

// TestHistoryColumnsAreTheStores: csv's header and the JSON keys are the
// results table's column names, in its order (docs/history.md says so).
func TestHistoryColumnsAreTheStores(t *testing.T) {
	s := seedSQLite(t)
	db, err := sql.Open("sqlite", strings.TrimPrefix(s.spec, "sqlite:"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT name FROM pragma_table_info('results') ORDER BY cid")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cols, store.RowColumns) {
		t.Errorf("results table's columns %v,\nhistory's %v", cols, store.RowColumns)
	}
}
