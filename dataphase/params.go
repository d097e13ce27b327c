package dataphase

import "time"

// Params are the negotiated parameters of one Test Connection's Data Phase:
// what the Test Activation Response said, plus the local settings that never
// travel. The Control Phase fills them; the core only reads them.
type Params struct {
	Server   bool // this end is the server (it runs the rate adjustment)
	Upstream bool // the client sends load
	Legacy   bool // protocol 8..19: 168-byte (156 before 10) Status PDUs, no auth/ECN area
	// Proto is the peer's protocol version when it is older than 11
	// (statuspdu_legacy.go); 0 means "11 when Legacy, else 20".
	Proto uint16
	IPv6  bool // a real IPv6 peer (not IPv4-mapped): payload sizes minus 20

	TestIntTime  time.Duration // test duration (TA testIntTime)
	TrialInt     time.Duration // Status PDU period (TA trialInt)
	SubIntPeriod time.Duration // Sub-Interval period

	LowThresh      uint32 // ms
	UpperThresh    uint32 // ms
	SeqErrThresh   uint32
	SlowAdjThresh  uint32
	HighSpeedDelta uint32
	IgnoreOooDup   bool
	UseOwDelVar    bool
	Algorithm      uint8  // 0 = B, 1 = C (AlgorithmB, AlgorithmC)
	SRIndexConf    uint16 // fixed or starting row, AutoRateIndex for the search
	StartIndex     bool   // SRIndexConf is a starting row (-I @n)
	SRAdjSuppCount uint32 // Sub-Intervals with rate adjustment suppressed (-i -n)
	ECNCEThresh    uint8  // 0: ECN reporting off
	RandomPayload  bool
	AuthMode       uint8 // echoed at offset 163 of our Status PDUs

	// Table is the server's sending rate table (unused by a client, which
	// sends the rows the server gives it).
	Table []SendingRate
	// InitialRate is the upstream client's first row, from the TA Response.
	InitialRate SendingRate
	// Bound is a client's own bound on the rate (ratebound.go); zero: none.
	// Unused by a server.
	Bound RateBound

	// NoSeqRollback (-n): datagrams the kernel refuses consume their
	// sequence numbers (they show as loss at the peer) instead of being
	// deferred and sent with the same numbers.
	NoSeqRollback bool
	// CatchUpBudget: a Burst due longer ago than this is a Skipped Burst.
	// 0 selects DefaultCatchUpBudget.
	CatchUpBudget time.Duration
	// PoliceOverRate: the server stops a Load Sender that runs above 1.5x
	// its assigned rate for 3 Trial Intervals.
	PoliceOverRate bool
	// MaxSubIntervals caps the Sub-Intervals reported (OB-UDPST:
	// testIntTime*1000/P). 0: derive it.
	MaxSubIntervals uint32
	// PathMTU is the path MTU of the Test Connection's socket (IP_MTU or
	// IPV6_MTU after connect), for the IP fragmentation figures of the
	// Sub-Interval results (see frag.go); 0 (unknown) counts no
	// fragmentation, as OB-UDPST does.
	PathMTU int

	// PeerBytesIn and PeerBytesOut are the UDP payload bytes the server's
	// Control Phase received from the peer (the Test Activation Request,
	// and the Setup Request when it came from the same address) and sent
	// to it (the Test Activation Response, and the Setup Response and Null
	// Request then) before the Data Phase: the start of the
	// anti-amplification budget of a server (amplification.go). A server
	// core told nothing sends nothing until the peer sends to it. Unused
	// by a client.
	PeerBytesIn, PeerBytesOut int

	// Seed seeds the core's random numbers (start offsets, random sizes).
	Seed uint64
}

// Rate adjustment algorithms (the Test Activation's rateAdjAlgo, the
// report's "Algo:"): B is RFC 9097's and OB-UDPST's default, C is
// OB-UDPST's "multiply and retry" (ratecontrol.go).
const (
	AlgorithmB uint8 = 0
	AlgorithmC uint8 = 1
)

// Family restricts the address family of a test's sockets (-4, -6), as the
// Control Phase opens them and the report names it.
type Family int

const (
	FamilyAny Family = 0
	FamilyV4  Family = 4
	FamilyV6  Family = 6
)

// Timing constants of OB-UDPST 9.0.0: its warning, watchdog and stop
// timers, which the Data Phase keeps for interop (the package doc's state
// machine).
const (
	WarnNoTraffic        = 1 * time.Second // rxStopped and the traffic-stopped warning
	Watchdog             = 3 * time.Second // no valid PDU: the Test Connection ends
	ServerStopExtra      = 500 * time.Millisecond
	ClientStopExtra      = 3500 * time.Millisecond // client safety stop after testIntTime
	StartOffsetMin       = 5 * time.Millisecond    // a transmitter's first Burst, drawn uniformly
	StartOffsetMax       = 50 * time.Millisecond
	DefaultCatchUpBudget = 1 * time.Millisecond
	MaxWarnings          = 10 // warnings per Test Connection, all kinds together
)

// proto is the protocol version whose PDU layouts the Test Connection uses.
func (p *Params) proto() uint16 {
	switch {
	case p.Proto != 0:
		return p.Proto
	case p.Legacy:
		return ChecksumProtoMin
	}
	return 20
}
