package netlab

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// The relay's own baseline: what a raw sender gets through it, so that a
// capacity test knows where the relay, not the method, would be the limit.

// BaselinePayload is the UDP payload of the baseline's datagrams: a Load
// PDU's below 1 Gbit/s with default options (1250-byte IP packets), so
// the relay handles them exactly as it handles a test's.
const BaselinePayload = 1222

// baselineFrame is what tbf would meter per baseline datagram (IPv4).
const baselineFrame = BaselinePayload + 8 + 20 + EthHeader

// sinkPort is where the baseline's datagrams go: the server namespace
// counts and drops them at its input hook (sinkTable), so no socket or
// receiver process limits what is measured.
const (
	sinkPort    = 9
	sinkTable   = "udpstp_sink"
	sinkCounter = "got"
)

// BaselineRow is one point of RelayBaseline.
type BaselineRow struct {
	RateBps int64         // offered rate, metered as tbf meters it (Ethernet frames without FCS)
	Delay   time.Duration // the relay's one-way delay on the way
	Elapsed time.Duration // how long the sender took
	Sent    int64         // datagrams the sender's kernel accepted
	Got     int64         // datagrams that reached the server namespace
	Relay   RelayStats    // the relay's counters for the direction
	Links   int64         // frames the veths dropped
	Stall   time.Duration // the machine's longest stall meanwhile (see stallWatch)
}

// SentBps is the rate the sender achieved, metered as RateBps.
func (r BaselineRow) SentBps() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Sent) * 8 * baselineFrame / r.Elapsed.Seconds()
}

// Clean reports whether the relay carried the row: everything sent
// arrived, the relay kept up (RelayStats.Kept), and the sender kept within
// 2 % of the offered rate (a sender the machine held back offered less
// than the row says).
func (r BaselineRow) Clean() bool {
	return r.Sent > 0 && r.Got == r.Sent && r.Relay.Kept() && r.Links == 0 &&
		r.SentBps() >= 0.98*float64(r.RateBps)
}

// stallPeriod is how often a stall watcher wakes: a stall of the machine
// of d shows as a wake-up at least d-stallPeriod late.
const stallPeriod = time.Millisecond

// MachineStalled reports whether the machine itself stopped long enough
// during the row for a packet to slip (see stallWatch): then a relay that
// did not keep up measured the machine, not the relay.
func (r BaselineRow) MachineStalled() bool { return r.Stall >= RelaySlip-stallPeriod }

// verdict says whether the row was carried, or what fell short.
func (r BaselineRow) verdict() string {
	var why []string
	if r.Sent == 0 {
		why = append(why, "nothing sent")
	}
	if !r.Relay.Kept() {
		why = append(why, "relay did not keep up")
	}
	if r.Got != r.Sent-r.Relay.OwnDrops() || r.Links > 0 {
		why = append(why, "lost outside the relay")
	}
	if r.SentBps() < 0.98*float64(r.RateBps) {
		why = append(why, "sender short of the rate")
	}
	if len(why) == 0 && r.Clean() {
		return "carried"
	}
	if r.MachineStalled() {
		why = append(why, fmt.Sprintf("the machine stalled %v", r.Stall.Round(100*time.Microsecond)))
	}
	return "not shown: " + strings.Join(why, ", ")
}

// String is the row of a Markdown table (see BaselineTable).
func (r BaselineRow) String() string {
	verdict := r.verdict()
	return fmt.Sprintf("| %d | %v | %.1f | %d | %d | %.3f | %d | %d | %v | %v | %d | %v | %s |",
		r.RateBps/1e6, 2*r.Delay, r.SentBps()/1e6, r.Sent, r.Got, 100*float64(r.Sent-r.Got)/float64(max(r.Sent, 1)),
		r.Relay.OwnDrops(), r.Relay.MaxQueued, r.Relay.LateMean.Round(time.Microsecond), r.Relay.LateMax.Round(time.Microsecond), r.Relay.LateSlips,
		r.Stall.Round(100*time.Microsecond), verdict)
}

