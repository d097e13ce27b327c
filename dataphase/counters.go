package dataphase

import (
	"fmt"
	"sync/atomic"
)

// Counter names one of the totals a Test Connection's Data Phase keeps:
// its traffic as the Status PDUs report it and what its peer or path got
// wrong, without the cap that limits warnings (OB-UDPST's server
// statistics count them all). It indexes Counts and AtomicCounts, and
// counterInfo gives its name and help text: adding a counter is one
// constant and one line of that table, and it then reaches the server's
// totals, its -G file (counters.data, where OB-UDPST has the key) and
// anything that lists Counters.
//
// The core adds to its counts once per event (a Status PDU, a warning, an
// invalid datagram), never per valid datagram.
type Counter uint8

const (
	// Status PDUs this end sent, and the valid ones it received.
	CountStatusSent Counter = iota
	CountStatusReceived
	// This end's load as the peer's Status PDUs reported receiving it.
	CountTxDatagrams
	CountTxIPBytes
	CountTxLoss
	CountTxOooDup
	// The peer's load as this end's Status PDUs reported receiving it.
	CountRxDatagrams
	CountRxIPBytes
	CountRxLoss
	CountRxOooDup
	// Status PDUs lost: those sent to us (local) and those we sent
	// (remote, as the peer reports); a reordered one counts 65535, as
	// OB-UDPST sums them.
	CountLocalStatusLoss
	CountRemoteStatusLoss
	// "Traffic has completely stopped", here and at the peer.
	CountLocalTrafficStop
	CountRemoteTrafficStop
	// The Load Sender's own view, which no Status PDU carries: Bursts it
	// skipped because they fell more than the catch-up budget behind, the
	// datagrams they held, and datagrams the kernel refused that were
	// never sent (counted once per Sub-Interval).
	CountSkippedBursts
	CountSkippedDatagrams
	CountWithheldDatagrams
	// Invalid Load and Status PDUs, by what failed.
	CountLoadInvalidSize
	CountLoadInvalidFormat
	CountLoadInvalidChecksum
	CountStatusInvalidSize
	CountStatusInvalidFormat
	CountStatusInvalidChecksum
	// ICMP port unreachable errors the socket reported (the executor
	// tells the core, engine.RefusalSink).
	CountPeerRefused
	// Anti-amplification (amplification.go), server only: Load or Status
	// PDUs held back because the budget was spent, and Status PDUs dropped
	// because they reported Load PDUs that were never sent.
	CountAmpHeld
	CountStatusUnproven
	// Server, downstream: Status PDUs that came faster than one per Trial
	// Interval (after a burst) and did not move the rate (status.go,
	// adjustPace).
	CountStatusRateHeld
	// Status or Load PDUs dropped because their figures cannot be true
	// (plausible.go): a client's from its server, and a server's Status
	// PDUs from a downstream client that reports more received than was
	// sent.
	CountImplausible

	NumCounters // the number of Counters, not a Counter
)

// CounterInfo describes a counter for logs, statistics files and metrics.
type CounterInfo struct {
	// Name is snake_case and unique in its table; where OB-UDPST's -G file
	// has the counter, it is that file's key.
	Name string
	// Help says what is counted, in a sentence without a final period.
	Help string
}

