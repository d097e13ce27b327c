package report

import (
	"fmt"

	"github.com/udpstp/udpstp/dataphase"
)

// Delay variations to the microsecond (dataphase.FineDelays), ours: the
// Load Receiver measures them from the same timestamps as OB-UDPST's whole
// milliseconds, which read 0 on a LAN. OB-UDPST's lines and keys keep their
// ms figures, exactly as it writes them; these go on a line of our own
// after each aggregate Sub-Interval line, under "udpstp"."Delays" in the
// document, in the Sub-Interval events of --json-stream, and in the
// latency under load of --bidirectional.

// fineInterval is an aggregate Sub-Interval's fine delays.
type fineInterval struct {
	Interval int
	F        dataphase.FineDelays
}

// fineLine is our own line after an aggregate Sub-Interval line: its
// delay variations in ms to the µs, minimum/average/maximum.
func fineLine(prefix string, n int, f *dataphase.FineDelays) string {
	o, r := f.OWDVar.Ms(), f.RTTVar.Ms()
	return fmt.Sprintf("%sSub-Interval[%d] to the microsecond: OWDVar(ms): %.3f/%.3f/%.3f, RTTVar(ms): %.3f/%.3f/%.3f\n",
		prefix, n, o[0], o[1], o[2], r[0], r[1], r[2])
}

// addFine adds f's figures to o in seconds to the µs, named as
// IncrementalResult names OB-UDPST's (PDV is the one-way variation).
func addFine(o *jobj, f *dataphase.FineDelays) {
	for _, s := range []struct {
		name string
		st   *dataphase.FineStat
	}{{"PDV", &f.OWDVar}, {"RTT", &f.RTTVar}} {
		if s.st.Cnt == 0 {
			continue
		}
		ms := s.st.Ms()
		o.num(s.name+"Min", ms[0]/1000, precFine)
		o.num(s.name+"Avg", ms[1]/1000, precFine)
		o.num(s.name+"Max", ms[2]/1000, precFine)
	}
}

// precFine is the precision of a delay in seconds to the µs.
const precFine = 6

// fineArray is "Delays": one object per aggregate Sub-Interval that has
// fine figures.
func (r *results) fineArray() jarr {
	out := jarr{}
	for i := range r.fine {
		e := &jobj{}
		e.int("Interval", int64(r.fine[i].Interval))
		addFine(e, &r.fine[i].F)
		out = append(out, e)
	}
	return out
}

// fineOver merges the fine delays of aggregate Sub-Intervals first..last
// (from 1): a phase of a --bidirectional half.
func (r *results) fineOver(first, last int) dataphase.FineDelays {
	var f dataphase.FineDelays
	for i := range r.fine {
		if n := r.fine[i].Interval; n >= first && n <= last {
			f.Merge(&r.fine[i].F)
		}
	}
	return f
}

// fineMinimumLine is our own line after OB-UDPST's minimum line (which
// stays as it is: parsers read its whole ms), with the same minima to the
// µs; "" where the Load Receiver measured none (an upstream client).
func fineMinimumLine(prefix, dir string, m *dataphase.FineMinima) string {
	if !m.OWDSet && !m.RTTBaseSet {
		return ""
	}
	return fmt.Sprintf("%s%s Minimum to the microsecond: One-Way Delay(ms): %s [w/clock diff], Round-Trip Time(ms): %s\n",
		prefix, dir, fineMs(m.OWDUs, m.OWDSet, "n/a"), fineMs(m.RTTUs, m.RTTSet, "n/a (the peer's response delay, in whole ms, hides it)"))
}

func fineMs(us int64, set bool, none string) string {
	if !set {
		return none
	}
	return fmt.Sprintf("%.3f", float64(us)/1000)
}

// fineMinObject is "udpstp"."Minimum": the test's minima in seconds to
// the µs, named as OB-UDPST's Summary names its own in whole ms.
func fineMinObject(m *dataphase.FineMinima) *jobj {
	o := &jobj{}
	if m.OWDSet {
		o.num("MinOnewayDelay", float64(m.OWDUs)/1e6, precFine)
	}
	if m.RTTSet {
		o.num("MinRTT", float64(m.RTTUs)/1e6, precFine)
	}
	return o
}
