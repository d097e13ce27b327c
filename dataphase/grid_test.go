package dataphase

import (
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
)

func TestOnGrid(t *testing.T) {
	ms := clock.Time(time.Millisecond)
	for _, c := range []struct{ t, iv, want clock.Time }{
		{0, ms, 0}, {1, ms, ms}, {ms, ms, ms}, {ms + 1, ms, 2 * ms},
		{-1, ms, 0}, {-ms - 1, ms, -ms}, {12345, 0, 12345},
	} {
		if got := onGrid(c.t, c.iv); got != c.want {
			t.Errorf("onGrid(%d, %d) = %d, want %d", c.t, c.iv, got, c.want)
		}
	}
}

// TestBurstsShareTheGrid: Load Senders started at unrelated instants, with
// different rows, fire their Bursts on the same grid of their periods, and
// each keeps its period; a transmitter a new row arms starts on the grid.
func TestBurstsShareTheGrid(t *testing.T) {
	table := BuildRateTable(TableOptions{})
	ms := clock.Time(time.Millisecond)
	for i, start := range []clock.Time{1_000_003_217, 7_777_777_777, 42} {
		var s sender
		row := table[10+i*300] // 10 Mbit/s (1 ms), 310 and 610 (100 us and 1 ms)
		s.init(row, start, clock.Time(DefaultCatchUpBudget), uint64(i+1))
		for tx := range s.tx {
			if !s.tx[tx].armed {
				continue
			}
			if iv := s.interval(tx); s.tx[tx].due%iv != 0 {
				t.Errorf("start %d, transmitter %d: first Burst at %d, not a multiple of %d", start, tx, s.tx[tx].due, iv)
			}
		}
		now := s.nextDue()
		prev := map[int]clock.Time{}
		for range 50 {
			before := s.tx
			if _, ok := s.fire(now, false); !ok {
				t.Fatalf("nothing due at %d", now)
			}
			for tx := range s.tx {
				if s.tx[tx].due != before[tx].due {
					if p, ok := prev[tx]; ok && before[tx].due-p != s.interval(tx) {
						t.Errorf("transmitter %d: Bursts %d apart, period %d", tx, before[tx].due-p, s.interval(tx))
					}
					prev[tx] = before[tx].due
				}
			}
			now = s.nextDue()
		}
		s.setRow(table[1], now+ms/3) // 1 ms only: a Burst already due stays due
		if d := s.nextDue(); d%ms != 0 || d > now+ms/3+ms {
			t.Errorf("after a new row at %d, the next Burst at %d: not on the 1 ms grid within a period", now+ms/3, d)
		}
	}
}
