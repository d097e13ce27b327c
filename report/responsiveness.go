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

// FineResolutionMs is the resolution of udpstp's own delays (fine.go):
// one microsecond.
const FineResolutionMs = 0.001

// LoadedHalf is a --bidirectional half's figures for its loaded round
// trip, in ms, nil where missing: OB-UDPST's whole-ms minimum RTT and the
// mean RTT above it over the loaded phase, and udpstp's own pair to the µs
// (a half measures those where it is the Load Receiver).
type LoadedHalf struct {
	MinRTTMs, LoadedRTTVarAvgMs         *float64
	FineMinRTTMs, FineLoadedRTTVarAvgMs *float64
}

// Resolution names the figures a loaded round trip was computed from.
type Resolution string

const (
	// ResolutionMicrosecond: udpstp's figures to the µs (fine.go).
	ResolutionMicrosecond Resolution = "microsecond"
	// ResolutionMillisecond: OB-UDPST's whole ms (its documents, or a
	// udpstp document without our figures); at least DelayResolutionMs.
	ResolutionMillisecond Resolution = "millisecond"
)

// LoadedRTT is a --bidirectional pair's round trip under load in ms: the
// mean over the halves of each one's minimum RTT plus its mean RTT above
// the minimum in the loaded phase. Where a half has udpstp's figures to the
// µs, only such halves count (a LAN's round trip is a fraction of the
// whole ms that OB-UDPST's figures are rounded to, and its 0 ms minimum
// would make every LAN 1 ms, 60000 RPM); else OB-UDPST's ms figures, as
// for its own documents. res says which; ok is false when no half has a
// usable pair.
func LoadedRTT(halves ...LoadedHalf) (ms float64, res Resolution, ok bool) {
	mean := func(fine bool) (float64, bool) {
		sum, n := 0.0, 0
		for _, h := range halves {
			lo, v, floor := h.MinRTTMs, h.LoadedRTTVarAvgMs, float64(DelayResolutionMs)
			if fine {
				lo, v, floor = h.FineMinRTTMs, h.FineLoadedRTTVarAvgMs, FineResolutionMs
			}
			if lo == nil || v == nil || !finiteNonNegative(*lo) || !finiteNonNegative(*v) {
				continue
			}
			s := *lo + *v
			if math.IsInf(s, 0) {
				continue
			}
			sum += max(s, floor)
			n++
		}
		if n == 0 {
			return 0, false
		}
		return sum / float64(n), true
	}
	if ms, ok := mean(true); ok {
		return ms, ResolutionMicrosecond, true
	}
	if ms, ok := mean(false); ok {
		return ms, ResolutionMillisecond, true
	}
	return 0, "", false
}
