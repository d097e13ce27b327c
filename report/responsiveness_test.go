package report

import (
	"math"
	"testing"
)

func TestRPMAndGrade(t *testing.T) {
	for _, c := range []struct {
		rttMs float64
		rpm   float64
		grade string
	}{
		{1, 60000, GradeHigh},
		{60, 1000, GradeHigh},
		{60.06, 60000 / 60.06, GradeMedium},
		{300, 200, GradeMedium},
		{300.5, 60000 / 300.5, GradeLow},
		{2000, 30, GradeLow},
	} {
		rpm, ok := RPM(c.rttMs)
		if !ok || rpm != c.rpm || Grade(rpm) != c.grade {
			t.Errorf("RPM(%v) = %v %v, grade %q; want %v, %q", c.rttMs, rpm, ok, Grade(rpm), c.rpm, c.grade)
		}
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if rpm, ok := RPM(bad); ok {
			t.Errorf("RPM(%v) = %v, want no figure", bad, rpm)
		}
	}
}

func TestLoadedRTTMs(t *testing.T) {
	for _, c := range []struct {
		min, avg, want float64
		ok             bool
	}{
		{20, 250, 270, true},
		{0, 0, DelayResolutionMs, true}, // under the resolution: 1 ms
		{0, 0.3, DelayResolutionMs, true},
		{-1, 5, 0, false},
		{5, math.NaN(), 0, false},
		{math.MaxFloat64, math.MaxFloat64, 0, false},
	} {
		got, ok := LoadedRTTMs(c.min, c.avg)
		if got != c.want || ok != c.ok {
			t.Errorf("LoadedRTTMs(%v, %v) = %v %v, want %v %v", c.min, c.avg, got, ok, c.want, c.ok)
		}
	}
}
