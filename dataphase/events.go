package dataphase

// EventKind says what an Event reports.
type EventKind uint8

const (
	// EvSubInterval: a Sub-Interval of this Test Connection completed and
	// is to be reported (client: always; server: for its log).
	EvSubInterval EventKind = iota + 1
	// EvWarning: a warning with an OB-UDPST ErrorStatus code (1..49) and
	// its message, at most MaxWarnings per Test Connection.
	EvWarning
	// EvMinimum: the minimum one-way delay or RTT changed (OB-UDPST's
	// verbose "Minimum One-Way Delay" line).
	EvMinimum
	// EvTrial: one Trial Interval's values, sent or received in a Status
	// PDU (OB-UDPST's debug lines), and on the server the new row.
	EvTrial
	// EvEnd: the Data Phase is over; End says how. It is the last event.
	EvEnd
)

// EndReason says how a Test Connection's Data Phase ended.
type EndReason uint8

const (
	EndStopped   EndReason = iota + 1 // the stop handshake completed (success)
	EndWatchdog                       // no valid PDU for 3 s
	EndLocalStop                      // Stop was called (interrupt, shutdown), the stop handshake done or given up
	EndOverRate                       // the server stopped a Load Sender above 1.5x its rate
	EndFailure                        // a socket failure the executor reported
	// EndPeerStop: a server's peer sent a stop before the end time (the
	// client's interrupt, its own safety stop, or a forged stop).
	EndPeerStop
	// EndPeerGone: ICMP port unreachable kept coming back for what we
	// sent (RefusedLimit in a row, no valid PDU in between): nothing
	// listens at the peer's address and port any more.
	EndPeerGone
	// EndUnverified: a server's peer never showed that it receives what
	// the server sends it (amplification.go): a forged activation, most
	// likely, or a path that loses everything towards the peer.
	EndUnverified

	NumEndReasons // one more than the last EndReason: arrays by reason have this length
)

// Name is the reason as a short snake_case word, for counters' labels.
func (r EndReason) Name() string {
	switch r {
	case EndStopped:
		return "stopped"
	case EndWatchdog:
		return "watchdog"
	case EndLocalStop:
		return "local_stop"
	case EndOverRate:
		return "over_rate"
	case EndFailure:
		return "failure"
	case EndPeerStop:
		return "peer_stop"
	case EndPeerGone:
		return "peer_gone"
	case EndUnverified:
		return "unverified"
	}
	return "unknown"
}

func (r EndReason) String() string {
	switch r {
	case EndStopped:
		return "end time reached"
	case EndWatchdog:
		return "no traffic for 3 s"
	case EndLocalStop:
		return "stopped locally"
	case EndOverRate:
		return "load sender above 1.5x its assigned rate"
	case EndFailure:
		return "socket failure"
	case EndPeerStop:
		return "stopped by the peer before the end time"
	case EndPeerGone:
		return "peer port unreachable"
	case EndUnverified:
		return "peer never confirmed receipt"
	}
	return "unknown"
}

