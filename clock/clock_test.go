package clock

import (
	"testing"
	"time"
)

// TestPairConversions: wall and Test Time Base convert into each other
// exactly through one pair, a pair's wall clock is CLOCK_REALTIME (the
// clock time.Now reads), and the Test Time Base never runs backwards.
//
// Two pairs read apart are not compared with each other: the raw clock and
// the wall clock run at rates NTP makes differ (thousands of ppm on a VM),
// so their disagreement measures the machine, not this code.
func TestPairConversions(t *testing.T) {
	before := time.Now().UnixNano()
	p := Now()
	after := time.Now().UnixNano()
	for _, d := range []int64{0, 1, -1, 123_456_789, -5_000_000_000} {
		if got := p.MonoAt(p.WallAt(p.Mono + Time(d))); got != p.Mono+Time(d) {
			t.Errorf("round trip of %d ns: %d", d, got-p.Mono)
		}
	}
	if p.Wall < before || p.Wall > after {
		t.Errorf("pair's wall clock %d outside the time.Now reads around it [%d, %d]", p.Wall, before, after)
	}
	q := Now()
	if q.Mono < p.Mono {
		t.Errorf("the Test Time Base ran backwards: %d after %d", q.Mono, p.Mono)
	}
	if sec, nsec := Split(q.Wall); Join(sec, nsec) != q.Wall || nsec >= 1e9 {
		t.Errorf("Split/Join of %d: %d %d", q.Wall, sec, nsec)
	}
}

// TestNowAtIsThePairsInstant: the time NowAt returns is the pair's own
// instant, on the wall clock the pair carries and with a monotonic reading
// between the runtime's reads around it, so a clock advanced from it starts
// where the pair does.
func TestNowAtIsThePairsInstant(t *testing.T) {
	before := time.Now()
	p, at := NowAt()
	after := time.Now()
	if at.UnixNano() != p.Wall {
		t.Errorf("NowAt's time %d, its pair's wall clock %d", at.UnixNano(), p.Wall)
	}
	// Sub uses the monotonic readings when both times carry one: a time
	// without one would compare by the wall clock, which can step.
	if at.Round(0) == at {
		t.Error("NowAt's time carries no monotonic reading")
	}
	if at.Sub(before) < 0 || after.Sub(at) < 0 {
		t.Errorf("NowAt's time %v outside the runtime's reads around it (%v, %v)", at, before, after)
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
