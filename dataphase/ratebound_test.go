package dataphase

import "testing"

// A client's rate bound: the row a Load Sender sends is never above the
// bound, whatever row the server assigns, and a Trial Interval received
// above the trigger is congested; no bound changes nothing.
func TestRateBound(t *testing.T) {
	table := BuildRateTable(TableOptions{})
	for _, mbps := range []float64{1, 40, 999, 5000} {
		b := NewRateBound(mbps, TableOptions{})
		for i, r := range table {
			for _, ipv6 := range []bool{false, true} {
				if got := b.clamp(r, ipv6); got.L3Mbps(ipv6) > mbps {
					t.Fatalf("bound %v: row %d (%v Mbit/s) sent as %v Mbit/s", mbps, i, r.L3Mbps(ipv6), got.L3Mbps(ipv6))
				}
			}
		}
		// 50 ms at the bound: congested; at half of it: not.
		perDgram := uint32(DefaultPayload)
		at := func(share float64) bool {
			n := uint32(mbps * share * 50000 / 8 / float64(perDgram+l3Overhead))
			return b.congested(&TrialInfo{Bytes: n * perDgram, Datagrams: n, DeltaTimeUs: 50000}, false)
		}
		if mbps >= 40 && (!at(1) || at(0.5)) {
			t.Errorf("bound %v: congested at the bound %v, at half of it %v", mbps, at(1), at(0.5))
		}
	}
	var none RateBound
	if r := table[1100]; none.clamp(r, false) != r || none.congested(&TrialInfo{Bytes: 1 << 30, Datagrams: 1 << 20, DeltaTimeUs: 1000}, false) {
		t.Error("no bound changed a row or reported congestion")
	}
}

// A bound below the table's first row (a small max_rate_mbps split over
// many Test Connections) still sends: the first row, not the zero row
// that disarms both transmitters and voids the test.
func TestRateBoundBelowFirstRow(t *testing.T) {
	table := BuildRateTable(TableOptions{})
	b := NewRateBound(table[0].L3Mbps(false)/2, TableOptions{})
	if got := b.clamp(table[100], false); got != table[0] || got.L3Mbps(false) <= 0 {
		t.Fatalf("row 100 under a bound of %v Mbit/s sent as %+v, want the first row %+v", b.Mbps, got, table[0])
	}
}
