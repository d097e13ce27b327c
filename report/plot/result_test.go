package plot

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// obudpstResults are OB-UDPST's client.json files of the reference data.
func obudpstResults(t testing.TB) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(golden.Require(t), "*", "client.json"))
	if err != nil || len(paths) < 10 {
		t.Fatalf("OB-UDPST client.json files: %d found, %v", len(paths), err)
	}
	m := map[string]string{}
	for _, p := range paths {
		m[filepath.Base(filepath.Dir(p))] = p
	}
	return m
}

// Every OB-UDPST result reads: those with Sub-Intervals into a model that
// agrees with the file, the others with ErrNoResults and their error.
func TestReadOBUDPST(t *testing.T) {
	withResults := 0
	for name, path := range obudpstResults(t) {
		var doc struct {
			Input struct {
				Role                string
				NumberOfConnections int
			}
			Output *struct {
				IncrementalResult []struct{ IPLayerCapacity float64 }
				AtMax             *struct{ MaxIPLayerCapacity float64 }
				ModalResult       []json.RawMessage
			}
			ErrorMessage string
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r, err := ReadFile(path)
		if doc.Output == nil || len(doc.Output.IncrementalResult) == 0 {
			if !errors.Is(err, ErrNoResults) || !strings.Contains(err.Error(), name) {
				t.Errorf("%s: error %v, want ErrNoResults naming the file", name, err)
			}
			if doc.ErrorMessage != "" && (err == nil || !strings.Contains(err.Error(), doc.ErrorMessage)) {
				t.Errorf("%s: error %v does not give the result's message %q", name, err, doc.ErrorMessage)
			}
			continue
		}
		withResults++
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if r.Upstream != (doc.Input.Role == "Sender") || r.Conns != doc.Input.NumberOfConnections {
			t.Errorf("%s: upstream %v, %d connections; file %s, %d", name, r.Upstream, r.Conns, doc.Input.Role, doc.Input.NumberOfConnections)
		}
		if len(r.Intervals) != len(doc.Output.IncrementalResult) {
			t.Errorf("%s: %d Sub-Intervals, file %d", name, len(r.Intervals), len(doc.Output.IncrementalResult))
		}
		for i, iv := range r.Intervals {
			if iv.Capacity != doc.Output.IncrementalResult[i].IPLayerCapacity || iv.Seconds <= 0 {
				t.Errorf("%s: Sub-Interval %d: %+v", name, i+1, iv)
			}
		}
		if want := 1 + len(doc.Output.ModalResult); len(r.Maxima) != want {
			t.Errorf("%s: %d maxima, want %d", name, len(r.Maxima), want)
		}
		for _, m := range r.Maxima {
			if m.Index < 0 || r.Intervals[m.Index].Capacity != m.Capacity {
				t.Errorf("%s: maximum %+v not found among the Sub-Intervals", name, m)
			}
		}
		if r.PerConn != nil || r.HasRates() || !strings.HasPrefix(r.Software, "9.0.0") {
			t.Errorf("%s: OB-UDPST's file read as having udpstp's figures: %+v", name, r)
		}
	}
	if withResults < 10 {
		t.Errorf("only %d OB-UDPST results with Sub-Intervals", withResults)
	}
}

// udpstp's own results add each connection's figures and, upstream, the
// rows of the search.
func TestReadUdpstp(t *testing.T) {
	r, err := ReadFile("testdata/udpstp_us_c2_t5.json")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Upstream || r.Conns != 2 || len(r.PerConn) != 2 || !r.HasRates() || !strings.Contains(r.Software, "+udpstp.") {
		t.Fatalf("upstream 2-connection result read as %+v", r)
	}
	for i, c := range r.PerConn {
		if c.ID != i+1 || len(c.Capacity) != len(r.Intervals) || len(c.RateMbps) != len(c.Capacity) || len(c.RateRow) != len(c.Capacity) {
			t.Errorf("connection %d: %+v", i+1, c)
		}
		for k, row := range c.RateRow {
			if row < 0 || c.RateMbps[k] <= 0 {
				t.Errorf("connection %d Sub-Interval %d: row %d at %.2f Mbps", i+1, k+1, row, c.RateMbps[k])
			}
		}
	}
	r, err = ReadFile("testdata/udpstp_ds_c2_t10.json")
	if err != nil {
		t.Fatal(err)
	}
	if r.Upstream || len(r.PerConn) != 2 || r.HasRates() {
		t.Errorf("downstream 2-connection result read as %+v", r)
	}
}

// What is not a result gets an error that says so, never a panic or an
// empty plot.
func TestReadRejects(t *testing.T) {
	dir := golden.Require(t)
	for name, tt := range map[string]struct {
		in   string
		file string // instead of in
		want string
	}{
		"empty":           {in: " \n", want: "empty file"},
		"text output":     {file: filepath.Join(dir, "ds_default_v4", "client.txt"), want: "JSON object"},
		"usage":           {file: filepath.Join(dir, "usage.txt"), want: "JSON object"},
		"array":           {in: `[{"ErrorStatus":0}]`, want: "JSON object"},
		"capture lines":   {file: filepath.Join(dir, "ds_default_v4", "pdus.jsonl"), want: "not a valid test result"},
		"meta":            {file: filepath.Join(dir, "ds_default_v4", "meta.json"), want: "no ErrorStatus"},
		"server stats":    {file: filepath.Join(dir, "server_perf_stats.json"), want: "server statistics file"},
		"truncated":       {in: `{"Output":{"IncrementalResult":[{"Interval":1,`, want: "not a valid test result"},
		"string capacity": {in: `{"Output":{"IncrementalResult":[{"IPLayerCapacity":"fast"}]},"ErrorStatus":0}`, want: "Output.IncrementalResult.IPLayerCapacity is a JSON string, want a number"},
		"summary only":    {in: `{"Output":{"Summary":{},"AtMax":{"MaxIPLayerCapacity":1.0}},"ErrorStatus":0}`, want: "-s"},
		"no output":       {in: `{"ErrorStatus":5,"ErrorMessage":"ERROR: boom"}`, want: "ErrorStatus 5: ERROR: boom"},
		"error status":    {in: `{"ErrorStatus":"0"}`, want: "ErrorStatus is a JSON string, want a number"},
		"bad extension":   {in: `{"Output":{"IncrementalResult":[{}]},"ErrorStatus":0,"udpstp":{"Connections":{}}}`, want: "udpstp.Connections is a JSON object, want an array"},
	} {
		var err error
		if tt.file != "" {
			_, err = ReadFile(tt.file)
		} else {
			_, err = Read(strings.NewReader(tt.in))
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tt.want)
		}
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "absent.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent file: %v", err)
	}
}

