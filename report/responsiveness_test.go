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

// TestLoadedRTT: a pair's loaded round trip comes from udpstp's figures to
// the µs where a half has them (a LAN's 0.2 ms is not taken as the 1 ms
// floor of OB-UDPST's whole ms, 60000 RPM), else from the ms figures.
func TestLoadedRTT(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	fine := LoadedHalf{MinRTTMs: f(0), LoadedRTTVarAvgMs: f(0), FineMinRTTMs: f(0.05), FineLoadedRTTVarAvgMs: f(0.15)}
	msOnly := LoadedHalf{MinRTTMs: f(0), LoadedRTTVarAvgMs: f(0)}
	for _, c := range []struct {
		name   string
		halves []LoadedHalf
		ms     float64
		res    Resolution
		ok     bool
	}{
		{"LAN, one half to the µs", []LoadedHalf{msOnly, fine}, 0.2, ResolutionMicrosecond, true},
		{"OB-UDPST's ms only", []LoadedHalf{msOnly, {MinRTTMs: f(20), LoadedRTTVarAvgMs: f(5)}}, 13, ResolutionMillisecond, true},
		{"under a µs", []LoadedHalf{{FineMinRTTMs: f(0), FineLoadedRTTVarAvgMs: f(0)}}, FineResolutionMs, ResolutionMicrosecond, true},
		{"corrupt µs figures fall back", []LoadedHalf{{MinRTTMs: f(3), LoadedRTTVarAvgMs: f(1), FineMinRTTMs: f(math.NaN()), FineLoadedRTTVarAvgMs: f(1)}}, 4, ResolutionMillisecond, true},
		{"nothing", []LoadedHalf{{}, {MinRTTMs: f(-1), LoadedRTTVarAvgMs: f(1)}}, 0, "", false},
	} {
		ms, res, ok := LoadedRTT(c.halves...)
		if math.Abs(ms-c.ms) > 1e-12 || res != c.res || ok != c.ok {
			t.Errorf("%s: %v %q %v, want %v %q %v", c.name, ms, res, ok, c.ms, c.res, c.ok)
		}
	}
}
