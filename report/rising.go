package report

// Honest maxima on fast paths. OB-UDPST's search (RFC 9097 section 8.1,
// kept exactly as it is) climbs the Sending Rate Table for the whole test;
// on a path faster than the test lets it climb to, the Maximum is where
// the test happened to stop, not what the path carries, and a longer test
// would report more. StillRising recognises such a test from the
// Sub-Intervals the Maximum is taken over (the last mode's), so that the
// report says so (text, JSON extension, --json-stream) instead of
// presenting a length-bound figure as the path's capacity. ErrorStatus and
// OB-UDPST's lines and keys stay as they are: this is a note, not one of
// its warnings.

// RisingWindow is how many of the last Sub-Intervals StillRising judges
// (3: the last 3 seconds at the default 1 s Sub-Interval).
const RisingWindow = 3

// risingGrowth is how much the capacity must have grown over the window
// (5 %): a search held at a bottleneck measures about the same capacity
// second after second, and its noise must not read as a climb.
const risingGrowth = 1.05

// ClimbSample is one aggregate Sub-Interval as StillRising reads it.
type ClimbSample struct {
	// Capacity is the Sub-Interval's IP-layer capacity, Mbit/s.
	Capacity float64
	// SeqErrors are its lost and reordered datagrams (the sequence
	// errors the search backs off on).
	SeqErrors uint32
	// SendRate is the sending rate of the rows the Load Senders were at
	// (the sum over the Test Connections, nominal L3 Mbit/s), 0 where
	// unknown: a downstream client never learns the server's rows.
	SendRate float64
}

// StillRising reports whether the search was still rising at the end of
// the test, so that the Maximum may depend on the test's length. It holds
// when all of these do, over the last RisingWindow Sub-Intervals s[n-W:]
// (W = RisingWindow; s[n-W-1] is the one before them, so n must be at
// least W+1):
//
//  1. the last Sub-Interval has the test's highest capacity (the
//     Maximum is at the end), and it is above zero;
//  2. the capacity grew over the window: the last is at least 5 % above
//     the one before the window;
//  3. no Sub-Interval of the window had a sequence error (loss or
//     reordering), the search's sign of a bottleneck;
//  4. where the sending rates are known (every Sub-Interval from the one
//     before the window on): no decrease within the window, the last rate
//     above the one before the window, and the last rate the test's
//     highest.
func StillRising(s []ClimbSample) bool {
	n := len(s)
	if n < RisingWindow+1 {
		return false
	}
	last, before := s[n-1], s[n-1-RisingWindow]
	if last.Capacity <= 0 || last.Capacity < before.Capacity*risingGrowth {
		return false
	}
	for i := range s {
		if s[i].Capacity > last.Capacity {
			return false
		}
	}
	rates := true
	for i := n - 1 - RisingWindow; i < n; i++ {
		if s[i].SendRate <= 0 {
			rates = false
		}
		if i > n-1-RisingWindow && s[i].SeqErrors != 0 {
			return false
		}
	}
	if !rates {
		return true
	}
	if last.SendRate <= before.SendRate {
		return false
	}
	for i := n - RisingWindow; i < n; i++ {
		if s[i].SendRate < s[i-1].SendRate {
			return false
		}
	}
	for i := range s {
		if s[i].SendRate > last.SendRate {
			return false
		}
	}
	return true
}

// StillRisingNote is the text report's line after the Maximum when
// StillRising holds: what it means and what to try.
const StillRisingNote = "NOTE: The search was still rising at the end of the test (no loss, highest rate and capacity in the last Sub-Intervals): " +
	"the path may carry more than this Maximum. Try a longer test (-t), a higher starting rate (-I @row), " +
	"more connections (-C n) or a larger high-speed step (-h n)"
