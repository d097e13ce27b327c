package store

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/golden"
	"github.com/udpstp/udpstp/report"
)

var update = flag.Bool("update", false, "rewrite testdata/summary.golden")

// goldenDocs are the real documents the golden test summarizes: every
// OB-UDPST client.json of the reference captures and the documents of
// udpstp's own client kept as report/plot's fixtures (a --repeat
// document's runs one by one), by a name for the golden file.
func goldenDocs(t testing.TB) map[string][]byte {
	docs := map[string][]byte{}
	dir := golden.Require(t)
	files, err := filepath.Glob(filepath.Join(dir, "*", "client.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no client.json under %s (%v)", dir, err)
	}
	for _, f := range files {
		docs["obudpst/"+filepath.Base(filepath.Dir(f))] = readFile(t, f)
	}
	ours, err := filepath.Glob(filepath.Join("..", "report", "plot", "testdata", "*.json"))
	if err != nil || len(ours) == 0 {
		t.Fatalf("no udpstp documents in report/plot/testdata (%v)", err)
	}
	for _, f := range ours {
		name := "udpstp/" + strings.TrimSuffix(filepath.Base(f), ".json")
		b := readFile(t, f)
		if runs, err := Runs(b); err == nil {
			for i, r := range runs {
				docs[fmt.Sprintf("%s/run%d", name, i+1)] = r
			}
			continue
		}
		docs[name] = b
	}
	return docs
}

func readFile(t testing.TB, name string) []byte {
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// line is a Result's figures on one line, for the golden file.
func line(r *Result) string {
	f := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%g", *p)
	}
	ts := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("dir=%s status=%s es=%d server=%s start=%s end=%s max=%s sum=%s loss=%s rttmin=%s rttrange=%s dv=%s loaded=%s rpm=%s grade=%s warning=%q",
		r.Direction, r.Status, r.ErrorStatus, r.Server, ts(r.Start), ts(r.End), f(r.MaxMbps), f(r.SummaryMbps),
		f(r.LossRatio), f(r.RTTMinMs), f(r.RTTRangeMs), f(r.DelayVarMs), f(r.LoadedMs), f(r.RPM), r.Grade, r.Warning)
}

// TestSummarizeGolden summarizes every real document and compares the
// figures with testdata/summary.golden (go test -run TestSummarizeGolden
// -update rewrites it; review the diff).
func TestSummarizeGolden(t *testing.T) {
	docs := goldenDocs(t)
	names := make([]string, 0, len(docs))
	for n := range docs {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		r, err := Summarize(docs[n])
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		fmt.Fprintf(&b, "%s %s\n", n, line(&r))
	}
	const path = "testdata/summary.golden"
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := string(readFile(t, path))
	if got := b.String(); got != want {
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		for i := range max(len(gl), len(wl)) {
			g, w := "", ""
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Errorf("line %d:\n got %s\nwant %s", i+1, g, w)
			}
		}
	}
}

