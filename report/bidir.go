package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/udpstp/udpstp/dataphase"
)

// Bidirectional is a --bidirectional test: an upstream and a downstream
// half run at the same time, each a Collector with OB-UDPST's complete
// report. Each half's first mode (its bimodal count, run with rate
// adjustment suppressed, so at the starting row: row 0, about 0.1 Mbit/s,
// unless -I says otherwise) is the idle baseline; its second mode, in
// which both halves search, is the loaded phase. Its document is
//
//	{"Upstream": {OB-UDPST's document}, "Downstream": {OB-UDPST's document},
//	 "udpstp": {"Bidirectional": {latency under load}}}
//
// so that each half, taken alone, is what OB-UDPST's client would have
// written for that direction with -i -count.
type Bidirectional struct {
	Up, Down *Collector
}

// ErrorStatus is the worse of the halves': the larger, so an error (50 and
// above) outranks a warning (1-49), which outranks success.
func (b *Bidirectional) ErrorStatus() int { return max(b.Up.ErrorStatus(), b.Down.ErrorStatus()) }

// Document is the pair's JSON document in format f.
func (b *Bidirectional) Document(f Format) []byte {
	return append(render(b.tree(f), f == FormatJSONFormatted), '\n')
}

func (b *Bidirectional) tree(f Format) *jobj {
	top := &jobj{}
	top.add("Upstream", b.Up.tree(f))
	top.add("Downstream", b.Down.tree(f))
	ext := top.obj(ExtensionKey)
	ext.add("Bidirectional", b.underLoad())
	return top
}

func (b *Bidirectional) directions() []dirFigures {
	up, down := b.Up.figures(true), b.Down.figures(true)
	up.upstream, up.known = true, true
	down.upstream, down.known = false, true
	return []dirFigures{up, down}
}

func (b *Bidirectional) problem() string {
	var s []string
	for _, h := range []struct {
		name string
		c    *Collector
	}{{"Upstream", b.Up}, {"Downstream", b.Down}} {
		if p := h.c.problem(); p != "" && h.c.ErrorStatus() != StatusSuccess {
			s = append(s, h.name+": "+p)
		}
	}
	return strings.Join(s, "; ")
}

// phase is the idle or the loaded part of a half: one mode's Summary (and
// for the loaded phase its Maximum) and its Sub-Intervals.
type phase struct {
	first, last int // aggregate Sub-Intervals, from 1
	sum         summaryResult
	max         *maxResult
	fine        dataphase.FineDelays // ours, to the µs (fine.go)
}

// halfPhases is what a half measured in the two phases; nil where it has
// no results.
type halfPhases struct {
	status       int
	activated    bool
	bom          int64
	idleCount    int // the bimodal count: Sub-Intervals of the idle baseline
	idle, loaded *phase
	minRTT       float64
	fineMin      dataphase.FineMinima // ours, to the µs (fine.go)
}

func (c *Collector) phases() halfPhases {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := halfPhases{status: c.status}
	r := &c.res
	if r.info == nil {
		return h
	}
	h.activated, h.bom, h.idleCount = true, r.bom, r.info.Bimodal
	if !r.complete || len(r.summary) == 0 {
		return h
	}
	h.minRTT, h.fineMin = r.summary[0].MinRTT, r.fineMin
	first := 1
	for i := range r.summary {
		s := r.summary[i]
		p := &phase{first: first, last: first + s.Intervals - 1, sum: s}
		p.fine = r.fineOver(p.first, p.last)
		first = p.last + 1
		if i < len(r.max) {
			p.max = &r.max[i]
		}
		if i == 0 && h.idleCount > 0 {
			h.idle = p
		} else {
			h.loaded = p
		}
	}
	return h
}

