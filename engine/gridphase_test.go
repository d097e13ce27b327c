package engine

import (
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
)

// TestGridPhasesOpenWhenFull: a thread keeps one phase up to per Test
// Connections, opens another for each further per, fills the least used,
// and reuses what leavers free before opening more.
func TestGridPhasesOpenWhenFull(t *testing.T) {
	g := gridPhases{per: 40}
	got := make([]int, 0, 120)
	for range 120 {
		got = append(got, g.take())
	}
	for i, k := range got {
		if want := i / 40; k != want {
			t.Fatalf("Test Connection %d: phase %d, want %d", i, k, want)
		}
	}
	// Ten leave phase 1; the next ten fill it again.
	for range 10 {
		g.give(1)
	}
	for i := range 10 {
		if k := g.take(); k != 1 {
			t.Fatalf("refill %d: phase %d, want 1", i, k)
		}
	}
	// Beyond maxPhases full, they spread evenly.
	h := gridPhases{per: 1}
	for range 3 * maxPhases {
		h.take()
	}
	for k, n := range h.count {
		if n != 3 {
			t.Errorf("phase %d holds %d, want 3", k, n)
		}
	}
	// per <= 0: a single phase.
	one := gridPhases{}
	for range 100 {
		if k := one.take(); k != 0 {
			t.Fatalf("one phase: got %d", k)
		}
	}
}

// TestPhasesAreSpread: the phases in use at any count are apart on the
// 1 ms grid and distinct modulo 100 µs, and each lies within 1 ms.
func TestPhasesAreSpread(t *testing.T) {
	ms, us100 := clock.Time(time.Millisecond), clock.Time(100*time.Microsecond)
	for open := 2; open <= maxPhases; open++ {
		seen1, seen100 := map[clock.Time]bool{}, map[clock.Time]bool{}
		for k := range open {
			p := phaseOf(k)
			if p < 0 || p >= ms {
				t.Fatalf("phase %d at %v: not within 1 ms", k, p)
			}
			if seen1[p%ms] || seen100[p%us100] {
				t.Errorf("%d phases: phase %d at %v coincides with another", open, k, p)
			}
			seen1[p%ms], seen100[p%us100] = true, true
		}
	}
	// The first two are half a period apart on the 1 ms grid.
	if d := phaseOf(1) - phaseOf(0); d < ms/2 {
		t.Errorf("phases 0 and 1 %v apart", d)
	}
}
