//go:build !linux

package clock

import "time"

// start anchors the Test Time Base off Linux: Go's monotonic clock, which
// the runtime reads cheaply, measured from process start.
var start = time.Now()

// Mono reads the Test Time Base.
func Mono() Time { return Time(time.Since(start)) }

// Now reads a Pair.
func Now() Pair {
	p, _ := NowAt()
	return p
}

// NowAt is Now with its instant as a time.Time (see now_linux.go).
func NowAt() (Pair, time.Time) {
	t := time.Now()
	return Pair{Mono: Time(t.Sub(start)), Wall: t.UnixNano()}, t
}
