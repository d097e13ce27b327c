package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/udpstp/udpstp/report"
	"github.com/udpstp/udpstp/report/resultdoc"
)

// Summarize reads a client's JSON document into a Result's figures (see
// docs/history.md for which key gives which figure). It takes the shapes
// udpstp's client writes:
//
//   - OB-UDPST's document of one test (one direction: Input.Role Sender is
//     up, Receiver down), complete, or with an error and no results, or a
//     brief (jsonb) one without Input (Direction "");
//   - the --bidirectional pair {"Upstream": ..., "Downstream": ...,
//     "udpstp": {"Bidirectional": ...}}: Direction "bidirectional", its
//     figures the downstream half's (the upstream half's when the
//     downstream half has none), its latency under load, RPM and grade the
//     pair's (loadedRTT);
//
// and refuses a --repeat document ({"Runs": [...]}) with ErrRepeat: it
// holds several tests, which Runs splits so that each is summarized and
// stored as a result of its own.
//
// ID, Origin, Test, Agent and Client are the caller's; Server is taken
// from Input (HostList's first Host and ControlPort) where the document has it. Start and End are
// zero when the document has no Output (no test ran). Doc is doc itself.
// Summarize never panics, whatever doc holds.
func Summarize(doc []byte) (Result, error) {
	var r Result
	if len(doc) > MaxDocSize {
		return r, fmt.Errorf("summarize: document of %d bytes, over the %d this reads", len(doc), MaxDocSize)
	}
	top, err := resultdoc.Decode(doc)
	if err != nil {
		return r, fmt.Errorf("summarize: not a JSON result document: %w", err)
	}
	r.Doc = doc
	switch top.Kind() {
	case resultdoc.Repeat:
		return Result{}, ErrRepeat
	case resultdoc.Bidirectional:
		if err := r.pair(top); err != nil {
			return Result{}, err
		}
	default:
		t, err := resultdoc.DecodeTest(doc)
		if err != nil {
			return Result{}, fmt.Errorf("summarize: not a JSON result document: %w", err)
		}
		if t.ErrorStatus == nil {
			return Result{}, errors.New("summarize: not a result document: no ErrorStatus, Upstream/Downstream or Runs")
		}
		r.single(t)
	}
	r.Status = StatusOf(r.ErrorStatus)
	return r, nil
}

// SummarizeInto fills r from doc as Summarize reads it: its Direction,
// Status, ErrorStatus, Warning, figures and Doc; Server, Start and End
// only where r has none (the agent's own are kept). r's ID, Origin, Test,
// Agent and Client are left as they are. On an error r is unchanged.
func SummarizeInto(doc []byte, r *Result) error {
	s, err := Summarize(doc)
	if err != nil {
		return err
	}
	if r.Server == "" {
		r.Server = s.Server
	}
	if r.Start.IsZero() {
		r.Start = s.Start
	}
	if r.End.IsZero() {
		r.End = s.End
	}
	r.Direction, r.Status, r.ErrorStatus, r.Warning = s.Direction, s.Status, s.ErrorStatus, s.Warning
	r.MaxMbps, r.SummaryMbps, r.LossRatio = s.MaxMbps, s.SummaryMbps, s.LossRatio
	r.RTTMinMs, r.RTTRangeMs, r.DelayVarMs = s.RTTMinMs, s.RTTRangeMs, s.DelayVarMs
	r.LoadedMs, r.RPM, r.Grade, r.Doc = s.LoadedMs, s.RPM, s.Grade, s.Doc
	return nil
}

// MaxDocSize bounds a document Summarize reads: a 3600 s test at 100 ms
// Sub-Intervals with 24 connections' figures is well under it.
const MaxDocSize = 256 << 20

// ErrRepeat is Summarize's answer for a --repeat document.
var ErrRepeat = errors.New("summarize: a --repeat document holds several tests: split it with store.Runs and summarize each")