// underLoad is the "Bidirectional" object: per direction the idle and the
// loaded phase's delay variation and capacity, the increase, and how long
// the other direction was loaded.
func (b *Bidirectional) underLoad() *jobj {
	up, down := b.Up.phases(), b.Down.phases()
	o := &jobj{}
	o.int("IdleSubIntervals", int64(max(up.idleCount, down.idleCount)))
	if up.activated && down.activated {
		o.num("StartOffset", float64(down.bom-up.bom)/1e9, precDelay)
	}
	o.add("Upstream", up.object(&down))
	o.add("Downstream", down.object(&up))
	if ms, res, ok := LoadedRTT(up.loadedHalf(), down.loadedHalf()); ok {
		o.num("LoadedRTT", ms/1000, precFine)
		o.str("LoadedRTTResolution", string(res))
		if rpm, ok := RPM(ms); ok {
			o.num("RPM", rpm, 0)
			o.str("Grade", Grade(rpm))
		}
	}
	return o
}

// loadedHalf is h's figures for LoadedRTT: the minimum RTT and the loaded
// phase's mean RTT above it, OB-UDPST's in whole ms and ours to the µs
// where h measured them.
func (h *halfPhases) loadedHalf() LoadedHalf {
	var l LoadedHalf
	if h.loaded == nil {
		return l
	}
	minMs, avgMs := 1000*h.minRTT, 1000*h.loaded.sum.Q.RTTAvg
	l.MinRTTMs, l.LoadedRTTVarAvgMs = &minMs, &avgMs
	if h.fineMin.RTTBaseSet && h.loaded.fine.RTTVar.Cnt > 0 {
		fMin, fAvg := float64(h.fineMin.RTTBaseUs)/1000, h.loaded.fine.RTTVar.Ms()[1]
		l.FineMinRTTMs, l.FineLoadedRTTVarAvgMs = &fMin, &fAvg
	}
	return l
}

func (h *halfPhases) object(other *halfPhases) *jobj {
	o := &jobj{}
	o.int("ErrorStatus", int64(h.status))
	o.flag("Complete", h.idle != nil && h.loaded != nil)
	if h.idle != nil {
		h.idle.add(o.obj("Idle"))
	}
	if h.loaded != nil {
		h.loaded.add(o.obj("Loaded"))
	}
	o.num("MinRTTSummary", h.minRTT, precDelay)
	// The minimum RTT shown, and the one the Fine RTT figures vary
	// against (dataphase.FineMinima), in seconds to the µs.
	if h.fineMin.RTTSet {
		o.num("MinRTTFine", float64(h.fineMin.RTTUs)/1e6, precFine)
	}
	if h.fineMin.RTTBaseSet {
		o.num("RTTVarBaseFine", float64(h.fineMin.RTTBaseUs)/1e6, precFine)
	}
	if h.idle != nil && h.loaded != nil {
		o.num("RTTAvgIncrease", h.loaded.sum.Q.RTTAvg-h.idle.sum.Q.RTTAvg, precDelay)
		o.num("PDVAvgIncrease", h.loaded.sum.Q.PDVAvg-h.idle.sum.Q.PDVAvg, precDelay)
	}
	o.int("OtherDirectionLoadedIntervals", int64(other.loadedIntervals()))
	return o
}

func (h *halfPhases) loadedIntervals() int {
	if h.loaded == nil {
		return 0
	}
	return h.loaded.sum.Intervals
}

func (p *phase) add(o *jobj) {
	o.int("FirstInterval", int64(p.first))
	o.int("LastInterval", int64(p.last))
	o.num("IPLayerCapacitySummary", p.sum.Capacity, precPercent)
	if p.max != nil {
		o.num("MaxIPLayerCapacity", p.max.Capacity, precPercent)
	}
	q := &p.sum.Q
	o.num("RTTMin", q.RTTMin, precDelay)
	o.num("RTTAvg", q.RTTAvg, precDelay)
	o.num("RTTMax", q.RTTMax, precDelay)
	o.num("PDVMin", q.PDVMin, precDelay)
	o.num("PDVAvg", q.PDVAvg, precDelay)
	o.num("PDVMax", q.PDVMax, precDelay)
	if p.fine.Any() {
		addFine(o.obj("Fine"), &p.fine)
	}
}

