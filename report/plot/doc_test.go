package plot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// Real results of udpstp's --bidirectional and --repeat on loopback
// (testdata/README.md).
const (
	bidirFixture       = "testdata/udpstp_bidir_t5.json"
	repeatFixture      = "testdata/udpstp_repeat3_ds_c2_t5.json"
	repeatBidirFixture = "testdata/udpstp_repeat2_bidir_t5.json"
)

func TestReadDoc(t *testing.T) {
	for _, c := range []struct {
		path       string
		kind       Kind
		runs       int
		directions int // per run
		idle       int
	}{
		{"testdata/udpstp_us_c2_t5.json", Single, 1, 1, 0},
		{bidirFixture, Bidirectional, 1, 2, 2},
		{repeatFixture, Repeat, 3, 1, 0},
		{repeatBidirFixture, Repeat, 2, 2, 2},
	} {
		d, err := ReadDocFile(c.path)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if d.Kind != c.kind || len(d.Runs) != c.runs || d.Requested != c.runs {
			t.Errorf("%s: kind %d, %d runs of %d, want %d, %d", c.path, d.Kind, len(d.Runs), d.Requested, c.kind, c.runs)
		}
		for i, run := range d.Runs {
			if run.N != i+1 || len(run.Tests) != c.directions || run.IdleSubIntervals != c.idle || run.Problem != "" || run.Status != 0 {
				t.Errorf("%s run %d: %+v", c.path, i+1, run)
			}
			if c.directions == 2 && (!run.Tests[0].Upstream || run.Tests[1].Upstream) {
				t.Errorf("%s run %d: halves not upstream then downstream", c.path, i+1)
			}
			for _, r := range run.Tests {
				if len(r.Intervals) != 5 || len(r.Maxima) == 0 {
					t.Errorf("%s run %d: %d Sub-Intervals, %d maxima", c.path, i+1, len(r.Intervals), len(r.Maxima))
				}
			}
		}
	}
}

// A pair or a repeat with nothing to draw anywhere is ErrNoResults, saying
// why; one half or run without figures is drawn without it, named.
func TestReadDocNothingToDraw(t *testing.T) {
	failed := `{"ErrorStatus":200,"ErrorMessage":"ERROR: Minimum required connections (1) unavailable"}`
	for _, doc := range []string{
		`{"Upstream":` + failed + `,"Downstream":` + failed + `}`,
		`{"Runs":[` + failed + `,` + failed + `],"Aggregate":{"RunsRequested":2}}`,
	} {
		if _, err := ReadDoc(strings.NewReader(doc)); !errors.Is(err, ErrNoResults) || !strings.Contains(err.Error(), "ErrorStatus 200") && !strings.Contains(err.Error(), "none of the 2 runs") {
			t.Errorf("%.40s: %v", doc, err)
		}
	}
	var good struct{ Runs []json.RawMessage }
	if err := json.Unmarshal([]byte(readFixture(t, repeatFixture)), &good); err != nil {
		t.Fatal(err)
	}
	joined, _ := json.Marshal(map[string]any{"Runs": append([]json.RawMessage{json.RawMessage(failed)}, good.Runs...)})
	doc := string(joined)
	d, err := ReadDoc(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Runs) != 4 || len(d.Runs[0].Tests) != 0 || d.Runs[0].Status != 200 || len(d.Runs[1].Tests) != 1 {
		t.Fatalf("a failed run among good ones: %+v", d.Runs[0])
	}
	var b bytes.Buffer
	if err := RenderDoc(&b, d, SVG); err != nil {
		t.Fatal(err)
	}
	if svg := parseSVG(t, b.Bytes()); !strings.Contains(strings.Join(svg.texts, "\n"), "run 1: ErrorStatus 200: ") {
		t.Errorf("the failed run is not named: %q", svg.texts)
	}
}

