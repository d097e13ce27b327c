package agent

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// The memoryless spacing: an exponential draw clamped to 0.1x-2.5x of the
// mean. Clamping raises the short draws and cuts the long ones, so the
// mean of the spacings is (0.1 + e^-0.1 - e^-2.5) x the mean, about
// 0.9228x, and about 9.5 % of them sit on the lower clamp and 8.2 % on the
// upper one.
func TestEveryDistribution(t *testing.T) {
	const n = 200000
	mean := 6 * time.Hour
	e := Every{Mean: mean}
	rng := rand.New(rand.NewPCG(1, 2))
	var sum float64
	low, high := 0, 0
	for range n {
		d := e.Spacing(rng)
		if d < mean/10 || d > mean*5/2 {
			t.Fatalf("spacing %s outside 0.1x-2.5x of %s", d, mean)
		}
		switch d {
		case mean / 10:
			low++
		case mean * 5 / 2:
			high++
		}
		sum += float64(d) / float64(mean)
	}
	want := 0.1 + math.Exp(-0.1) - math.Exp(-2.5)
	if got := sum / n; math.Abs(got-want) > 0.01 {
		t.Errorf("mean spacing %.4f x the mean, want %.4f", got, want)
	}
	if got, want := float64(low)/n, 1-math.Exp(-0.1); math.Abs(got-want) > 0.005 {
		t.Errorf("%.4f on the lower clamp, want %.4f", got, want)
	}
	if got, want := float64(high)/n, math.Exp(-2.5); math.Abs(got-want) > 0.005 {
		t.Errorf("%.4f on the upper clamp, want %.4f", got, want)
	}
	// Not a constant: two probes started together drift apart.
	a, b := e.Spacing(rand.New(rand.NewPCG(1, 2))), e.Spacing(rand.New(rand.NewPCG(3, 4)))
	if a == b {
		t.Errorf("two seeds drew the same spacing %s", a)
	}
}

func TestCronNext(t *testing.T) {
	from := time.Date(2026, 12, 2, 3, 45, 0, 0, time.UTC) // a Wednesday
	for _, tc := range []struct {
		spec string
		want []time.Time
	}{
		{"30 3 * * *", []time.Time{time.Date(2026, 12, 3, 3, 30, 0, 0, time.UTC), time.Date(2026, 12, 4, 3, 30, 0, 0, time.UTC)}},
		{"0 */6 * * *", []time.Time{time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC), time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}},
		{"15 20 * * 1-5", []time.Time{time.Date(2026, 12, 2, 20, 15, 0, 0, time.UTC), time.Date(2026, 12, 3, 20, 15, 0, 0, time.UTC),
			time.Date(2026, 12, 4, 20, 15, 0, 0, time.UTC), time.Date(2026, 12, 7, 20, 15, 0, 0, time.UTC)}},
		{"@daily", []time.Time{time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)}},
	} {
		c, err := ParseCron(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		at := from
		for i, want := range tc.want {
			at = c.Next(at, nil)
			if !at.Equal(want) {
				t.Errorf("%s: slot %d %s, want %s", tc.spec, i+1, at, want)
			}
		}
	}
	for _, bad := range []string{"* * *", "60 * * * *", "* * * * * *", "@fortnightly", ""} {
		if _, err := ParseCron(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
