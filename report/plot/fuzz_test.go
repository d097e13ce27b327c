package plot

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// FuzzRead feeds the reader OB-UDPST's results, udpstp's and a few broken
// documents, and whatever the fuzzer makes of them: Read never panics, a
// document it accepts has Sub-Intervals, and one it accepts renders
// (drawing is only skipped for documents too big to draw many of).
func FuzzRead(f *testing.F) {
	for _, p := range obudpstResults(f) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	mine, _ := filepath.Glob("testdata/*.json")
	for _, p := range mine {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	b, err := os.ReadFile(filepath.Join(golden.Require(f), "server_perf_stats.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	for _, s := range []string{
		``, `{}`, `[]`, `null`, `{"ErrorStatus":0}`,
		`{"Output":{"IncrementalResult":[{}]},"ErrorStatus":0}`,
		`{"Output":{"IncrementalResult":[{"Seconds":-1e308,"IPLayerCapacity":1e308}],"AtMax":{"MaxIPLayerCapacity":-1}},"ErrorStatus":0}`,
		`{"Output":{"IncrementalResult":[{"Interval":3}]},"ErrorStatus":0,"udpstp":{"Connections":[{"Connection":-7,"IPLayerCapacity":[1e300,-1e300],"SendingRateIndex":[1e300],"SendingRateMbps":[]}]}}`,
		`{"Upstream":{"ErrorStatus":0,"Output":{"IncrementalResult":[{}]}},"udpstp":{"Bidirectional":{"IdleSubIntervals":1e300,"StartOffset":-1e308}}}`,
		`{"Runs":[{},null,{"Downstream":{}},{"ErrorStatus":0,"Output":{"IncrementalResult":[{}]}}],"Aggregate":{"RunsRequested":-5}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzDoc(t, b)
		r, err := Read(bytes.NewReader(b))
		if err != nil {
			if r != nil {
				t.Fatal("a result with an error")
			}
			return
		}
		if len(r.Intervals) == 0 {
			t.Fatal("accepted a result without Sub-Intervals")
		}
		points := len(r.Intervals)
		for _, c := range r.PerConn {
			points += len(c.Capacity) + len(c.RateMbps)
		}
		if points > 2000 {
			return
		}
		if err := Render(discard{}, r, SVG); err != nil {
			t.Fatalf("accepted result does not render: %v", err)
		}
		// The raster too, where it is quick: a fuzzed figure's values
		// reach the rasterizer's edges.
		if points <= 200 {
			if err := Render(discard{}, r, PNG); err != nil {
				t.Fatalf("accepted result does not render as PNG: %v", err)
			}
		}
	})
}

// fuzzDoc: ReadDoc takes what Read takes and the pair and repeat
// documents; what it accepts has something to draw, and renders.
func fuzzDoc(t *testing.T, b []byte) {
	d, err := ReadDoc(bytes.NewReader(b))
	if err != nil {
		return
	}
	points := 0
	for _, run := range d.Runs {
		for _, r := range run.Tests {
			if len(r.Intervals) == 0 {
				t.Fatal("accepted a run without Sub-Intervals")
			}
			points += len(r.Intervals)
			for _, c := range r.PerConn {
				points += len(c.Capacity) + len(c.RateMbps)
			}
		}
	}
	if points == 0 {
		t.Fatal("accepted a document with nothing to draw")
	}
	if points > 2000 {
		return
	}
	if err := RenderDoc(discard{}, d, SVG); err != nil {
		t.Fatalf("accepted document does not render: %v", err)
	}
}
