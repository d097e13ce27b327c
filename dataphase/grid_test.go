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
		s.setRow(table[1], now+ms/3, 0) // 1 ms only: a Burst already due stays due
		if d := s.nextDue(); d%ms != 0 || d > now+ms/3+ms {
			t.Errorf("after a new row at %d, the next Burst at %d: not on the 1 ms grid within a period", now+ms/3, d)
		}
	}
}

// TestGridPhase: a Test Connection's grid moved by a phase keeps its
// Bursts at phase plus multiples of their periods (also those of a row
// adopted later, and after skipped Bursts), only later than unmoved; a Load
// Receiver's Status PDUs move with it.
func TestGridPhase(t *testing.T) {
	table := BuildRateTable(TableOptions{})
	ms := clock.Time(time.Millisecond)
	const phase = clock.Time(550 * time.Microsecond)
	onPhase := func(at, iv clock.Time) bool { return (at-phase)%iv == 0 }
	for i, start := range []clock.Time{1_000_003_217, 42} {
		var s sender
		s.init(table[310], start, clock.Time(DefaultCatchUpBudget), uint64(i+1)) // 100 us and 1 ms
		before := s.tx
		s.setPhase(phase)
		for tx := range s.tx {
			if !s.tx[tx].armed {
				continue
			}
			iv := s.interval(tx)
			if d := s.tx[tx].due; !onPhase(d, iv) || d < before[tx].due || d-before[tx].due >= iv {
				t.Errorf("transmitter %d: %d moved to %d, not the next point of phase %d on %d", tx, before[tx].due, d, phase, iv)
			}
		}
		now := s.nextDue()
		for n := range 40 {
			if n == 20 {
				now += 3 * clock.Time(DefaultCatchUpBudget) // a stall: Bursts skipped
			}
			if _, ok := s.fire(now, false); !ok {
				t.Fatalf("nothing due at %d", now)
			}
			for tx := range s.tx {
				if s.tx[tx].armed && !onPhase(s.tx[tx].due, s.interval(tx)) {
					t.Fatalf("transmitter %d due at %d, off phase", tx, s.tx[tx].due)
				}
			}
			now = max(now, s.nextDue())
		}
		if s.skippedBursts == 0 {
			t.Error("the stall skipped no Burst")
		}
		s.setRow(table[1], now+ms/3, phase)
		if d := s.nextDue(); !onPhase(d, ms) || d > now+ms/3+ms {
			t.Errorf("after a new row, the next Burst at %d: not on the moved grid within a period", d)
		}
	}
	p := Params{TestIntTime: 10 * time.Second, TrialInt: 50 * time.Millisecond, SubIntPeriod: time.Second,
		SRIndexConf: AutoRateIndex, InitialRate: table[0]}
	c := NewConn(p, clock.Pair{Mono: 1_000_003_217, Wall: 1796009000e9})
	c.SetGridPhase(phase)
	if !onPhase(c.statusAt, ms) {
		t.Errorf("the first Status PDU at %d, off phase", c.statusAt)
	}
}