func readFixture(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func renderDocSVG(t *testing.T, path string) (*Doc, svgDoc) {
	t.Helper()
	d, err := ReadDocFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := RenderDoc(&b, d, SVG); err != nil {
		t.Fatal(err)
	}
	return d, parseSVG(t, b.Bytes())
}

// A pair is one figure: every panel has both directions, each in its
// colour, each direction's maximum ringed and labelled, the idle
// baseline's end marked, the time axis once.
func TestSVGBidirectional(t *testing.T) {
	d, doc := renderDocSVG(t, bidirFixture)
	run := &d.Runs[0]
	head, _ := PairHeading(run)
	for _, want := range []string{head, TitleCapacity, LabelIdleEnd, LabelTime, "Upstream, maximum", "Downstream, average",
		fmt.Sprintf("upstream maximum %.2f Mbps", loadedMax(run.Tests[0]).Capacity),
		fmt.Sprintf("downstream maximum %.2f Mbps", loadedMax(run.Tests[1]).Capacity)} {
		if doc.count(want) != 1 {
			t.Errorf("%d texts %q, want 1", doc.count(want), want)
		}
	}
	if !strings.HasPrefix(head, "Bidirectional test to 127.0.0.1: 5 Sub-Intervals of 1 s (2 idle); maxima up ") {
		t.Errorf("heading %q", head)
	}
	// Named in the capacity and sequence error legends.
	if doc.count("Upstream") != 2 || doc.count("Downstream") != 2 {
		t.Errorf("directions not in both legends: %q", doc.texts)
	}
	for _, up := range []bool{true, false} {
		// Capacity 1 line, delay 2, errors 3, and their legend lines.
		if n := doc.strokes(DirColor(up)); n != 6+4 {
			t.Errorf("upstream %v: %d paths in its colour, want 10 (6 series, 4 legend lines)", up, n)
		}
	}
	if n := doc.strokes(maxColor); n != 2 {
		t.Errorf("%d maximum markers, want 2", n)
	}
	if n := doc.strokes(markColor); n != 3 {
		t.Errorf("%d idle markers, want 3 (one per panel)", n)
	}
}

// A repeat: each run's maximum against its number with the median, the
// delay variation per run, and every run's capacity per Sub-Interval.
func TestSVGRepeat(t *testing.T) {
	t.Run("downstream", func(t *testing.T) {
		d, doc := renderDocSVG(t, repeatFixture)
		head, _ := RepeatHeading(d)
		s, _ := runStat(d, false)
		for _, want := range []string{head, TitleRunMaxima, LabelRun, LabelTime, "run 1", "run 2", "run 3",
			fmt.Sprintf("downstream median %.2f Mbps", s.median)} {
			if doc.count(want) != 1 {
				t.Errorf("%d texts %q, want 1", doc.count(want), want)
			}
		}
		if !strings.HasPrefix(head, "3 downstream tests to 127.0.0.1; median maxima down ") || !doc.hasPrefix(TitleRunDelay) || !doc.hasPrefix(TitleRunCapacity) {
			t.Errorf("heading %q or a panel missing: %q", head, doc.texts)
		}
		if doc.hasPrefix("upstream") {
			t.Errorf("an upstream series in a downstream repeat: %q", doc.texts)
		}
		// The maxima, the median, the delay's maximum and average, and
		// their legend lines; run 2's capacity line is in the
		// downstream colour too, with its legend line.
		if n := doc.strokes(DirColor(false)); n != 4+3+2 {
			t.Errorf("%d paths in the downstream colour, want 9", n)
		}
		for _, id := range []int{1, 3} {
			if n := doc.strokes(ConnColor(id)); n != 2 {
				t.Errorf("run %d: %d paths in its colour, want 2 (its line, its legend)", id, n)
			}
		}
	})
	t.Run("bidirectional", func(t *testing.T) {
		d, doc := renderDocSVG(t, repeatBidirFixture)
		head, _ := RepeatHeading(d)
		if !strings.HasPrefix(head, "2 bidirectional tests to 127.0.0.1; median maxima up ") || !strings.Contains(head, " / down ") {
			t.Errorf("heading %q", head)
		}
		// Each direction is named in the maxima's and the delay's legends.
		for want, n := range map[string]int{"upstream": 2, "downstream": 2, "run 1": 1, "run 2": 1} {
			if doc.count(want) != n {
				t.Errorf("%d texts %q, want %d", doc.count(want), want, n)
			}
		}
		if !doc.hasPrefix("upstream median ") || !doc.hasPrefix("downstream median ") {
			t.Errorf("a direction's median missing: %q", doc.texts)
		}
	})
}

// Every kind renders as a PNG of the size PixelSize gives.
func TestPNGDoc(t *testing.T) {
	for _, path := range []string{bidirFixture, repeatFixture, repeatBidirFixture} {
		d, err := ReadDocFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := RenderDoc(&b, d, PNG); err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(&b)
		if err != nil {
			t.Fatalf("%s: not a PNG: %v", path, err)
		}
		w, h := d.PixelSize()
		if got := img.Bounds().Size(); got.X != w || got.Y != h || w < 800 || h < 600 {
			t.Errorf("%s: %v pixels, want %dx%d", path, got, w, h)
		}
		coloured := 0
		for y := 0; y < h; y += 2 {
			for x := 0; x < w; x += 2 {
				if r, g, b, _ := img.At(x, y).RGBA(); r != g || g != b {
					coloured++
				}
			}
		}
		if coloured < 100 {
			t.Errorf("%s: %d coloured pixels sampled: no series drawn?", path, coloured)
		}
	}
}

// A downstream result of udpstp's has its delay variations to the µs
// (udpstp.Delays): the delay panel draws those, where the whole ms of
// loopback read 0, and says so.
func TestFineDelays(t *testing.T) {
	const path = "testdata/udpstp_ds_t5_fine.json"
	r, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	subMs := 0
	for _, iv := range r.Intervals {
		if iv.RTTAvg > 0 && iv.RTTAvg < 1 {
			subMs++
		}
	}
	if !r.FineDelays || subMs == 0 {
		t.Errorf("fine delays %v, %d Sub-Intervals with a sub-ms RTT average: %+v", r.FineDelays, subMs, r.Intervals)
	}
	_, doc := renderSVG(t, path)
	if !doc.hasPrefix(TitleDelay + ": RTT variation to the µs") {
		t.Errorf("the delay panel does not say it is to the µs: %q", doc.texts)
	}
	ob, err := ReadFile(filepath.Join(golden.Require(t), "ds_default_v4", "client.json"))
	if err != nil || ob.FineDelays {
		t.Errorf("OB-UDPST's file: %v, fine delays %v", err, ob.FineDelays)
	}
}

// A result of udpstp's client without --extensions is OB-UDPST's document
// key for key: it reads and draws the same, without the per-connection
// lines and the µs delays that only the "udpstp" key holds.
func TestStrictResult(t *testing.T) {
	for _, name := range []string{"udpstp_us_c2_t5.json", "udpstp_ds_t5_fine.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m["udpstp"]; !ok {
			t.Fatalf("%s: the fixture has no udpstp key", name)
		}
		delete(m, "udpstp")
		strict, _ := json.Marshal(m)
		full, err := Read(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Read(bytes.NewReader(strict))
		if err != nil {
			t.Fatalf("%s without the key: %v", name, err)
		}
		if r.PerConn != nil || r.FineDelays || len(r.Intervals) != len(full.Intervals) || len(r.Intervals) == 0 {
			t.Errorf("%s without the key: %d connections, fine %v, %d Sub-Intervals (with it %d, %v, %d)", name,
				len(r.PerConn), r.FineDelays, len(r.Intervals), len(full.PerConn), full.FineDelays, len(full.Intervals))
		}
		var svg bytes.Buffer
		if err := Render(&svg, r, SVG); err != nil || !bytes.Contains(svg.Bytes(), []byte("</svg>")) {
			t.Errorf("%s without the key: %v", name, err)
		}
	}
}