// TestSummarizeGoldenFigures checks figures of the real documents against
// values read by hand from them, independent of the golden file.
func TestSummarizeGoldenFigures(t *testing.T) {
	docs := goldenDocs(t)
	get := func(name string) Result {
		t.Helper()
		d, ok := docs[name]
		if !ok {
			t.Fatalf("no document %s", name)
		}
		r, err := Summarize(d)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r
	}
	eq := func(name, what string, p *float64, want float64) {
		t.Helper()
		if p == nil || *p != want {
			t.Errorf("%s: %s = %v, want %v", name, what, deref(p), want)
		}
	}

	r := get("obudpst/ds_default_v4")
	if r.Direction != "down" || r.Status != StatusOK || r.ErrorStatus != 0 {
		t.Errorf("ds_default_v4: %s", line(&r))
	}
	eq("ds_default_v4", "MaxMbps", r.MaxMbps, 805.36)
	if want := time.Date(2026, 11, 30, 3, 22, 27, 30588000, time.UTC); !r.Start.Equal(want) {
		t.Errorf("ds_default_v4: Start %v, want %v", r.Start, want)
	}
	if r.LoadedMs != nil || r.RPM != nil || r.Grade != "" {
		t.Errorf("ds_default_v4: latency under load on a one-direction test: %s", line(&r))
	}

	r = get("obudpst/us_default_v4")
	if r.Direction != "up" {
		t.Errorf("us_default_v4: direction %q", r.Direction)
	}
	eq("us_default_v4", "MaxMbps", r.MaxMbps, 881.2)

	// -i -3: two modes; the figures are the second mode's (ModalResult),
	// not AtMax's first mode at 0.11 Mbit/s.
	r = get("obudpst/ds_dualphase_i-3")
	if r.MaxMbps == nil || *r.MaxMbps <= 1 {
		t.Errorf("ds_dualphase_i-3: MaxMbps %v, want the second mode's", deref(r.MaxMbps))
	}

	// An error document: no Output, no figures, an error with its message.
	r = get("obudpst/no_server_closed_port")
	if r.Status != StatusError || r.ErrorStatus != 200 || r.Warning == "" || !r.Start.IsZero() || r.MaxMbps != nil || r.Direction != "" {
		t.Errorf("no_server_closed_port: %s", line(&r))
	}

	r = get("udpstp/udpstp_bidir_t5")
	if r.Direction != "bidirectional" || r.Status != StatusOK {
		t.Errorf("bidir: %s", line(&r))
	}
	eq("bidir", "MaxMbps (the downstream half's loaded maximum)", r.MaxMbps, 479.2)
	// Loopback: every RTT is 0 ms, so the loaded round trip is the
	// resolution, 1 ms: 60000 RPM.
	eq("bidir", "LoadedMs", r.LoadedMs, 1)
	eq("bidir", "RPM", r.RPM, 60000)
	if r.Grade != report.GradeHigh {
		t.Errorf("bidir: grade %q", r.Grade)
	}
	if r.Start.IsZero() || !r.End.After(r.Start) {
		t.Errorf("bidir: start %v end %v", r.Start, r.End)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestSummarizeRepeat: a --repeat document is refused, and Runs splits it
// into documents Summarize takes.
func TestSummarizeRepeat(t *testing.T) {
	doc := readFile(t, filepath.Join("..", "report", "plot", "testdata", "udpstp_repeat2_bidir_t5.json"))
	if _, err := Summarize(doc); !errors.Is(err, ErrRepeat) {
		t.Fatalf("Summarize(repeat) = %v, want ErrRepeat", err)
	}
	runs, err := Runs(doc)
	if err != nil || len(runs) != 2 {
		t.Fatalf("Runs: %d runs, %v", len(runs), err)
	}
	for i, d := range runs {
		r, err := Summarize(d)
		if err != nil || r.Direction != "bidirectional" || r.RPM == nil {
			t.Errorf("run %d: %v %s", i+1, err, line(&r))
		}
	}
	if _, err := Runs([]byte(`{"ErrorStatus":0}`)); err == nil {
		t.Error("Runs of a single test's document: no error")
	}
}

// TestSummarizeOurErrorDocument: udpstp's client's document of a test that
// never started (report's Collector, as the client fills it).
func TestSummarizeOurErrorDocument(t *testing.T) {
	col := report.New(io.Discard, report.Options{Format: report.FormatJSON, Connections: 1, MinConnections: 1})
	col.Error(200, "ERROR: Minimum required connections (1) unavailable")
	col.ConnEnded(false)
	if err := col.Finish(); err != nil {
		t.Fatal(err)
	}
	r, err := Summarize(col.Document(report.FormatJSONFormatted))
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != StatusError || r.ErrorStatus != 200 || !strings.Contains(r.Warning, "unavailable") || r.MaxMbps != nil {
		t.Errorf("%s", line(&r))
	}
}

// TestSummarizeLoadedRTT: a pair whose halves measured a loaded round
// trip: each half's MinRTTSummary plus its Loaded RTTAvg (the µs figure
// where present), averaged over the halves.
func TestSummarizeLoadedRTT(t *testing.T) {
	doc := `{"Upstream": {"Input": {"Role": "Sender"}, "ErrorStatus": 0, "ErrorMessage": "", "ErrorMessage2": ""},
	"Downstream": {"Input": {"Role": "Receiver"}, "ErrorStatus": 3, "ErrorMessage": "WARNING: slow", "ErrorMessage2": ""},
	"udpstp": {"Bidirectional": {
	  "Upstream": {"Loaded": {"RTTAvg": 0.25}, "MinRTTSummary": 0.02},
	  "Downstream": {"Loaded": {"RTTAvg": 0.3, "Fine": {"RTTAvg": 0.2905}}, "MinRTTSummary": 0.02}}}}`
	r, err := Summarize([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	// (270 + 310.5) / 2 = 290.25 ms: 206.7 RPM, Medium.
	if r.LoadedMs == nil || *r.LoadedMs != 290.25 || r.RPM == nil || r.Grade != report.GradeMedium {
		t.Fatalf("%s", line(&r))
	}
	if want := 60000 / 290.25; *r.RPM != want {
		t.Errorf("RPM %v, want %v", *r.RPM, want)
	}
	if r.Status != StatusWarning || r.ErrorStatus != 3 || r.Warning != "Downstream: WARNING: slow" {
		t.Errorf("status: %s", line(&r))
	}
}

// TestSummarizeLoadedRTTMicroseconds: a LAN's pair, whose whole-ms
// figures are all 0: the loaded round trip is the downstream half's figures
// to the µs (RTTVarBaseFine plus Loaded.Fine.RTTAvg), 0.2 ms, not the 1 ms
// floor of the ms figures that made every LAN 60000 RPM.
func TestSummarizeLoadedRTTMicroseconds(t *testing.T) {
	doc := `{"Upstream": {"Input": {"Role": "Sender"}, "ErrorStatus": 0, "ErrorMessage": "", "ErrorMessage2": ""},
	"Downstream": {"Input": {"Role": "Receiver"}, "ErrorStatus": 0, "ErrorMessage": "", "ErrorMessage2": ""},
	"udpstp": {"Bidirectional": {
	  "Upstream": {"Loaded": {"RTTAvg": 0}, "MinRTTSummary": 0},
	  "Downstream": {"Loaded": {"RTTAvg": 0, "Fine": {"RTTAvg": 0.00015}}, "MinRTTSummary": 0, "MinRTTFine": 0.00006, "RTTVarBaseFine": 0.00005}}}}`
	r, err := Summarize([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if r.LoadedMs == nil || math.Abs(*r.LoadedMs-0.2) > 1e-9 || r.RPM == nil || math.Abs(*r.RPM-300000) > 1e-3 || r.Grade != report.GradeHigh {
		t.Fatalf("%s, want 0.2 ms, 300000 RPM", line(&r))
	}
}

// TestSummarizeRefuses: what is not a result document is an error, not a
// zero Result taken for one.
func TestSummarizeRefuses(t *testing.T) {
	for _, doc := range []string{``, `null`, `[]`, `{}`, `{"ErrorStatus": null}`, `{"ErrorStatus": "0"}`,
		`{"Upstream": null}`, `{"Upstream": {"ErrorStatus": 0}}`, `{"data_records": []}`, `{"ErrorStatus": 0`} {
		if r, err := Summarize([]byte(doc)); err == nil {
			t.Errorf("Summarize(%q) = %s, want an error", doc, line(&r))
		}
	}
}

// FuzzSummarize: no input makes Summarize panic, and what it accepts has
// a status that agrees with its ErrorStatus and finite figures.
func FuzzSummarize(f *testing.F) {
	for _, d := range goldenDocs(f) {
		f.Add(d)
	}
	f.Add([]byte(`{"Upstream": {"ErrorStatus": 1e300}, "Downstream": {"ErrorStatus": -1e300}, "udpstp": {"Bidirectional": {"Upstream": {"Loaded": {"RTTAvg": 1e308}, "MinRTTSummary": 1e308}}}}`))
	f.Add([]byte(`{"ErrorStatus": 0, "Output": {"BOMTime": "x", "ModalResult": [{}], "Summary": {"MinRTTSummary": -1}}}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		r, err := Summarize(doc)
		if err != nil {
			return
		}
		if r.Status != StatusOf(r.ErrorStatus) {
			t.Fatalf("status %s for ErrorStatus %d", r.Status, r.ErrorStatus)
		}
		for _, p := range []*float64{r.MaxMbps, r.SummaryMbps, r.LossRatio, r.RTTMinMs, r.RTTRangeMs, r.DelayVarMs, r.LoadedMs, r.RPM} {
			if p != nil && (math.IsNaN(*p) || math.IsInf(*p, 0)) {
				t.Fatalf("figure not finite: %s", line(&r))
			}
		}
		if (r.RPM == nil) != (r.Grade == "") {
			t.Fatalf("RPM and grade disagree: %s", line(&r))
		}
	})
}

// TestSummarizeInto keeps what the agent set and fills the rest.
func TestSummarizeInto(t *testing.T) {
	doc := goldenDocs(t)["obudpst/us_default_v4"]
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := Result{ID: "x", Test: "home", Agent: "probe", Server: "srv:1", Start: start}
	if err := SummarizeInto(doc, &r); err != nil {
		t.Fatal(err)
	}
	if r.ID != "x" || r.Test != "home" || r.Agent != "probe" || r.Server != "srv:1" || !r.Start.Equal(start) ||
		r.End.IsZero() || r.Direction != "up" || r.MaxMbps == nil || *r.MaxMbps != 881.2 || len(r.Doc) != len(doc) {
		t.Errorf("%s", line(&r))
	}
	before := r
	if err := SummarizeInto([]byte("{}"), &r); err == nil || r.MaxMbps != before.MaxMbps || r.Direction != "up" {
		t.Errorf("a bad document: %v, %s", err, line(&r))
	}
}

// TestHalves: each half of a pair as its own direction's figures.
func TestHalves(t *testing.T) {
	docs := goldenDocs(t)
	up, down, ok := Halves(docs["udpstp/udpstp_bidir_t5"])
	if !ok || up.Direction != "up" || down.Direction != "down" || up.MaxMbps == nil || *up.MaxMbps != 473.5 ||
		down.MaxMbps == nil || *down.MaxMbps != 479.2 {
		t.Errorf("Halves: %v\n up   %s\n down %s", ok, line(&up), line(&down))
	}
	for _, d := range []string{"obudpst/ds_default_v4", "udpstp/udpstp_repeat2_bidir_t5/run1"} {
		_, _, ok := Halves(docs[d])
		if ok != (d != "obudpst/ds_default_v4") {
			t.Errorf("Halves(%s): %v", d, ok)
		}
	}
	if _, _, ok := Halves([]byte(`{"Upstream": {"Upstream": {"ErrorStatus": 0}, "Downstream": {"ErrorStatus": 0}}, "Downstream": {"ErrorStatus": 0}}`)); ok {
		t.Error("Halves of a pair nested in a pair: ok")
	}
}
