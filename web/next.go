//go:build !small

package web

import (
	"fmt"
	"math"
	"time"
)

// nextRun is a test's next scheduled run as the overview shows it
// (Agent.NextRuns): the agent's local time and how far off it is.
type nextRun struct {
	At time.Time // zero: the test has none
	// In is At from the page's now in words ("in 4 min"); Due: At is
	// not after now (the slot is being run, or waits for the test lock).
	In  string
	Due bool
}

// nextRunOf is at seen from now; running says the test runs now.
func nextRunOf(at, now time.Time, running bool) nextRun {
	if at.IsZero() {
		return nextRun{}
	}
	n := nextRun{At: at, In: inWords(at.Sub(now)), Due: !at.After(now)}
	if n.Due && running {
		n.In = "running now"
	}
	return n
}

// inWords is how far off a time d away is, to the minute: "in 4 min",
// "in 2 h 5 min", "in 3 d 1 h"; "due now" once it has come. The page's
// script (assets/app.js, inWords) keeps the text current with the same
// words: a change here is a change there.
func inWords(d time.Duration) string {
	if d <= 0 {
		return "due now"
	}
	m := int(math.Round(d.Minutes()))
	switch {
	case m < 1:
		return "in under a minute"
	case m < 60:
		return fmt.Sprintf("in %d min", m)
	}
	h, m := m/60, m%60
	if h < 24 {
		if m == 0 {
			return fmt.Sprintf("in %d h", h)
		}
		return fmt.Sprintf("in %d h %d min", h, m)
	}
	days, h := h/24, h%24
	if h == 0 {
		return fmt.Sprintf("in %d d", days)
	}
	return fmt.Sprintf("in %d d %d h", days, h)
}
