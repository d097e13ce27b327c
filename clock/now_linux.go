package clock

import (
	"time"

	"golang.org/x/sys/unix"
)

// Mono reads the Test Time Base, CLOCK_MONOTONIC_RAW. Through x/sys this is a
// real system call (about 400 ns on the machines we measured, against 30 ns
// for the vDSO clocks), so callers read it once per turn, never per datagram.
func Mono() Time {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC_RAW, &ts); err != nil {
		// Linux has had CLOCK_MONOTONIC_RAW since 2.6.28; this cannot fail
		// on a kernel we run on.
		panic("clock: CLOCK_MONOTONIC_RAW: " + err.Error())
	}
	return Time(ts.Nano())
}

// Now reads a Pair: the Test Time Base bracketed by two wall-clock reads
// (the vDSO serves CLOCK_REALTIME in tens of nanoseconds, the raw clock is
// a system call). A thread preempted between the reads would skew every
// conversion made with the pair by the time it lost, so a pair whose
// bracket is wider than pairSkew is read again (at most a few times), and
// the wall clock taken is the bracket's midpoint.
func Now() Pair {
	p, _ := NowAt()
	return p
}

// NowAt is Now with the bracket's midpoint as a time.Time, which carries
// the runtime's monotonic reading: a caller that advances the pair with
// the runtime's clock (one vDSO read, against the raw clock's system call)
// measures from the pair's own instant, not from a later read that a
// preemption could put hundreds of microseconds after it.
func NowAt() (Pair, time.Time) {
	for try := 0; ; try++ {
		t1 := time.Now()
		m := Mono()
		t2 := time.Now()
		w := t2.Sub(t1)
		mid := t1.Add(w / 2)
		if w <= pairSkew || try == 3 {
			return Pair{Mono: m, Wall: mid.UnixNano()}, mid
		}
	}
}

// pairSkew bounds the width of a clock pair's bracket: a raw clock read
// costs about half a microsecond here, a preemption hundreds.
const pairSkew = 20 * time.Microsecond