// WriteText writes the latency-under-load lines that follow the halves'
// own text: a line that says what was measured when, then one per
// direction.
func (b *Bidirectional) WriteText(w io.Writer) error {
	up, down := b.Up.phases(), b.Down.phases()
	var s strings.Builder
	s.WriteString("Latency under load, delay variation above the minimum (avg/max): Idle = both directions at their starting row (rate adjustment suppressed), Loaded = both directions searching\n")
	s.WriteString(up.line("Upstream", "Downstream", &down))
	s.WriteString(down.line("Downstream", "Upstream", &up))
	s.WriteString(up.fineLine("Upstream"))
	s.WriteString(down.fineLine("Downstream"))
	if ms, res, ok := LoadedRTT(up.loadedHalf(), down.loadedHalf()); ok {
		if rpm, ok := RPM(ms); ok {
			fmt.Fprintf(&s, "Latency under load, responsiveness: Round trip(ms): %.3f (from the %s figures), RPM: %.0f (%s)\n", ms, res, rpm, Grade(rpm))
		}
	}
	_, err := io.WriteString(w, s.String())
	return err
}

func (h *halfPhases) line(dir, otherDir string, other *halfPhases) string {
	switch {
	case h.idle == nil && h.loaded == nil:
		return fmt.Sprintf("%s Latency Under Load: not measured (no results, ErrorStatus %d)\n", dir, h.status)
	case h.idle == nil || h.loaded == nil:
		return fmt.Sprintf("%s Latency Under Load: not measured (no Sub-Interval after the idle baseline, ErrorStatus %d)\n", dir, h.status)
	}
	i, l := &h.idle.sum.Q, &h.loaded.sum.Q
	return fmt.Sprintf("%s Latency Under Load RTTVar(ms): Idle[%d-%d] %.0f/%.0f, Loaded[%d-%d] %.0f/%.0f (%+.0f); "+
		"OWDVar(ms): Idle %.0f/%.0f, Loaded %.0f/%.0f (%+.0f); Mbps(L3/IP): Idle %.2f, Loaded %.2f; %s loaded for %d Sub-Intervals\n",
		dir, h.idle.first, h.idle.last, 1000*i.RTTAvg, 1000*i.RTTMax, h.loaded.first, h.loaded.last, 1000*l.RTTAvg, 1000*l.RTTMax,
		1000*(l.RTTAvg-i.RTTAvg), 1000*i.PDVAvg, 1000*i.PDVMax, 1000*l.PDVAvg, 1000*l.PDVMax, 1000*(l.PDVAvg-i.PDVAvg),
		h.idle.sum.Capacity, h.loaded.sum.Capacity, otherDir, other.loadedIntervals())
}

// fineLine is our line of a half's latency under load to the µs, where
// the half measured it (the Load Receiver: the downstream half), else "".
func (h *halfPhases) fineLine(dir string) string {
	if h.idle == nil || h.loaded == nil || !h.idle.fine.Any() || !h.loaded.fine.Any() {
		return ""
	}
	ir, lr := h.idle.fine.RTTVar.Ms(), h.loaded.fine.RTTVar.Ms()
	io, lo := h.idle.fine.OWDVar.Ms(), h.loaded.fine.OWDVar.Ms()
	return fmt.Sprintf("%s Latency Under Load to the microsecond RTTVar(ms): Idle %.3f/%.3f, Loaded %.3f/%.3f (%+.3f); "+
		"OWDVar(ms): Idle %.3f/%.3f, Loaded %.3f/%.3f (%+.3f)\n",
		dir, ir[1], ir[2], lr[1], lr[2], lr[1]-ir[1], io[1], io[2], lo[1], lo[2], lo[1]-io[1])
}