// StatusOf is the Status of an ErrorStatus: OB-UDPST's 0 success, 1-49 a
// warning (the test ran), 50 and above an error.
func StatusOf(errorStatus int) Status {
	switch {
	case errorStatus == 0:
		return StatusOK
	case errorStatus > 0 && errorStatus < 50:
		return StatusWarning
	default:
		return StatusError
	}
}

// Runs returns each run's document of a --repeat document, in order (a
// test's document or a --bidirectional pair), for Summarize.
func Runs(doc []byte) ([][]byte, error) {
	top, err := resultdoc.Decode(doc)
	if err != nil {
		return nil, fmt.Errorf("runs: not a JSON result document: %w", err)
	}
	if top.Runs == nil {
		return nil, errors.New("runs: not a --repeat document (no Runs)")
	}
	out := make([][]byte, len(top.Runs))
	for i, raw := range top.Runs {
		out[i] = []byte(raw)
	}
	return out, nil
}

// single fills r from one test's document.
func (r *Result) single(d *resultdoc.Test) {
	r.ErrorStatus = toInt(*d.ErrorStatus)
	r.Warning = joinMessages(d.ErrorMessage, d.ErrorMessage2)
	if in := d.Input; in != nil {
		switch in.Role {
		case "Sender":
			r.Direction = "up"
		case "Receiver":
			r.Direction = "down"
		}
		if len(in.HostList) > 0 {
			h := in.HostList[0]
			host := h.Host
			if host == "" {
				host = h.HostIPAddress
			}
			if host != "" && h.ControlPort > 0 && h.ControlPort <= 65535 {
				r.Server = net.JoinHostPort(host, strconv.Itoa(int(h.ControlPort)))
			}
		}
	}
	out := d.Output
	if out == nil {
		return
	}
	r.Start, r.End = wallTime(out.BOMTime), wallTime(out.EOMTime)
	// The figures of the test's last mode: a single-mode test's only one,
	// with -i the Sub-Intervals after the first mode's count (a
	// --bidirectional half's loaded phase), as --repeat takes them
	// (report/result.go).
	sum := out.Summary
	if n := len(out.ModalSummary); n > 0 {
		sum = &out.ModalSummary[n-1]
	}
	atMax := out.AtMax
	if n := len(out.ModalResult); n > 0 {
		atMax = &out.ModalResult[n-1]
	}
	if sum != nil {
		r.SummaryMbps = figure(sum.IPLayerCapacitySummary, 1)
		r.RTTMinMs = figure(sum.MinRTTSummary, 1000)
		r.RTTRangeMs = figure(sum.RTTRangeSummary, 1000)
	}
	if atMax != nil {
		r.MaxMbps = figure(atMax.MaxIPLayerCapacity, 1)
		r.LossRatio = figure(atMax.LossRatioAtMax, 1)
		r.DelayVarMs = figure(atMax.PDVRangeAtMax, 1000)
	}
}

// pair fills r from a --bidirectional pair.
func (r *Result) pair(top *resultdoc.Document) error {
	var halves [2]Result
	var problems []string
	for i, h := range []struct {
		name string
		raw  json.RawMessage
	}{{"Upstream", top.Upstream}, {"Downstream", top.Downstream}} {
		var d *resultdoc.Test
		if h.raw != nil {
			d, _ = resultdoc.DecodeTest(h.raw)
		}
		if d == nil || d.ErrorStatus == nil {
			return fmt.Errorf("summarize: the --bidirectional pair's %s half is missing or not a result document", h.name)
		}
		halves[i].single(d)
		r.ErrorStatus = max(r.ErrorStatus, halves[i].ErrorStatus)
		if halves[i].ErrorStatus != 0 && halves[i].Warning != "" {
			problems = append(problems, h.name+": "+halves[i].Warning)
		}
	}
	up, down := &halves[0], &halves[1]
	fig := down
	if down.MaxMbps == nil && down.SummaryMbps == nil {
		fig = up
	}
	r.MaxMbps, r.SummaryMbps, r.LossRatio = fig.MaxMbps, fig.SummaryMbps, fig.LossRatio
	r.RTTMinMs, r.RTTRangeMs, r.DelayVarMs = fig.RTTMinMs, fig.RTTRangeMs, fig.DelayVarMs
	r.Direction = "bidirectional"
	r.Warning = strings.Join(problems, "; ")
	r.Server = up.Server
	if r.Server == "" {
		r.Server = down.Server
	}
	r.Start, r.End = earliest(up.Start, down.Start), latest(up.End, down.End)
	if top.Udpstp != nil && top.Udpstp.Bidirectional != nil {
		b := top.Udpstp.Bidirectional
		if ms, ok := loadedRTT(b.Upstream, b.Downstream); ok {
			r.LoadedMs = &ms
			if rpm, ok := report.RPM(ms); ok {
				r.RPM = &rpm
				r.Grade = report.Grade(rpm)
			}
		}
	}
	return nil
}

