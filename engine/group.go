package engine

import (
	"fmt"
	"time"

	"github.com/udpstp/udpstp/clock"
)

// The grouping window by load (PoolOptions.Group = GroupByLoad): an Engine
// Thread that carries few Test Connections wakes at each deadline exactly,
// which costs little (one wake-up a millisecond on the grid); one that
// carries many lets deadlines within the window of the earliest wait for
// the last of them and serves them in one turn. The window grows with the
// thread's Test Connections, so that the lateness it adds stays small
// beside the lateness a turn's own sends already give the last of them
// (a few µs per send: docs/performance.md), up to OB-UDPST's own 100 µs
// tick.
const (
	// GroupByLoad as PoolOptions.Group lets each thread choose its
	// window from the Test Connections it carries (groupFor).
	GroupByLoad time.Duration = -1

	groupFrom    = 8                      // up to this many Test Connections, no window
	groupPerConn = 2 * time.Microsecond   // the window per Test Connection beyond
	groupMax     = 100 * time.Microsecond // the most it grows to
)

// groupFor is the window of a thread that carries live Test Connections.
func groupFor(live int) clock.Time {
	if live <= groupFrom {
		return 0
	}
	return clock.Time(min(time.Duration(live-groupFrom)*groupPerConn, groupMax))
}

// describeGroup says how a pool groups deadlines, for its start-up line.
func describeGroup(g time.Duration) string {
	switch {
	case g == GroupByLoad:
		return fmt.Sprintf("grouping window by load (none up to %d Test Connections a thread, %v more for each beyond, at most %v)",
			groupFrom, groupPerConn, groupMax)
	case g > 0:
		return fmt.Sprintf("grouping window %v", g)
	}
	return "no grouping window"
}
