package sim

import (
	"testing"
	"time"
)

// An upstream client reports with each Sub-Interval the row it was sending
// at, the search's own view, which rises on a clean link; a downstream
// client does not know the server's rows and says so.
func TestSendRateReported(t *testing.T) {
	s, rc, _ := newPair(true, 5*time.Second)
	s.Run(12 * time.Second)
	if len(rc.subs) != 5 {
		t.Fatalf("%d Sub-Intervals, want 5", len(rc.subs))
	}
	prev := 0.0
	for _, r := range rc.subs {
		if !r.SendRateSet {
			t.Fatalf("sub %d: no sending rate on an upstream client", r.Seq)
		}
		m := r.SendRate.L3Mbps(false)
		t.Logf("sub %d: row at %.2f Mbps, measured %.2f", r.Seq, m, mbps(r))
		if m < prev {
			t.Errorf("sub %d: row fell from %.2f to %.2f Mbps on a clean link", r.Seq, prev, m)
		}
		// The search is ahead of (or at) what arrived in the Sub-Interval.
		if m < 0.95*mbps(r) {
			t.Errorf("sub %d: row at %.2f Mbps below the %.2f Mbps received", r.Seq, m, mbps(r))
		}
		prev = m
	}

	s, rc, _ = newPair(false, 5*time.Second)
	s.Run(12 * time.Second)
	for _, r := range rc.subs {
		if r.SendRateSet {
			t.Errorf("sub %d: a downstream client claims to know the sending rate", r.Seq)
		}
	}
}
