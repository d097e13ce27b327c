package race

import "testing"

var sink []byte

// TestAllocsPerRun: the plain build counts what f allocates; under the
// race detector f still runs as often, and the count is 0.
func TestAllocsPerRun(t *testing.T) {
	calls := 0
	n := AllocsPerRun(10, func() {
		calls++
		sink = make([]byte, 64)
	})
	if calls != 11 {
		t.Errorf("f called %d times, want 11 (a warm-up and 10 runs)", calls)
	}
	if Enabled && n != 0 || !Enabled && n < 1 {
		t.Errorf("race %v: %v allocations per run", Enabled, n)
	}
}
