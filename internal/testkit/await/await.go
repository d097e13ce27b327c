// Package await waits in tests for a condition that another goroutine or
// process brings about: the synchronisation a test needs instead of a
// sleep that guesses how long the machine takes. The deadline is generous
// on purpose: it bounds a test whose code is broken, and a slow, busy
// machine (or the race detector) never comes near it.
package await

import (
	"testing"
	"time"
)

// Deadline bounds every wait: far beyond what any condition takes on a
// loaded 2-core machine under the race detector, short enough that a
// broken test still ends well within `go test`'s own timeout.
const Deadline = 30 * time.Second

// True polls cond until it holds, and fails t, saying what it waited for,
// if it does not within Deadline. It polls every millisecond at first and
// backs off to every 20 ms.
func True(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !Within(Deadline, cond) {
		t.Fatalf("still waiting after %v for %s", Deadline, what)
	}
}

// Within polls cond until it holds or d has passed, and reports whether it
// held; for a test that says more than True can when the wait fails.
func Within(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(end) {
			return cond()
		}
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
	return true
}
