// Package plot draws a capacity test's result: the JSON document of
// OB-UDPST's udpst client or of udpstp's (the same schema, plus udpstp's
// own "udpstp" key), read into a small model (Result), drawn by the
// package itself (chart.go, figure.go) as SVG or PNG: capacity per Sub-Interval with the
// maximum marked, delay variation, sequence errors and, where the file has
// them, each connection's capacity and the sending rate the search used.
// ReadDoc and RenderDoc take udpstp's --bidirectional and --repeat
// documents too (Doc): a pair on one time axis, a repeat's runs side by
// side.
package plot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/udpstp/udpstp/report/resultdoc"
)

// MaxFileSize bounds what Read takes in: a 24-connection, 3600 s test at
// 100 ms Sub-Intervals, formatted, with udpstp's per-connection figures, is
// well under a tenth of it.
const MaxFileSize = 512 << 20

// Result is what a plot needs of one test result.
type Result struct {
	Software  string // IPLayerCapSupported.SoftwareVersion; "" in a brief (jsonb) document
	Upstream  bool   // Input.Role "Sender"
	Host      string
	TestType  string // "Search" or "Fixed"
	OneWay    bool   // IPDVEnable: the search used one-way delay variation, not RTT
	LowerMs   float64
	UpperMs   float64
	Conns     int     // Test Connections asked for (Input.NumberOfConnections, or the most active)
	PeriodSec float64 // Sub-Interval period, 0 if unknown
	BOMTime   string
	Status    int
	Message   string

	Intervals []Interval // the aggregate, IncrementalResult
	Maxima    []Maximum  // AtMax, then ModalResult
	// PerConn is udpstp's per-connection figures ("udpstp"."Connections");
	// nil for OB-UDPST's files, which have only the aggregate.
	PerConn []Conn
	// FineDelays: the Intervals' delays are udpstp's to the µs
	// ("udpstp"."Delays"), not OB-UDPST's whole milliseconds.
	FineDelays bool
}

// Interval is one aggregate Sub-Interval. Delays are in milliseconds.
type Interval struct {
	N                      int
	Seconds                float64 // time since the start of the test at its end
	Time                   string  // TimeOfSubInterval
	Active                 int
	Capacity               float64 // L3 Mbps
	Loss, Reordered, Dup   float64
	RTTMin, RTTAvg, RTTMax float64
	PDVMin, PDVAvg, PDVMax float64
}

// Maximum is one mode's maximum; Index is the Sub-Interval it was measured
// in (into Intervals), -1 when none matches.
type Maximum struct {
	Mode     int
	Capacity float64
	Time     string
	Index    int
}

// Conn is one Test Connection's Sub-Intervals (udpstp's files only).
type Conn struct {
	ID                   int // from 1
	Capacity             []float64
	Loss, Reordered, Dup []float64
	RateMbps             []float64 // the row's nominal L3 rate; nil when the file has none
	RateRow              []int
}

// HasRates reports whether any connection carries the sending rate rows.
func (r *Result) HasRates() bool {
	for _, c := range r.PerConn {
		if c.RateMbps != nil {
			return true
		}
	}
	return false
}

// Direction is "Upstream" or "Downstream".
func (r *Result) Direction() string {
	if r.Upstream {
		return "Upstream"
	}
	return "Downstream"
}

// ErrNoResults is wrapped by Read's error for a result without Sub-Interval
// figures: a test that failed before any, or ran with -s.
var ErrNoResults = errors.New("no Sub-Interval results to plot")

// ReadFile reads the result file at path.
func ReadFile(path string) (*Result, error) { return readFile(path, Read) }

