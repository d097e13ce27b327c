package sim

import (
	"testing"
	"time"

	"github.com/udpstp/udpstp/dataphase"
)

// TestBottleneck checks the search against a link of known capacity in
// virtual time: the maximum Sub-Interval lands close to the bottleneck's
// rate, measured at the layer the bottleneck meters (IP here).
func TestBottleneck(t *testing.T) {
	for _, c := range []struct {
		name string
		up   bool
		rate float64
	}{
		{"down-100M", false, 100e6},
		{"up-100M", true, 100e6},
		{"down-500M", false, 500e6},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, rc, _ := newPair(c.up, 10*time.Second)
			l := Link{Delay: 5 * time.Millisecond, RateBps: c.rate, QueueBytes: 125_000, Overhead: 28}
			if c.up {
				s.Up = l
			} else {
				s.Down = l
			}
			s.Run(20 * time.Second)
			if rc.end != dataphase.EndStopped {
				t.Fatalf("client end %v", rc.end)
			}
			best := 0.0
			for _, r := range rc.subs {
				t.Logf("sub %d: %.2f Mbps loss %d", r.Seq, mbps(r), r.Stats.SeqErrLoss)
				best = max(best, mbps(r))
			}
			want := c.rate / 1e6
			if best < 0.95*want || best > 1.005*want {
				t.Errorf("maximum %.2f Mbps, bottleneck %.2f", best, want)
			}
		})
	}
}
