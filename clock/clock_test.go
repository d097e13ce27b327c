package clock

import (
	"testing"
	"time"
)

// TestPairConversions: wall and Test Time Base convert into each other
// exactly through one pair, and two pairs read 20 ms apart agree on the
// elapsed time (RAW and REALTIME run at the same rate, give or take NTP's
// slew) within a millisecond.
func TestPairConversions(t *testing.T) {
	p := Now()
	for _, d := range []int64{0, 1, -1, 123_456_789, -5_000_000_000} {
		if got := p.MonoAt(p.WallAt(p.Mono + Time(d))); got != p.Mono+Time(d) {
			t.Errorf("round trip of %d ns: %d", d, got-p.Mono)
		}
	}
	time.Sleep(20 * time.Millisecond)
	q := Now()
	skew := (q.Wall - p.Wall) - int64(q.Mono-p.Mono)
	if skew < -int64(time.Millisecond) || skew > int64(time.Millisecond) {
		t.Errorf("two pairs 20 ms apart disagree by %d ns", skew)
	}
	if sec, nsec := Split(q.Wall); Join(sec, nsec) != q.Wall || nsec >= 1e9 {
		t.Errorf("Split/Join of %d: %d %d", q.Wall, sec, nsec)
	}
}

// BenchmarkNow measures a clock pair read, the cost paid once per turn.
func BenchmarkNow(b *testing.B) {
	for b.Loop() {
		_ = Now()
	}
}

// BenchmarkMono measures one Test Time Base read (a system call on Linux).
func BenchmarkMono(b *testing.B) {
	for b.Loop() {
		_ = Mono()
	}
}
