package report

import "testing"

func TestStillRising(t *testing.T) {
	// c builds samples of capacities with no errors and unknown rates.
	c := func(caps ...float64) []ClimbSample {
		s := make([]ClimbSample, len(caps))
		for i, v := range caps {
			s[i].Capacity = v
		}
		return s
	}
	// r adds sending rates to samples.
	r := func(s []ClimbSample, rates ...float64) []ClimbSample {
		for i := range s {
			s[i].SendRate = rates[i]
		}
		return s
	}
	// e sets sequence errors on Sub-Interval i.
	e := func(s []ClimbSample, i int, n uint32) []ClimbSample { s[i].SeqErrors = n; return s }
	for _, tt := range []struct {
		name string
		s    []ClimbSample
		want bool
	}{
		{"climbing to the end (downstream: capacity only)", c(10, 100, 200, 300, 400, 500), true},
		{"climbing to the end, rates known", r(c(10, 100, 200, 300, 400, 500), 12, 110, 210, 310, 410, 510), true},
		{"too short to judge", c(100, 200, 300), false},
		{"just long enough", c(100, 200, 300, 400), true},
		{"held at a bottleneck (tbf): flat", c(5, 15, 19.9, 20, 19.8, 20.1), false},
		{"maximum earlier in the test", c(100, 600, 200, 300, 400, 500), false},
		{"grew less than 5 % over the window", c(100, 480, 490, 495, 500, 503), false},
		{"loss in the window", e(c(10, 100, 200, 300, 400, 500), 4, 1), false},
		{"loss before the window only", e(c(10, 100, 200, 300, 400, 500), 1, 7), true},
		{"loss in the Sub-Interval before the window only", e(c(10, 100, 200, 300, 400, 500), 2, 7), true},
		{"rate decreased in the window", r(c(10, 100, 200, 300, 400, 500), 12, 110, 210, 310, 300, 510), false},
		{"rate flat over the window", r(c(10, 100, 200, 300, 400, 500), 12, 110, 510, 510, 510, 510), false},
		{"highest rate earlier", r(c(10, 100, 200, 300, 400, 500), 12, 900, 210, 310, 410, 510), false},
		{"rates partly unknown: capacity decides", r(c(10, 100, 200, 300, 400, 500), 12, 110, 0, 310, 410, 510), true},
		{"no capacity at all", c(0, 0, 0, 0, 0), false},
	} {
		if got := StillRising(tt.s); got != tt.want {
			t.Errorf("%s: StillRising = %v, want %v", tt.name, got, tt.want)
		}
	}
}
