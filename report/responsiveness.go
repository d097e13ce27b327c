package report

import "math"

// Responsiveness under working conditions, as the IETF responsiveness
// draft (draft-ietf-ippm-responsiveness) expresses it: round trips per
// minute, RPM = 60 s / the round-trip time measured while the link is
// loaded. udpstp's --bidirectional test is such a condition: both
// directions search at once (bidir.go), and each half reports its round
// trip times above the minimum in its loaded phase. docs/history.md says
// which figures make the loaded round trip and why the grade's edges are
// where they are.

// Grades of responsiveness, for people: the words Apple's networkQuality
// and goresponsiveness use.
const (
	GradeLow    = "Low"
	GradeMedium = "Medium"
	GradeHigh   = "High"
)

// The grades' lower edges in RPM. 200 RPM is a 300 ms round trip, where
// a conversation already stumbles (ITU-T G.114 puts the limit of good
// interactive speech at 150 ms one way); 1000 RPM is 60 ms, under which
// loaded latency does not get in the way of calls, games or the web.
const (
	RPMMedium = 200
	RPMHigh   = 1000
)

// DelayResolutionMs is the resolution of OB-UDPST's delays in its JSON
// (whole milliseconds, TimestampResolutionUsed 1): a minimum RTT of 0 ms
// means less than 1 ms, so a loaded round trip is never taken as shorter.
const DelayResolutionMs = 1

// LoadedRTTMs is the round-trip time under load in ms: the minimum RTT of
// the test plus the mean RTT above that minimum over the loaded phase,
// both in ms, and at least DelayResolutionMs. ok is false when a figure is
// negative or not finite (a corrupt document).
func LoadedRTTMs(minRTTMs, loadedRTTVarAvgMs float64) (ms float64, ok bool) {
	if !finiteNonNegative(minRTTMs) || !finiteNonNegative(loadedRTTVarAvgMs) {
		return 0, false
	}
	s := minRTTMs + loadedRTTVarAvgMs
	if math.IsInf(s, 0) {
		return 0, false
	}
	return max(s, DelayResolutionMs), true
}

// RPM is round trips per minute for a loaded round trip of rttMs
// milliseconds (60000 / rttMs); ok is false when rttMs is not a positive
// finite figure.
func RPM(rttMs float64) (rpm float64, ok bool) {
	if !finiteNonNegative(rttMs) || rttMs == 0 {
		return 0, false
	}
	return 60000 / rttMs, true
}

// Grade is the word for rpm: Low below RPMMedium, Medium below RPMHigh,
// High from RPMHigh.
func Grade(rpm float64) string {
	switch {
	case rpm >= RPMHigh:
		return GradeHigh
	case rpm >= RPMMedium:
		return GradeMedium
	default:
		return GradeLow
	}
}

func finiteNonNegative(v float64) bool { return v >= 0 && !math.IsInf(v, 1) && !math.IsNaN(v) }
