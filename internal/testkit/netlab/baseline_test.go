//go:build linux

package netlab

import (
	"strings"
	"testing"
	"time"
)

// TestRelayBaseline measures the relay's own baseline (RelayBaseline) and
// logs its table: what a bursty raw sender gets through the relay at 50,
// 200, 500 and 1000 Mbit/s, without delay and at RTT 100 ms. It measures
// the machine, so it runs in `make lab`; there the relay must carry 50
// and 200 Mbit/s cleanly at both delays, the rates every capacity case
// with delay uses.
func TestRelayBaseline(t *testing.T) {
	LabOnly(t)
	if err := AvailableFor(Config{Relay: true, NAT: Masquerade}); err != nil {
		t.Skip(err)
	}
	rows, err := RelayBaseline([]int64{50e6, 200e6, 500e6, 1000e6}, []time.Duration{0, 100 * time.Millisecond}, 2*time.Second)
	t.Logf("relay baseline (2 s per row, %d-byte payloads in 1 ms Bursts):\n%s", BaselinePayload, BaselineTable(rows))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("highest rate carried cleanly at every delay: %d Mbit/s", HighestCarried(rows)/1e6)
	for _, r := range rows {
		if r.RateBps > 200e6 || r.Clean() {
			continue
		}
		judgeBaselineRow(t, r)
	}
}

// judgeBaselineRow measures a row that missed again, as every lab case is
// (see remeasure), and fails t if the relay missed it twice.
func judgeBaselineRow(t *testing.T, r BaselineRow) {
	t.Helper()
	tries, own, err := remeasure(r, func() (BaselineRow, error) {
		again, err := RelayBaseline([]int64{r.RateBps}, []time.Duration{2 * r.Delay}, 2*time.Second)
		if err != nil {
			return BaselineRow{}, err
		}
		t.Logf("measured once more: %s", again[0])
		return again[0], nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if tries[len(tries)-1].Clean() {
		return
	}
	var all []string
	for _, x := range tries {
		all = append(all, x.String())
	}
	if own >= 2 {
		t.Errorf("the relay did not carry %d Mbit/s at RTT %v, twice while the machine did not stall: %s", r.RateBps/1e6, 2*r.Delay, strings.Join(all, "; "))
		return
	}
	t.Logf("NOT JUDGED: %d Mbit/s at RTT %v: the machine stalled in %d of %d tries: %s", r.RateBps/1e6, 2*r.Delay, len(tries)-own, len(tries), strings.Join(all, "; "))
}

// remeasure measures a row that missed (first) again until one is clean.
// A miss while the machine itself stalled (BaselineRow.MachineStalled:
// this VM's CPUs stop for 5 to 60 ms now and then with nothing else
// running, and a CI run's relay once left packets 124 ms late) says
// nothing of the relay and is measured again, up to maxBaselineTries in
// all; it stops at two misses without a stall (own), which are the
// relay's.
func remeasure(first BaselineRow, measure func() (BaselineRow, error)) (tries []BaselineRow, own int, err error) {
	tries = []BaselineRow{first}
	for {
		last := tries[len(tries)-1]
		if last.Clean() {
			return tries, own, nil
		}
		if !last.MachineStalled() {
			own++
		}
		if own >= 2 || len(tries) == maxBaselineTries {
			return tries, own, nil
		}
		again, err := measure()
		if err != nil {
			return tries, own, err
		}
		tries = append(tries, again)
	}
}

// maxBaselineTries bounds remeasure: 4 rows of 2 s.
const maxBaselineTries = 4

// TestRemeasure: a miss of the relay's own is measured once more, and
// fails twice; a stall of the machine is measured again, up to 4 tries.
func TestRemeasure(t *testing.T) {
	clean := BaselineRow{RateBps: 100e6, Elapsed: time.Second, Sent: 9900, Got: 9900, Relay: RelayStats{Read: 9900}}
	slow := clean
	slow.Relay.LateSlips = 200
	stalled := slow
	stalled.Stall = 40 * time.Millisecond
	for _, c := range []struct {
		name      string
		seq       []BaselineRow // first, then what each measure returns
		tries     int
		own       int
		judgedBad bool
	}{
		{"slow twice", []BaselineRow{slow, slow, clean}, 2, 2, true},
		{"slow then clean", []BaselineRow{slow, clean}, 2, 1, false},
		{"stalls then clean", []BaselineRow{stalled, stalled, stalled, clean}, 4, 0, false},
		{"stall, slow, stall, slow", []BaselineRow{stalled, slow, stalled, slow}, 4, 2, true},
		{"stalled throughout", []BaselineRow{stalled, stalled, stalled, stalled, clean}, 4, 0, false},
		{"slow, then stalled", []BaselineRow{slow, stalled, stalled, stalled, slow}, 4, 1, false},
	} {
		n := 1
		tries, own, err := remeasure(c.seq[0], func() (BaselineRow, error) {
			n++
			return c.seq[n-1], nil
		})
		if err != nil || len(tries) != c.tries || own != c.own || n != c.tries {
			t.Errorf("%s: %d tries (%d measured), %d own misses, %v; want %d tries, %d own", c.name, len(tries), n, own, err, c.tries, c.own)
		}
		if bad := !tries[len(tries)-1].Clean() && own >= 2; bad != c.judgedBad {
			t.Errorf("%s: judged bad %v, want %v", c.name, bad, c.judgedBad)
		}
	}
}