var counterInfo = [NumCounters]CounterInfo{
	CountStatusSent:            {"status_sent", "Status PDUs sent"},
	CountStatusReceived:        {"status_received", "Valid Status PDUs received"},
	CountTxDatagrams:           {"tx_datagrams", "Load datagrams sent, as the receiving end reported them"},
	CountTxIPBytes:             {"tx_ip_bytes", "Bytes of the load sent at the IP layer (with IP and UDP headers), as the receiving end reported them"},
	CountTxLoss:                {"tx_loss", "Load datagrams sent that the receiving end reported lost"},
	CountTxOooDup:              {"tx_ooo_dup", "Load datagrams sent that the receiving end reported out of order or duplicated"},
	CountRxDatagrams:           {"rx_datagrams", "Load datagrams received, as this end's Status PDUs reported them"},
	CountRxIPBytes:             {"rx_ip_bytes", "Bytes of the load received at the IP layer (with IP and UDP headers)"},
	CountRxLoss:                {"rx_loss", "Load datagrams lost on the way to this end"},
	CountRxOooDup:              {"rx_ooo_dup", "Load datagrams received out of order or duplicated"},
	CountLocalStatusLoss:       {"local_status_loss", "Status PDUs sent to this end and lost (a reordered one counts 65535)"},
	CountRemoteStatusLoss:      {"remote_status_loss", "Status PDUs this end sent that the peer reported lost (a reordered one counts 65535)"},
	CountLocalTrafficStop:      {"local_traffic_stop", "Times the incoming traffic stopped completely for a second"},
	CountRemoteTrafficStop:     {"remote_traffic_stop", "Times the peer reported its incoming traffic stopped completely"},
	CountSkippedBursts:         {"skipped_bursts", "Bursts this end skipped as Load Sender because they fell more than the catch-up budget behind"},
	CountSkippedDatagrams:      {"skipped_datagrams", "Datagrams of the Bursts this end skipped as Load Sender"},
	CountWithheldDatagrams:     {"withheld_datagrams", "Load datagrams the kernel refused that this end never sent"},
	CountLoadInvalidSize:       {"load_invalid_size", "Load PDUs dropped for their length"},
	CountLoadInvalidFormat:     {"load_invalid_format", "Load PDUs dropped for a field other than the length or checksum"},
	CountLoadInvalidChecksum:   {"load_invalid_checksum", "Load PDUs dropped for their checksum"},
	CountStatusInvalidSize:     {"status_invalid_size", "Status PDUs dropped for their length"},
	CountStatusInvalidFormat:   {"status_invalid_format", "Status PDUs dropped for a field other than the length or checksum"},
	CountStatusInvalidChecksum: {"status_invalid_checksum", "Status PDUs dropped for their checksum"},
	CountPeerRefused:           {"peer_refused", "ICMP port unreachable errors for what this end sent to the peer"},
	CountAmpHeld:               {"amplification_held", "Load or Status PDUs held back before the peer showed it receives, the budget being spent"},
	CountStatusUnproven:        {"status_unproven", "Status PDUs dropped for failing the proof of receipt (sizes or clock)"},
	CountStatusRateHeld:        {"status_rate_held", "Status PDUs that came faster than one per Trial Interval and did not move the rate"},
	CountImplausible:           {"implausible_dropped", "Status or Load PDUs dropped because their figures cannot be true (forged): more received than was sent, numbers ahead of the test time"},
}

// CheckCounterInfo reports the first entry of a counter table whose name
// is not snake_case or is used twice, or whose help text is missing or ends
// with a period: every table of counters is held to it by a test, so a
// metrics exporter can take the names as they are.
func CheckCounterInfo(table []CounterInfo) error {
	seen := make(map[string]int, len(table))
	for i, c := range table {
		ok := c.Name != "" && c.Name[0] >= 'a' && c.Name[0] <= 'z'
		for _, r := range c.Name {
			ok = ok && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
		}
		switch j, dup := seen[c.Name]; {
		case !ok:
			return fmt.Errorf("counter %d: name %q is not snake_case", i, c.Name)
		case dup:
			return fmt.Errorf("counters %d and %d are both %q", j, i, c.Name)
		case c.Help == "" || c.Help[len(c.Help)-1] == '.':
			return fmt.Errorf("counter %q: help %q (want a sentence without a final period)", c.Name, c.Help)
		}
		seen[c.Name] = i
	}
	return nil
}

// Info returns the counter's name and help text.
func (c Counter) Info() CounterInfo { return counterInfo[c] }

func (c Counter) String() string { return counterInfo[c].Name }

// Counts are a Data Phase's counters by Counter: in an Event, what was
// counted since the previous event that carried counts; elsewhere totals
// read at one time.
type Counts [NumCounters]uint64

// Add adds o to n.
func (n *Counts) Add(o *Counts) {
	for i, v := range o {
		n[i] += v
	}
}

// AtomicCounts accumulate Counts from many Data Phases at once (a server's
// totals): any goroutine may add or load.
type AtomicCounts [NumCounters]atomic.Uint64

// Add adds o. It costs one atomic add per counter that is not zero; it
// runs once per event.
func (a *AtomicCounts) Add(o *Counts) {
	for i, v := range o {
		if v != 0 {
			a[i].Add(v)
		}
	}
}

// Load reads the counts, each atomically (the set is not one instant,
// which for statistics does not matter).
func (a *AtomicCounts) Load() Counts {
	var n Counts
	for i := range a {
		n[i] = a[i].Load()
	}
	return n
}
