package resultdoc

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// TestDecodeGolden: every OB-UDPST client.json (its releases' captures,
// successful and failed) decodes as one test, and the typed figures are
// the document's own, read back through a generic map.
func TestDecodeGolden(t *testing.T) {
	var files []string
	err := filepath.WalkDir(golden.Require(t), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "client.json" {
			files = append(files, p)
		}
		return err
	})
	if err != nil || len(files) < 10 {
		t.Fatalf("OB-UDPST client.json files: %d found, %v", len(files), err)
	}
	complete := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(golden.Require(t), f)
		d, err := Decode(b)
		if err != nil || d.Kind() != Single {
			t.Errorf("%s: %v, kind %v", name, err, d)
			continue
		}
		tst, err := DecodeTest(b)
		if err != nil || tst.ErrorStatus == nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var m struct {
			ErrorStatus float64
			Input       map[string]any
			Output      *struct {
				Summary, AtMax    map[string]any
				IncrementalResult []map[string]any
			}
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if *tst.ErrorStatus != m.ErrorStatus {
			t.Errorf("%s: ErrorStatus %v, want %v", name, *tst.ErrorStatus, m.ErrorStatus)
		}
		if m.Input != nil && (tst.Input == nil || tst.Input.Role != m.Input["Role"]) {
			t.Errorf("%s: Input %+v, want Role %v", name, tst.Input, m.Input["Role"])
		}
		if m.Output == nil || m.Output.AtMax == nil {
			continue
		}
		complete++
		o := tst.Output
		for _, c := range []struct {
			key  string
			got  *float64
			want any
		}{
			{"AtMax.MaxIPLayerCapacity", o.AtMax.MaxIPLayerCapacity, m.Output.AtMax["MaxIPLayerCapacity"]},
			{"AtMax.MaxETHCapacityWithFCSVLAN", o.AtMax.MaxETHCapacityWithFCSVLAN, m.Output.AtMax["MaxETHCapacityWithFCSVLAN"]},
			{"AtMax.PDVMax", o.AtMax.PDVMax, m.Output.AtMax["PDVMax"]},
			{"AtMax.Intervals", o.AtMax.Intervals, m.Output.AtMax["Intervals"]},
			{"Summary.IPLayerCapacitySummary", o.Summary.IPLayerCapacitySummary, m.Output.Summary["IPLayerCapacitySummary"]},
			{"Summary.MinRTTSummary", o.Summary.MinRTTSummary, m.Output.Summary["MinRTTSummary"]},
			{"Summary.LossCount", o.Summary.LossCount, m.Output.Summary["LossCount"]},
		} {
			if c.got == nil || *c.got != c.want {
				t.Errorf("%s: %s = %v, want %v", name, c.key, c.got, c.want)
			}
		}
		if len(o.IncrementalResult) != len(m.Output.IncrementalResult) {
			t.Errorf("%s: %d Sub-Intervals, want %d", name, len(o.IncrementalResult), len(m.Output.IncrementalResult))
		} else if n := len(o.IncrementalResult); n > 0 && o.IncrementalResult[n-1].IPLayerCapacity != m.Output.IncrementalResult[n-1]["IPLayerCapacity"] {
			t.Errorf("%s: last Sub-Interval's capacity %v", name, o.IncrementalResult[n-1].IPLayerCapacity)
		}
	}
	if complete == 0 {
		t.Error("no complete result among the captures")
	}
}

// TestDecodeShapes: udpstp's own documents (report/plot's testdata: one
// test with --extensions, a --bidirectional pair, --repeat documents of
// tests and of pairs) decode as their kind, each part as a test.
func TestDecodeShapes(t *testing.T) {
	for file, want := range map[string]Kind{
		"udpstp_ds_c2_t10.json":        Single,
		"udpstp_ds_t5_fine.json":       Single,
		"udpstp_bidir_t5.json":         Bidirectional,
		"udpstp_repeat3_ds_c2_t5.json": Repeat,
		"udpstp_repeat2_bidir_t5.json": Repeat,
	} {
		b, err := os.ReadFile(filepath.Join("..", "plot", "testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		d, err := Decode(b)
		if err != nil || d.Kind() != want {
			t.Errorf("%s: %v, kind %v, want %v", file, err, d.Kind(), want)
			continue
		}
		var tests [][]byte
		switch want {
		case Single:
			tests = append(tests, b)
		case Bidirectional:
			tests = append(tests, d.Upstream, d.Downstream)
			if d.Udpstp == nil || d.Udpstp.Bidirectional == nil || d.Udpstp.Bidirectional.Upstream == nil ||
				d.Udpstp.Bidirectional.Upstream.Loaded == nil || d.Udpstp.Bidirectional.IdleSubIntervals == 0 {
				t.Errorf("%s: no latency under load: %+v", file, d.Udpstp)
			}
		case Repeat:
			if d.Aggregate == nil || int(d.Aggregate.RunsRequested) != len(d.Runs) {
				t.Errorf("%s: Aggregate %+v for %d runs", file, d.Aggregate, len(d.Runs))
			}
			for i, raw := range d.Runs {
				run, err := Decode(raw)
				if err != nil {
					t.Fatalf("%s: run %d: %v", file, i+1, err)
				}
				if run.Kind() == Bidirectional {
					tests = append(tests, run.Upstream, run.Downstream)
				} else {
					tests = append(tests, raw)
				}
			}
		}
		extended := 0
		for i, raw := range tests {
			tst, err := DecodeTest(raw)
			if err != nil || tst.ErrorStatus == nil || tst.Output == nil || len(tst.Output.IncrementalResult) == 0 {
				t.Errorf("%s: test %d: %v", file, i+1, err)
				continue
			}
			if tst.Udpstp != nil {
				extended++
				if len(tst.Udpstp.Connections) > 0 && len(tst.Udpstp.Connections[0].IPLayerCapacity) == 0 {
					t.Errorf("%s: test %d: a connection without figures", file, i+1)
				}
			}
		}
		if extended == 0 {
			t.Errorf("%s: no test with udpstp's key (--extensions)", file)
		}
	}
}

// TestDecodeRefuses: a key of the wrong JSON type is an error naming its
// path; what is not an object is an error.
func TestDecodeRefuses(t *testing.T) {
	for in, want := range map[string]string{
		`{"ErrorStatus":0,"Output":{"AtMax":{"MaxIPLayerCapacity":"fast"}}}`: "Output.AtMax.MaxIPLayerCapacity",
		`{"ErrorStatus":0,"Output":{"Summary":{"LossCount":[]}}}`:            "Output.Summary.LossCount",
		`{"ErrorStatus":"0"}`:                                          "ErrorStatus",
		`{"ErrorStatus":0,"udpstp":{"Connections":{}}}`:                "udpstp.Connections",
		`[{"ErrorStatus":0}]`:                                          "array",
		`{"ErrorStatus":0,"Input":{"HostList":[{"ControlPort":"x"}]}}`: "Input.HostList.ControlPort",
	} {
		_, err := DecodeTest([]byte(in))
		var te *json.UnmarshalTypeError
		if err == nil || !errors.As(err, &te) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a type error naming %s", in, err, want)
		}
	}
	for _, in := range []string{`{"Runs":{}}`, `{"Upstream":1,"Runs":[`, `"x"`} {
		if _, err := Decode([]byte(in)); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}