// loadedRTT is a --bidirectional pair's round-trip time under load, in
// ms: report.LoadedRTT over the halves' MinRTTSummary and Loaded RTTAvg
// (udpstp's Loaded.Fine.RTTAvg where the half has it), and where a half
// has RTTVarBaseFine, its figures to the µs.
func loadedRTT(up, down *resultdoc.HalfFigures) (float64, bool) {
	var halves []report.LoadedHalf
	for _, h := range []*resultdoc.HalfFigures{up, down} {
		if h == nil || h.Loaded == nil {
			continue
		}
		var l report.LoadedHalf
		avg := h.Loaded.RTTAvg
		if h.Loaded.Fine != nil && h.Loaded.Fine.RTTAvg != nil {
			avg = h.Loaded.Fine.RTTAvg
			l.FineLoadedRTTVarAvgMs = figure(avg, 1000)
		}
		l.MinRTTMs, l.LoadedRTTVarAvgMs = figure(h.MinRTTSummary, 1000), figure(avg, 1000)
		l.FineMinRTTMs = figure(h.RTTVarBaseFine, 1000)
		halves = append(halves, l)
	}
	ms, _, ok := report.LoadedRTT(halves...)
	return ms, ok
}

// figure is *v times scale (seconds to ms: 1000), rounded to 1e-9 so
// that 0.003 s is 3 ms and not 3.0000000000000004; nil when v is missing
// or the product not finite.
func figure(v *float64, scale float64) *float64 {
	if v == nil {
		return nil
	}
	f := *v * scale
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil
	}
	if math.Abs(f) < 1e9 {
		f = math.Round(f*1e9) / 1e9
	}
	return &f
}

// toInt is an ErrorStatus as an int, whatever float the document held.
func toInt(v float64) int {
	switch {
	case math.IsNaN(v):
		return 0
	case v > math.MaxInt32:
		return math.MaxInt32
	case v < math.MinInt32:
		return math.MinInt32
	}
	return int(v)
}

// wallTime reads OB-UDPST's BOMTime/EOMTime (RFC 3339, UTC, to the µs);
// zero when absent or unreadable.
func wallTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// joinMessages is a test's two messages on one line, as report's --repeat
// table joins ErrorMessage and ErrorMessage2.
func joinMessages(msgs ...string) string {
	var s []string
	for _, m := range msgs {
		if m = strings.TrimSpace(m); m != "" {
			s = append(s, m)
		}
	}
	return strings.Join(s, " / ")
}

// Halves summarizes each half of a --bidirectional pair as the test of
// one direction it is (Summarize gives the pair one set of figures, the
// downstream half's); ok is false for any other document.
func Halves(doc []byte) (up, down Result, ok bool) {
	if len(doc) > MaxDocSize {
		return up, down, false
	}
	top, err := resultdoc.Decode(doc)
	if err != nil || top.Upstream == nil || top.Downstream == nil {
		return up, down, false
	}
	up, errUp := Summarize(top.Upstream)
	down, errDown := Summarize(top.Downstream)
	if errUp != nil || errDown != nil || up.Direction == "bidirectional" || down.Direction == "bidirectional" {
		return Result{}, Result{}, false
	}
	return up, down, true
}
