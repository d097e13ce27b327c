package sim

import (
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
)

// params returns a Test Connection's parameters for OB-UDPST's defaults.
func params(upstream, server bool, testTime time.Duration) dataphase.Params {
	p := dataphase.Params{
		Server: server, Upstream: upstream,
		TestIntTime: testTime, TrialInt: 50 * time.Millisecond, SubIntPeriod: time.Second,
		LowThresh: 30, UpperThresh: 90, SeqErrThresh: 10, SlowAdjThresh: 3, HighSpeedDelta: 10,
		IgnoreOooDup: true, SRIndexConf: dataphase.AutoRateIndex,
		Seed: 1,
	}
	table := dataphase.BuildRateTable(dataphase.TableOptions{})
	if server {
		p.Table = table
		// What a Test Activation Request and its Response carry: the
		// start of the anti-amplification budget.
		p.PeerBytesIn, p.PeerBytesOut = 104, 104
		p.PoliceOverRate = true
		p.Seed = 2
	} else {
		p.InitialRate = table[0]
	}
	return p
}

type record struct {
	subs   []dataphase.SubIntervalResult
	warns  []dataphase.Event
	end    dataphase.EndReason
	endAt  time.Duration
	trials int
	counts dataphase.Counts // added up from every event
}

func (r *record) on(t time.Duration, ev dataphase.Event) {
	r.counts.Add(&ev.Counts)
	switch ev.Kind {
	case dataphase.EvSubInterval:
		r.subs = append(r.subs, ev.SubInt)
	case dataphase.EvWarning:
		r.warns = append(r.warns, ev)
	case dataphase.EvEnd:
		r.end, r.endAt = ev.End, t
	case dataphase.EvTrial:
		r.trials++
	}
}

func newPair(upstream bool, testTime time.Duration) (*Sim, *record, *record) {
	start := clock.Pair{Mono: Start, Wall: WallBase}
	var rc, rs record
	s := &Sim{
		Client: &Endpoint{Core: dataphase.NewConn(params(upstream, false, testTime), start), OnEvent: rc.on},
		Server: &Endpoint{Core: dataphase.NewConn(params(upstream, true, testTime), start), OnEvent: rs.on},
		Up:     Link{Delay: time.Millisecond},
		Down:   Link{Delay: time.Millisecond},
	}
	return s, &rc, &rs
}

func mbps(r dataphase.SubIntervalResult) float64 {
	if r.Stats.DeltaTime == 0 {
		return 0
	}
	return float64(r.Stats.RxBytes+uint64(r.Stats.RxDatagrams)*28) * 8 / float64(r.Stats.DeltaTime)
}

// TestCompleteTest runs a whole default test each way on an unconstrained
// link: five Sub-Intervals, the stop handshake, no warnings, and the search
// ramping as OB-UDPST's does (10 rows per 50 ms Trial Interval).
func TestCompleteTest(t *testing.T) {
	for _, up := range []bool{false, true} {
		name := "downstream"
		if up {
			name = "upstream"
		}
		t.Run(name, func(t *testing.T) {
			s, rc, rs := newPair(up, 5*time.Second)
			el := s.Run(12 * time.Second)
			if rc.end != dataphase.EndStopped || rs.end != dataphase.EndStopped {
				t.Fatalf("ends: client %v at %v, server %v at %v (elapsed %v)", rc.end, rc.endAt, rs.end, rs.endAt, el)
			}
			if rc.endAt < 5500*time.Millisecond || rc.endAt > 5700*time.Millisecond {
				t.Errorf("client ended at %v, want shortly after 5.5 s", rc.endAt)
			}
			if len(rc.subs) != 5 {
				t.Fatalf("client got %d Sub-Intervals, want 5", len(rc.subs))
			}
			if len(rc.warns) != 0 || len(rs.warns) != 0 {
				t.Errorf("warnings: client %+v server %+v", rc.warns, rs.warns)
			}
			for i, r := range rc.subs {
				t.Logf("sub %d: %.2f Mbps, loss %d, accum %d ms", r.Seq, mbps(r), r.Stats.SeqErrLoss, r.Stats.AccumTime)
				if r.Stats.SeqErrLoss != 0 || r.Stats.SeqErrOoo != 0 || r.Stats.SeqErrDup != 0 {
					t.Errorf("sub %d: sequence errors on a clean link", i+1)
				}
			}
			// With 2 ms RTT every Trial Interval is good: +10 rows per
			// 50 ms, so the 5th second runs at roughly 800-1000 Mbps.
			if m := mbps(rc.subs[4]); m < 750 || m > 1010 {
				t.Errorf("5th Sub-Interval at %.1f Mbps, want the ramp's 800-1000", m)
			}
		})
	}
}