// SubIntervalResult is one completed Sub-Interval of a Test Connection with
// what package report needs to compute its figures.
type SubIntervalResult struct {
	Seq     uint32 // Sub-Interval number, from 1
	Stats   SubIntervalStats
	CECount uint32

	// Connection-wide values at the time of the Sub-Interval.
	ClockDeltaMin int32  // ms; meaningful once ClockDeltaSet
	ClockDeltaSet bool   // a Load PDU was received in order (downstream) / reported (upstream)
	RTTMinimum    uint32 // ms, NoDelay if none
	// RTT variation samples accumulated by this end since the previous
	// Sub-Interval (downstream: every sample; upstream: the last sample of
	// each Trial Interval, from the server's Status PDUs).
	RTTSum uint32
	RTTCnt uint32
	// Bleached: a Not-ECT Load PDU arrived while ECN reporting was on.
	Bleached bool

	// The Load Sender's own view of this Sub-Interval (ours, not OB-UDPST's):
	// Bursts skipped because they fell more than the catch-up budget
	// behind, and datagrams the kernel refused and that were never sent.
	SkippedBursts   uint32
	SkippedDgrams   uint32
	WithheldDgrams  uint32
	SenderPlanned   uint64 // datagrams the Send Plans called for
	SenderDelivered uint64 // datagrams the kernel accepted
	// SendRate is the sending rate row the Load Sender was at when the
	// result arrived (an upstream client: the row the server's Status PDU
	// carrying it assigned), for plots of the search; SendRateSet is false
	// where this end does not send the load (a downstream client, which
	// never learns the server's rows).
	SendRate    SendingRate
	SendRateSet bool

	// IP fragmentation (ours, not OB-UDPST's, never on the wire; see
	// frag.go): the IP packets beyond one per datagram that the path MTU
	// made of this Sub-Interval's received datagrams, and the IP header
	// bytes they added. The Load Receiver counts them; an upstream client
	// (the Load Sender) estimates them from what it sent (FragEstimated).
	// Zero without Params.PathMTU or when no datagram was fragmented.
	ExtraPackets uint32
	ExtraIPBytes uint64
	// Fine is the Sub-Interval's delay variation to the µs (ours; the
	// Load Receiver's only, finedelay.go).
	Fine          FineDelays
	FragEstimated bool
	// FineMin are the test's minima so far to the µs (ours; the Load
	// Receiver's only, finedelay.go), beside ClockDeltaMin and RTTMinimum.
	FineMin FineMinima

	Wall int64 // wall clock (ns) when the result was produced
}

// L3Mbps is the Sub-Interval's received rate at the IP layer, as OB-UDPST's
// client computes its IncrementalResult: each datagram's payload plus hdr
// bytes of IP and UDP header (and the IP headers fragmentation added), over
// the measured time.
func (r *SubIntervalResult) L3Mbps(hdr uint64) float64 {
	st := &r.Stats
	if st.DeltaTime == 0 {
		return 0
	}
	return float64((st.RxBytes+uint64(st.RxDatagrams)*hdr+r.ExtraIPBytes)*8) / float64(st.DeltaTime)
}

// TrialInfo is one Trial Interval's values (debug output).
type TrialInfo struct {
	Loss, Ooo, Dup, CE uint32
	DelayVarMin        uint32
	DelayVarAvg        uint32
	DelayVarMax        uint32
	RTTVarSample       uint32 // NoDelay: none
	Datagrams, Bytes   uint32
	DeltaTimeUs        uint32
	Index              int // the server's row after adjustment, -1 on a client
	Sent               bool
	// SendRate is the Load Sender's row after the Status PDU (a client's
	// upstream: the row the server just assigned), for a progress line;
	// SendRateSet is false where this end receives the load.
	SendRate    SendingRate
	SendRateSet bool
}

// L3Mbps is the Trial Interval's received rate at L3 (UDP payload plus
// the UDP and IP headers), 0 without a duration.
func (t *TrialInfo) L3Mbps(ipv6 bool) float64 {
	if t.DeltaTimeUs == 0 {
		return 0
	}
	return float64((uint64(t.Datagrams)*uint64(L3Overhead(ipv6))+uint64(t.Bytes))*8) / float64(t.DeltaTimeUs)
}

// Event is what a core reports to its executor. Events are rare (a few per
// second), so they may carry strings.
type Event struct {
	Kind   EventKind
	Code   uint8  // EvWarning: the ErrorStatus code
	Text   string // EvWarning: the message, without the "[Server ...]" suffix
	SubInt SubIntervalResult
	Trial  TrialInfo
	// EvMinimum
	ClockDeltaMin int32
	RTTMinimum    uint32
	// EvEnd
	End EndReason
	// EvTrial and EvEnd: what was counted since the previous such event
	// (counters.go); adding them up gives the totals.
	Counts Counts
}