// Values a producer never writes are drawn as something finite, and a
// document without the optional parts still plots.
func TestReadTolerates(t *testing.T) {
	in := `{"Output":{"IncrementalResult":[{"IPLayerCapacity":1e400,"LossCount":-5,"RTTMax":null},{"Interval":7,"IPLayerCapacity":3}]},` +
		`"ErrorStatus":0,"Extra":{"x":[1,2]},"udpstp":{"Connections":[{"IPLayerCapacity":[1,2,3],"SendingRateMbps":[5]}]}}`
	_, err := Read(strings.NewReader(in))
	if err == nil || !strings.Contains(err.Error(), "not a valid test result") {
		// 1e400 does not fit a float64: encoding/json refuses it.
		t.Fatalf("1e400: %v", err)
	}
	in = strings.Replace(in, "1e400", "1e300", 1)
	r, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if r.Intervals[0].Capacity != maxValue || r.Intervals[0].N != 1 || r.Intervals[1].N != 7 || r.Intervals[1].Seconds != 7 {
		t.Errorf("intervals %+v", r.Intervals)
	}
	if len(r.PerConn) != 1 || r.PerConn[0].ID != 1 || len(r.PerConn[0].RateMbps) != 1 {
		t.Errorf("connections %+v", r.PerConn)
	}
	if err := Render(discard{}, r, SVG); err != nil {
		t.Errorf("render: %v", err)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