// readFile opens path and reads it with read, naming path in an error.
func readFile[T any](path string, read func(io.Reader) (*T, error)) (*T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	v, err := read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// Read reads one result document, as OB-UDPST's client or udpstp's writes
// it with -f json, jsonb or jsonf (or --output). Anything else, including
// a truncated document, is an error saying what is wrong; so is a result
// with nothing to plot (ErrNoResults).
func Read(rd io.Reader) (*Result, error) {
	b, err := io.ReadAll(io.LimitReader(rd, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("larger than %d MiB: not a test result", MaxFileSize>>20)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, errors.New("empty file: not a test result")
	}
	if b[0] != '{' {
		return nil, errors.New("not a test result: a udpst or udpstp result is a JSON object (-f json, jsonb, jsonf or --output)")
	}
	raw, err := resultdoc.DecodeTest(b)
	if err != nil {
		return nil, fmt.Errorf("not a valid test result: %w", jsonError(err))
	}
	return result(raw)
}

// jsonError makes encoding/json's messages say where in the document.
func jsonError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("JSON syntax error at byte %d: %v", se.Offset, se)
	case errors.As(err, &te):
		where := te.Field
		if where == "" {
			where = "the document"
		}
		return fmt.Errorf("%s is a JSON %s, want %s", where, te.Value, kindName(te.Type.Kind().String()))
	}
	return err
}

func kindName(k string) string {
	switch k {
	case "float64":
		return "a number"
	case "slice":
		return "an array"
	case "struct", "ptr":
		return "an object"
	}
	return "a " + k
}

func result(raw *resultdoc.Test) (*Result, error) {
	if raw.ErrorStatus == nil {
		if raw.DataRecords != nil {
			return nil, errors.New("this is OB-UDPST's server statistics file (-G), not a test result")
		}
		return nil, errors.New("not a test result: no ErrorStatus key (udpst and udpstp write it in every result)")
	}
	r := &Result{Status: finiteInt(*raw.ErrorStatus), Message: firstOf(raw.ErrorMessage, raw.ErrorMessage2)}
	if raw.IPLayerCapSupported != nil {
		r.Software = raw.IPLayerCapSupported.SoftwareVersion
	}
	if in := raw.Input; in != nil {
		r.Upstream = in.Role == "Sender"
		r.Host, r.TestType = in.Host, in.TestType
		r.OneWay = in.IPDVEnable != 0
		r.Conns = finiteInt(in.NumberOfConnections)
		r.PeriodSec = finite(in.TestSubInterval) / 1000
		r.LowerMs, r.UpperMs = finite(in.LowerThresh), finite(in.UpperThresh)
	}
	out := raw.Output
	if out == nil || len(out.IncrementalResult) == 0 {
		why := "the test produced none"
		if out != nil && out.AtMax != nil {
			why = "the test ran with -s (summary only)"
		}
		if r.Status != 0 && r.Message != "" {
			why += fmt.Sprintf("; ErrorStatus %d: %s", r.Status, r.Message)
		}
		return nil, fmt.Errorf("%w: %s", ErrNoResults, why)
	}
	r.BOMTime = out.BOMTime
	for i, v := range out.IncrementalResult {
		iv := Interval{
			N: finiteInt(v.Interval), Seconds: finite(v.Seconds), Time: v.TimeOfSubInterval,
			Active: finiteInt(v.ActiveConnections), Capacity: finite(v.IPLayerCapacity),
			Loss: finite(v.LossCount), Reordered: finite(v.ReorderedCount), Dup: finite(v.ReplicatedCount),
			RTTMin: ms(v.RTTMin), RTTAvg: ms(v.RTTAvg), RTTMax: ms(v.RTTMax),
			PDVMin: ms(v.PDVMin), PDVAvg: ms(v.PDVAvg), PDVMax: ms(v.PDVMax),
		}
		if iv.N == 0 {
			iv.N = i + 1
		}
		r.Conns = max(r.Conns, iv.Active)
		r.Intervals = append(r.Intervals, iv)
	}
	r.fillSeconds()
	if out.AtMax != nil {
		r.Maxima = append(r.Maxima, r.maximum(out.AtMax, 1))
	}
	for i := range out.ModalResult {
		r.Maxima = append(r.Maxima, r.maximum(&out.ModalResult[i], i+2))
	}
	if raw.Udpstp != nil {
		for i, c := range raw.Udpstp.Connections {
			r.PerConn = append(r.PerConn, conn(&c, i+1))
		}
		r.fineDelays(raw.Udpstp.Delays)
	}
	r.Conns = max(r.Conns, len(r.PerConn), 1)
	return r, nil
}