// BaselineTable formats rows as a Markdown table.
func BaselineTable(rows []BaselineRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| offered Mbit/s (L2) | RTT | sent Mbit/s | sent | arrived | lost %% | relay's own drops | max queued | late mean | late max | ≥ %v late | machine's longest stall | |\n", RelaySlip)
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		b.WriteString(r.String() + "\n")
	}
	return b.String()
}

// RelayBaseline measures, for every delay and rate, what a raw bursty
// sender gets through the relay: in a fresh lab with nothing but the
// relay's delay (half the RTT each way, no tbf, no loss), the client
// sends BaselinePayload-byte datagrams in Bursts every millisecond, as a
// Load Sender does, for dur, to a sink that counts them in the server
// namespace. It needs a lab here (root, /dev/net/tun, nftables).
func RelayBaseline(rates []int64, rtts []time.Duration, dur time.Duration) ([]BaselineRow, error) {
	if err := AvailableFor(Config{Relay: true}); err != nil {
		return nil, err
	}
	if err := nftAvailable(); err != nil {
		return nil, err
	}
	var rows []BaselineRow
	for _, rtt := range rtts {
		for _, rate := range rates {
			r, err := baselinePoint(rate, rtt/2, dur)
			if err != nil {
				return rows, fmt.Errorf("netlab: baseline at %d bit/s, RTT %v: %w", rate, rtt, err)
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// HighestCarried returns the highest rate that rows show the relay carried
// cleanly at every delay measured for it (0 if none).
func HighestCarried(rows []BaselineRow) int64 {
	ok := map[int64]bool{}
	for _, r := range rows {
		if c, seen := ok[r.RateBps]; !seen || c {
			ok[r.RateBps] = r.Clean()
		}
	}
	var best int64
	for rate, c := range ok {
		if c && rate > best {
			best = rate
		}
	}
	return best
}

// baselinePoint measures one rate and one-way delay.
func baselinePoint(rate int64, delay time.Duration, dur time.Duration) (row BaselineRow, err error) {
	row = BaselineRow{RateBps: rate, Delay: delay}
	d := Impairment{Delay: delay}
	l, err := Build(Config{Relay: true, Up: Shape{Relay: d}, Down: Shape{Relay: d}})
	if err != nil {
		return row, err
	}
	defer l.Close()
	if err := l.addSink(); err != nil {
		return row, err
	}
	// Watched from the first datagram to the last one's release.
	watch := watchStalls()
	defer func() { row.Stall = watch.stop() }()
	start := time.Now()
	row.Sent, err = l.blastBursts(netip.AddrPortFrom(l.ServerAddr, sinkPort), rate, dur)
	row.Elapsed = time.Since(start)
	if err != nil {
		return row, err
	}
	// What is still in the delay line (or the kernel's queues) arrives
	// within the delay; wait for it, bounded.
	deadline := time.Now().Add(2*delay + 2*time.Second)
	for {
		row.Got, _, err = l.nftCounter(l.ServerNS, sinkTable, sinkCounter)
		if err != nil {
			return row, err
		}
		s, err := l.RelayStats(Up)
		if err != nil {
			return row, err
		}
		row.Relay = s
		if (row.Got >= row.Sent-s.OwnDrops() && s.Queued == 0) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	row.Links, err = l.LinkDrops()
	return row, err
}

// addSink makes the server namespace count and drop UDP datagrams to
// sinkPort at its input hook.
func (l *Lab) addSink() error {
	script := fmt.Sprintf(`table inet %[1]s {
	counter %[2]s { }
	chain input {
		type filter hook input priority -300; policy accept;
		udp dport %[3]d counter name %[2]s drop
	}
}
`, sinkTable, sinkCounter, sinkPort)
	_, err := run([]byte(script), l.tools.ip, "netns", "exec", l.ServerNS, l.tools.nft, "-f", "-")
	return err
}
