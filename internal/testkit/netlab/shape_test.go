//go:build linux

package netlab

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// steadyRate returns the metered bits/s (payload + udpIPv4Overhead per
// datagram) of the arrivals in [first+skip, first+skip+window], leaving
// out the start, where the full bucket lets a burst through, and the end,
// where the queue drains.
func steadyRate(got []arrival, skip, window time.Duration) (float64, int) {
	if len(got) == 0 {
		return 0, 0
	}
	from := got[0].at.Add(skip)
	to := from.Add(window)
	var bits float64
	n := 0
	for _, a := range got {
		if !a.at.Before(from) && a.at.Before(to) {
			bits += float64(8 * (a.size + udpIPv4Overhead))
			n++
		}
	}
	return bits / window.Seconds(), n
}

// TestLabTBFRateIsMet checks the lab's ground truth: a blast at twice a
// 50 Mbit/s shape arrives at 50 Mbit/s of Ethernet frames, with plain
// datagrams and with UDP GSO super-packets, and tbf's own counters agree
// with the receiver. It is timing-bound (the blast must reach twice the
// shape, and arrivals are timed in user space), so it runs in `make lab`,
// with one retry; the tolerance is the shape's.
func TestLabTBFRateIsMet(t *testing.T) {
	LabOnly(t)
	const (
		rate    = 50e6
		size    = 1472
		skip    = 250 * time.Millisecond
		window  = time.Second
		tol     = 0.05
		sendFor = skip + window + 250*time.Millisecond
	)
	for _, gso := range []int{1, 16} {
		t.Run(fmt.Sprintf("gso%d", gso), func(t *testing.T) {
			var problems []string
			for attempt := 1; attempt <= 2; attempt++ {
				problems = nil
				problem := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
				l := New(t, Config{Down: Shape{RateBps: rate}})
				srv := listen(t, l, l.ServerNS, l.ServerAddr)
				cli := listen(t, l, l.ClientNS, l.ClientAddr)
				b := blast{id: loadPDUID, size: size, rateBps: 2 * rate, count: 20000, dur: sendFor, gso: gso}
				got, sent := exchange(t, b, srv, cli)
				r, n := steadyRate(got, skip, window)
				t.Logf("run %d: sent %d, received %d; steady %d datagrams, %.2f Mbit/s (shape %.0f, burst %d)",
					attempt, sent, len(got), n, r/1e6, rate/1e6, l.Config().Down.Burst)
				if math.Abs(r-rate) > tol*rate {
					problem("received %.2f Mbit/s of frames, want %.0f ±%.0f%%", r/1e6, rate/1e6, 100*tol)
				}
				st, err := l.QdiscStats(Down)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("tbf: %+v", st)
				// Everything tbf let through arrived, but for a few IPv6
				// MLD reports the kernel sends after link-up.
				if extra := st.Packets - int64(len(got)); extra < 0 || extra > 10 {
					problem("tbf sent %d frames, the receiver got %d datagrams", st.Packets, len(got))
				}
				if st.Drops == 0 {
					problem("tbf dropped nothing: the blast did not exceed the shape")
				}
				if len(problems) == 0 {
					return
				}
				t.Logf("run %d: %s", attempt, strings.Join(problems, "; "))
			}
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

// TestLoss checks random loss: about LossPct of the Load PDUs are dropped,
// one datagram at a time even when they were sent as GSO super-packets,
// every other datagram passes, and the drop counter accounts for each
// missing one.
func TestLoss(t *testing.T) {
	const (
		pct   = 10.0
		count = 5000
		gso   = 32
	)
	l := New(t, Config{Down: Shape{LossPct: pct}})
	srv := listen(t, l, l.ServerNS, l.ServerAddr)
	cli := listen(t, l, l.ClientNS, l.ClientAddr)
	// Bounded by count: the duration is only a backstop, long enough for
	// a busy machine (at 100 Mbit/s the blast takes 0.4 s).
	b := blast{id: loadPDUID, size: 1000, rateBps: 100e6, count: count, dur: 30 * time.Second, gso: gso}
	got, sent := exchange(t, b, srv, cli)
	if sent != count {
		t.Fatalf("sent %d of %d", sent, count)
	}
	// Binomial: mean 4500, sd 21; the band is about ±7 sd.
	if lo, hi := 4350, 4650; len(got) < lo || len(got) > hi {
		t.Errorf("received %d of %d at %v%% loss, want %d..%d", len(got), count, pct, lo, hi)
	}
	dropped, _, err := l.LossDropped(Down)
	if err != nil {
		t.Fatal(err)
	}
	if int(dropped)+len(got) != count {
		t.Errorf("received %d + dropped by the rule %d != sent %d: loss elsewhere", len(got), dropped, count)
	}
	// Losses come one datagram at a time: the mean run of consecutive lost
	// sequence numbers is 1/(1-p) = 1.11, where whole super-packets would
	// make it about gso.
	seen := make([]bool, count)
	for _, a := range got {
		if a.seq < count {
			seen[a.seq] = true
		}
	}
	runs, lost := 0, 0
	for i, ok := range seen {
		if !ok {
			lost++
			if i == 0 || seen[i-1] {
				runs++
			}
		}
	}
	if runs == 0 || float64(lost)/float64(runs) > 1.5 {
		t.Errorf("%d lost in %d runs: drops are not per datagram", lost, runs)
	}
	t.Logf("received %d, dropped %d, %d runs", len(got), dropped, runs)

	// Datagrams that are not Load PDUs are never dropped by the default
	// scope...
	other := blast{id: statusID, size: 200, rateBps: 10e6, count: 500, dur: 3 * time.Second}
	if got, _ := exchange(t, other, srv, cli); len(got) != other.count {
		t.Errorf("%d of %d non-Load datagrams arrived", len(got), other.count)
	}
	// ... but by LossAllUDP; Shape also resets the counter.
	if err := l.Shape(Down, Shape{LossPct: 100, LossScope: LossAllUDP}); err != nil {
		t.Fatal(err)
	}
	other.count = 50
	if got, _ := exchange(t, other, srv, cli); len(got) != 0 {
		t.Errorf("%d datagrams arrived at 100%% loss", len(got))
	}
	if dropped, _, err := l.LossDropped(Down); err != nil || dropped != int64(other.count) {
		t.Errorf("LossDropped = %d, %v; want %d", dropped, err, other.count)
	}
	// Removing loss removes the table.
	if err := l.Shape(Down, Shape{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := exchange(t, other, srv, cli); len(got) != other.count {
		t.Errorf("%d of %d arrived after loss was removed", len(got), other.count)
	}
}

// TestShapeChanges replaces and removes tbf on a running lab.
func TestShapeChanges(t *testing.T) {
	l := New(t, Config{})
	if st, err := l.QdiscStats(Up); err != nil || st.Kind == "tbf" {
		t.Fatalf("unshaped lab: %+v, %v", st, err)
	}
	for _, rate := range []int64{20e6, 200e6} {
		if err := l.Shape(Up, Shape{RateBps: rate}); err != nil {
			t.Fatal(err)
		}
		out, err := l.Command(l.RouterNS, "tc", "-j", "qdisc", "show", "dev", routerServerDev).Output()
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`"rate":%d`, rate/8); !containsStr(string(out), want) {
			t.Errorf("after Shape(%d): %s, want %s", rate, out, want)
		}
	}
	if err := l.Shape(Up, Shape{}); err != nil {
		t.Fatal(err)
	}
	if st, err := l.QdiscStats(Up); err != nil || st.Kind == "tbf" {
		t.Errorf("after removing the shape: %+v, %v", st, err)
	}
	if err := l.Shape(Up, Shape{RateBps: 10e6, Burst: 100}); err == nil {
		t.Error("Shape accepted a burst smaller than a frame")
	}
	if got := l.Config().Up; got != (Shape{}) {
		t.Errorf("a rejected Shape changed the config to %+v", got)
	}
}