// fineDelays puts udpstp's delay variations to the µs in place of the
// whole milliseconds, when the file has them for every Sub-Interval.
func (r *Result) fineDelays(fine []resultdoc.Interval) {
	if len(fine) != len(r.Intervals) {
		return
	}
	for i, f := range fine {
		if finiteInt(f.Interval) != r.Intervals[i].N {
			return
		}
	}
	for i, f := range fine {
		iv := &r.Intervals[i]
		iv.RTTMin, iv.RTTAvg, iv.RTTMax = ms(f.RTTMin), ms(f.RTTAvg), ms(f.RTTMax)
		iv.PDVMin, iv.PDVAvg, iv.PDVMax = ms(f.PDVMin), ms(f.PDVAvg), ms(f.PDVMax)
	}
	r.FineDelays = true
}

// fillSeconds gives every Sub-Interval a time: a file that lacks "Seconds"
// (or has nonsense there) gets n periods.
func (r *Result) fillSeconds() {
	period := r.PeriodSec
	if period <= 0 {
		period = 1
	}
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		if iv.Seconds <= 0 {
			iv.Seconds = float64(iv.N) * period
		}
	}
}

// maximum finds the Sub-Interval a maximum was measured in: the one whose
// time OB-UDPST copied into TimeOfMax, else the first with that capacity.
func (r *Result) maximum(m *resultdoc.Maximum, mode int) Maximum {
	mx := Maximum{Mode: finiteInt(resultdoc.Num(m.Mode)), Capacity: finite(resultdoc.Num(m.MaxIPLayerCapacity)), Time: m.TimeOfMax, Index: -1}
	if mx.Mode == 0 {
		mx.Mode = mode
	}
	for i, iv := range r.Intervals {
		if m.TimeOfMax != "" && iv.Time == m.TimeOfMax {
			mx.Index = i
			return mx
		}
	}
	for i, iv := range r.Intervals {
		if math.Abs(iv.Capacity-mx.Capacity) < 0.005 {
			mx.Index = i
			return mx
		}
	}
	return mx
}

func conn(c *resultdoc.Conn, pos int) Conn {
	out := Conn{ID: finiteInt(c.Connection)}
	if out.ID <= 0 {
		out.ID = pos
	}
	out.Capacity = finiteAll(c.IPLayerCapacity)
	out.Loss, out.Reordered, out.Dup = finiteAll(c.LossCount), finiteAll(c.ReorderedCount), finiteAll(c.ReplicatedCount)
	if c.SendingRateMbps != nil {
		out.RateMbps = finiteAll(c.SendingRateMbps)
		for _, v := range c.SendingRateIndex {
			out.RateRow = append(out.RateRow, finiteInt(v))
		}
	}
	return out
}

// maxValue bounds every figure: no capacity, delay or count comes near it,
// and axes over wider ranges would be meaningless to draw.
const maxValue = 1e12

// finite maps what cannot be drawn (JSON has no NaN, but a number may
// overflow float64 to ±Inf) to 0, and clamps the rest to ±maxValue.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return math.Max(-maxValue, math.Min(maxValue, v))
}

func finiteAll(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = finite(x)
	}
	return out
}

// finiteInt is v as an int, clamped to ±1e9 (no count or index a producer
// writes comes near it).
func finiteInt(v float64) int {
	return int(math.Max(-1e9, math.Min(1e9, finite(v))))
}

// ms converts OB-UDPST's seconds to milliseconds.
func ms(sec float64) float64 { return finite(sec) * 1000 }

func firstOf(s ...string) string {
	for _, v := range s {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}
