package dataphase

import (
	"math"
	"testing"
)

// The µs figures keep what the ms ones round away: variations against the
// test's minimum, the peer's response delay (whole ms) taken off the RTT.
func TestFineDelays(t *testing.T) {
	var c fineClock
	var f FineDelays
	f.reset()
	for _, ns := range []int64{5_000_250_000, 5_000_100_000, 5_000_183_000} { // receive - send, clocks 5 s apart
		f.OWDVar.add(c.owd(ns))
	}
	// 250 µs is its own minimum (0), 100 µs a new one (0), 183 µs 83 above.
	if f.OWDVar.Min != 0 || f.OWDVar.Max != 83 || f.OWDVar.Sum != 83 || f.OWDVar.Cnt != 3 {
		t.Errorf("one-way: %+v, want min 0, max 83, sum 83", f.OWDVar)
	}
	// Round trips of 1.2 ms and 0.9 ms with a 1 ms response delay: 0.2
	// and 0 (the delay rounded above the trip).
	f.RTTVar.add(c.rtt(1_200_000, 1))
	f.RTTVar.add(c.rtt(900_000, 1))
	f.RTTVar.add(c.rtt(283_000, 0))
	if got := f.RTTVar; got.Min != 0 || got.Max != 283 || got.Cnt != 3 {
		t.Errorf("RTT: %+v, want 200 then 0 then 283 above the minimum 0", got)
	}
	if ms := f.OWDVar.Ms(); ms[0] != 0 || math.Abs(ms[1]-0.083/3) > 1e-12 || math.Abs(ms[2]-0.083) > 1e-12 {
		t.Errorf("Ms() = %v", ms)
	}
	var sum FineDelays
	sum.Merge(&f)
	sum.Merge(&FineDelays{OWDVar: FineStat{Min: 10, Max: 900, Sum: 910, Cnt: 2}})
	if sum.OWDVar.Max != 900 || sum.OWDVar.Cnt != 5 || sum.OWDVar.Min != 0 || !sum.Any() {
		t.Errorf("merged: %+v", sum.OWDVar)
	}
}

// The minima to the µs: the round trip shown is the least the peer
// answered within half a ms (response delay 0); a whole-ms delay rounded
// above the trip makes the base RTTVar varies against 0, never the
// minimum shown.
func TestFineMinima(t *testing.T) {
	var c fineClock
	if m := c.minima(); m.OWDSet || m.RTTSet || m.RTTBaseSet {
		t.Fatalf("minima before a sample: %+v", m)
	}
	c.owd(5_000_183_000)
	c.owd(5_000_100_400)
	c.rtt(38_801_000, 39) // held 38.5-39.5 ms: 0 after the delay
	c.rtt(250_000, 0)
	c.rtt(183_000, 0)
	m := c.minima()
	if !m.OWDSet || m.OWDUs != 5_000_100 || !m.RTTSet || m.RTTUs != 183 || !m.RTTBaseSet || m.RTTBaseUs != 0 {
		t.Errorf("minima %+v, want one-way 5000100 µs, RTT 183 µs, base 0", m)
	}
	var only FineMinima
	var held fineClock
	held.rtt(900_000, 1)
	only.Merge(&FineMinima{})
	o := held.minima()
	only.Merge(&o)
	if only.RTTSet || !only.RTTBaseSet || only.RTTBaseUs != 0 {
		t.Errorf("no round trip answered within half a ms: %+v, want no minimum shown", only)
	}
	only.Merge(&m)
	if !only.RTTSet || only.RTTUs != 183 || !only.OWDSet || only.OWDUs != 5_000_100 {
		t.Errorf("merged: %+v", only)
	}
}
