package report

import (
	"io"
	"strings"
)

// Result is a finished test's report as --bidirectional and --repeat keep
// it: a *Collector (one direction, OB-UDPST's document) or a
// *Bidirectional (both directions at once). Several of them make one
// document (see Repeat).
type Result interface {
	// ErrorStatus is the test's ErrorStatus, what its exit status would
	// be.
	ErrorStatus() int
	// Document is the test's JSON document in format f (text selects
	// json), followed by a newline.
	Document(f Format) []byte

	tree(f Format) *jobj
	// directions are the test's figures, one per direction it measured
	// (upstream first).
	directions() []dirFigures
	// problem is the test's error messages, for the --repeat table; ""
	// when it recorded none.
	problem() string
}

// Banner writes OB-UDPST's banner lines (see Collector.Banner) to w: for a
// run of several tests (--bidirectional, --repeat), whose Collectors do
// not print it each.
func Banner(w io.Writer, name, version string, m *Mode) error {
	_, err := io.WriteString(w, banner(name, version, m))
	return err
}

// tree is the Collector's document in format f with the ErrorStatus and
// messages as they stand (after Finish).
func (c *Collector) tree(f Format) *jobj {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f == FormatText {
		f = FormatJSON
	}
	c.res.status, c.res.msg, c.res.msg2 = c.status, c.msg, c.msg2
	return c.res.document(f, c.opt.Extensions)
}

func (c *Collector) directions() []dirFigures { return []dirFigures{c.figures(false)} }

func (c *Collector) problem() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return joinMessages(c.msg, c.msg2)
}

// joinMessages is a test's two messages on one line, the earlier (often
// the cause) last, as OB-UDPST's ErrorMessage and ErrorMessage2 hold them.
func joinMessages(msgs ...string) string {
	var s []string
	for _, m := range msgs {
		if m != "" {
			s = append(s, m)
		}
	}
	return strings.Join(s, " / ")
}

// The figures --repeat aggregates, per direction, in the order its
// document and table show them: the maximum and the summary capacity and
// the delay figures of the test's last mode (for a single-mode test its
// only one; with -i the Sub-Intervals after the bimodal count; for
// --bidirectional the loaded phase), in OB-UDPST's JSON names and units
// (Mbit/s, seconds); for --bidirectional also the idle baseline's delay.
const (
	figMax = iota
	figSummary
	figRTTAvg
	figRTTMax
	figPDVAvg
	figPDVMax
	figMinRTT
	figIdleRTTAvg
	figIdlePDVAvg
	numFigures
)

// figureInfo names a figure in JSON and in the table.
var figureInfo = [numFigures]struct {
	key, label string
	delay      bool // seconds in JSON, shown in ms
}{
	figMax:        {"MaxIPLayerCapacity", "Max", false},
	figSummary:    {"IPLayerCapacitySummary", "Summary", false},
	figRTTAvg:     {"RTTAvg", "RTTVar avg", true},
	figRTTMax:     {"RTTMax", "RTTVar max", true},
	figPDVAvg:     {"PDVAvg", "OWDVar avg", true},
	figPDVMax:     {"PDVMax", "OWDVar max", true},
	figMinRTT:     {"MinRTTSummary", "Min RTT", true},
	figIdleRTTAvg: {"IdleRTTAvg", "Idle RTTVar avg", true},
	figIdlePDVAvg: {"IdlePDVAvg", "Idle OWDVar avg", true},
}

// dirFigures are one direction's figures of a finished test.
type dirFigures struct {
	upstream bool
	known    bool // upstream is known (the test was activated, or a half of a Bidirectional)
	complete bool // the figures exist: Summary and Maximum of the mode(s) needed
	val      [numFigures]float64
	has      [numFigures]bool
}

func (d *dirFigures) set(i int, v float64) { d.val[i], d.has[i] = v, true }

// figures are the Collector's figures (after Finish). idle asks for the
// idle baseline of a bidirectional half too: the first mode, whose
// figures then exist only when a second mode followed it.
func (c *Collector) figures(idle bool) dirFigures {
	c.mu.Lock()
	defer c.mu.Unlock()
	var d dirFigures
	r := &c.res
	if r.info != nil {
		d.upstream, d.known = r.info.Upstream, true
	}
	if !r.complete || len(r.summary) == 0 || len(r.max) != len(r.summary) || idle && len(r.summary) < 2 {
		return d
	}
	d.complete = true
	last := len(r.summary) - 1
	s, m := &r.summary[last], &r.max[last]
	d.set(figMax, m.Capacity)
	d.set(figSummary, s.Capacity)
	d.set(figRTTAvg, s.Q.RTTAvg)
	d.set(figRTTMax, s.Q.RTTMax)
	d.set(figPDVAvg, s.Q.PDVAvg)
	d.set(figPDVMax, s.Q.PDVMax)
	d.set(figMinRTT, s.MinRTT)
	if idle {
		d.set(figIdleRTTAvg, r.summary[0].Q.RTTAvg)
		d.set(figIdlePDVAvg, r.summary[0].Q.PDVAvg)
	}
	return d
}

// completed reports whether a test counts as completed for --repeat: an
// ErrorStatus below 50 (success, or a warning with results) and the
// figures of every direction it measured.
func completed(r Result) bool {
	if r.ErrorStatus() > StatusWarnMax {
		return false
	}
	for _, d := range r.directions() {
		if !d.complete {
			return false
		}
	}
	return true
}
