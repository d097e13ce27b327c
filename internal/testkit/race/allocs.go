package race

import "testing"

// AllocsPerRun is testing.AllocsPerRun, except under the race detector,
// where it calls f as often (so what f does to the test's state is the
// same) and returns 0: the detector's own allocations are not the code's,
// and the allocation assertions are checked by the plain run.
func AllocsPerRun(runs int, f func()) float64 {
	if Enabled {
		for range runs + 1 { // AllocsPerRun's warm-up call, then runs
			f()
		}
		return 0
	}
	return testing.AllocsPerRun(runs, f)
}
