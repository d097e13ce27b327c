//go:build !small

package e2e

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/golden"
	"github.com/udpstp/udpstp/store"
)

// realDocs are every real client document in the repository: OB-UDPST's
// client.json of each reference capture and udpstp's plot fixtures, a
// --repeat document split into its runs as the agent stores them.
func realDocs(t *testing.T) [][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(golden.Require(t), "*", "client.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no client.json (%v)", err)
	}
	ours, _ := filepath.Glob(filepath.Join("..", "report", "plot", "testdata", "*.json"))
	var docs [][]byte
	for _, f := range append(files, ours...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if runs, err := store.Runs(b); err == nil {
			docs = append(docs, runs...)
			continue
		}
		docs = append(docs, b)
	}
	return docs
}

// TestHistoryE2E seeds an SQLite store with Summarize over every real
// document, as the agent stores results, and reads it back through the
// binary: the list in CSV, each document by show --json and by export, a
// plot; then lists it again while another process's writes go on.
func TestHistoryE2E(t *testing.T) {
	processTest(t)
	ctx := context.Background()
	spec := "sqlite:" + filepath.Join(t.TempDir(), "results.db")
	st, err := store.Open(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	docs := map[string][]byte{}
	var bidir string
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i, doc := range realDocs(t) {
		r := store.Result{ID: fmt.Sprintf("10000000-0000-4000-8000-%012d", i), Origin: store.OriginClient, Test: "real", Agent: "e2e"}
		if err := store.SummarizeInto(doc, &r); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		if r.Start.IsZero() { // no test ran: the agent's clock
			r.Start = base.Add(time.Duration(i) * time.Minute)
		}
		if err := st.Put(ctx, &r); err != nil {
			t.Fatal(err)
		}
		docs[r.ID] = doc
		if r.Direction == "bidirectional" && bidir == "" {
			bidir = r.ID
		}
	}
	history := func(args ...string) string {
		t.Helper()
		r := runCmd(exec.Command(udpstpBin, append([]string{"history", "--store", spec}, args...)...), await.Deadline)
		if r.err != nil || r.code != 0 {
			t.Fatalf("history %q: exit %d %v: %s", args, r.code, r.err, r.stderr)
		}
		return r.stdout
	}

	// The list: every result, newest first, each figure as stored.
	recs, err := csv.NewReader(strings.NewReader(history("--format", "csv", "--limit", "0"))).ReadAll()
	if err != nil || len(recs) != len(docs)+1 {
		t.Fatalf("csv: %v, %d records for %d results", err, len(recs), len(docs))
	}
	var prev string
	for i, rec := range recs[1:] {
		id, start := rec[0], rec[6]
		if i > 0 && start > prev {
			t.Errorf("csv row %d: start %s after %s: not newest first", i+1, start, prev)
		}
		prev = start
		r, err := store.Summarize(docs[id])
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		for col, want := range map[int]*float64{12: r.MaxMbps, 13: r.SummaryMbps, 14: r.LossRatio, 18: r.LoadedMs, 19: r.RPM} {
			w := ""
			if want != nil {
				w = fmt.Sprint(*want)
			}
			if rec[col] != w {
				t.Errorf("%s: %s %q, want %q", id, store.RowColumns[col], rec[col], w)
			}
		}
	}

	// Every document back, byte for byte by show --json, compacted by
	// export.
	for id, doc := range docs {
		if got := history("show", id, "--json"); got != string(withNewline(doc)) {
			t.Errorf("show %s --json: %d bytes, want the document's %d", id, len(got), len(doc))
		}
	}
	lines := strings.Split(strings.TrimSpace(history("export")), "\n")
	if len(lines) != len(docs) {
		t.Fatalf("export: %d lines for %d results", len(lines), len(docs))
	}
	for _, l := range lines {
		var h store.Row
		if err := json.Unmarshal([]byte(l), &h); err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, docs[h.ID]); err != nil || !bytes.Equal(h.Doc, want.Bytes()) {
			t.Errorf("export %s: the document differs (%v)", h.ID, err)
		}
	}
	show := history("show", bidir)
	if !strings.Contains(show, "Responsiveness:") || !strings.Contains(show, "RPM (") {
		t.Errorf("show %s:\n%.800s", bidir, show)
	}
	svg := filepath.Join(t.TempDir(), "bidir.svg")
	history("plot", bidir, "-o", svg)
	if b, err := os.ReadFile(svg); err != nil || !bytes.Contains(b, []byte("</svg>")) {
		t.Errorf("plot: %v", err)
	}

	// While another process writes (the agent): each read sees a whole
	// list, between what was there and all that will be.
	const extra = 60
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w, err := store.Open(ctx, spec)
		if err != nil {
			t.Error(err)
			return
		}
		defer w.Close()
		doc := docs[bidir]
		for i := range extra {
			r := store.Result{ID: fmt.Sprintf("20000000-0000-4000-8000-%012d", i), Origin: store.OriginClient, Test: "live", Agent: "e2e"}
			if err := store.SummarizeInto(doc, &r); err != nil {
				t.Error(err)
				return
			}
			r.Start = time.Now()
			if err := w.Put(ctx, &r); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	counts := []int{}
	for range 4 {
		n := strings.Count(history("--limit", "0", "--format", "ndjson"), "\n")
		if n < len(docs) || n > len(docs)+extra {
			t.Errorf("a list while writing: %d results, want %d to %d", n, len(docs), len(docs)+extra)
		}
		counts = append(counts, n)
	}
	wg.Wait()
	if n := strings.Count(history("--test", "live", "--limit", "0", "--format", "ndjson"), "\n"); n != extra {
		t.Errorf("after the writes: %d live results, want %d", n, extra)
	}
	if !slices.IsSorted(counts) {
		t.Errorf("the lists while writing went back: %v", counts)
	}
}

// withNewline is b ending in a newline, as show --json prints a document.
func withNewline(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] != '\n' {
		return append(b[:len(b):len(b)], '\n')
	}
	return b
}
