// Package clock holds the Test Time Base and its conversion to the wall clock
// that travels on the wire.
//
// Every local judgement of the Data Phase (pacing, timers, intervals) uses the
// Test Time Base: CLOCK_MONOTONIC_RAW on Linux, which NTP never slews. The
// wire carries CLOCK_REALTIME, because OB-UDPST computes one-way delay by
// subtracting a peer's send time from its own wall clock. A Pair, read once
// per turn, converts between the two: wall(t) = Pair.Wall + (t - Pair.Mono).
package clock

import "time"

// Time is an instant on the Test Time Base in nanoseconds. Only differences
// between Times mean anything.
type Time int64

// Duration converts a time.Duration to a Time difference.
func Duration(d time.Duration) Time { return Time(d) }

// Add returns t + d.
func (t Time) Add(d time.Duration) Time { return t + Time(d) }

// Sub returns t - u as a time.Duration.
func (t Time) Sub(u Time) time.Duration { return time.Duration(t - u) }

// Never is a deadline that does not come.
const Never Time = 1<<63 - 1

// Pair is the Test Time Base and the wall clock read together.
type Pair struct {
	Mono Time  // Test Time Base
	Wall int64 // CLOCK_REALTIME, nanoseconds since the Unix epoch
}

// WallAt converts a Test Time Base instant to wall-clock nanoseconds.
func (p Pair) WallAt(t Time) int64 { return p.Wall + int64(t-p.Mono) }

// MonoAt converts wall-clock nanoseconds (a kernel receive timestamp, say)
// to the Test Time Base.
func (p Pair) MonoAt(wall int64) Time { return p.Mono + Time(wall-p.Wall) }

// Split returns wall-clock nanoseconds as the seconds and nanoseconds the
// PDUs carry (u32 seconds: the wire wraps in 2106).
func Split(wall int64) (sec, nsec uint32) {
	return uint32(wall / 1e9), uint32(wall % 1e9)
}

// Join is the inverse of Split.
func Join(sec, nsec uint32) int64 { return int64(sec)*1e9 + int64(nsec) }
