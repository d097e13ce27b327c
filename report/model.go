package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/buildinfo"
)

// Format is the client's output format (-f).
type Format int

const (
	FormatText          Format = iota // OB-UDPST's default text lines
	FormatJSON                        // compact JSON
	FormatJSONBrief                   // compact JSON without the static header and Input
	FormatJSONFormatted               // cJSON-style indented JSON
)

// ParseFormat reads a -f value the way OB-UDPST does (case-insensitive);
// "" and "text" select text.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "", "text":
		return FormatText, nil
	case "json":
		return FormatJSON, nil
	case "jsonb":
		return FormatJSONBrief, nil
	case "jsonf":
		return FormatJSONFormatted, nil
	}
	return FormatText, fmt.Errorf("'%s' is not a valid output format", s)
}

// IsJSON reports whether f is one of the JSON formats.
func (f Format) IsJSON() bool { return f != FormatText }

// Options are the output options of a run and the connection counts the
// ErrorStatus and aggregation rules need before any Test Connection is up.
type Options struct {
	Format    Format
	NoSubInt  bool // -s: no Sub-Interval lines, no IncrementalResult
	LossRatio bool // -r: "LossRatio: x.xxE+yy" instead of "Delivered(%)" (text only)
	// Verbose (-v, text only) adds OB-UDPST's "[i]" prefixes ([0] = the
	// aggregate, [conn+1] = a Test Connection) and the per-connection
	// Sub-Interval lines.
	Verbose bool
	// Extensions adds udpstp's own figures to the JSON document under
	// ExtensionKey (json.go). Without it the document has exactly
	// OB-UDPST 9.0.0's keys, order and types, so that a parser holding it
	// to OB-UDPST's schema accepts it (the package doc).
	Extensions bool

	// Connections is the number of Test Connections set up (setup requests
	// sent): the initial active count (see the package doc).
	Connections int
	// MinConnections is -C min: fewer active connections end the run with
	// ErrorStatus 200 (see CheckMinConnections).
	MinConnections int

	// Mode, when set, adds OB-UDPST's "Mode:" line to the banner: the
	// client's payload sizes and socket path.
	Mode *Mode

	// InterfaceRate, with TestInfo.Interface set (-E), returns the local
	// interface's rate in Mbps since its previous call, OB-UDPST's
	// "[x.xx]" figure and InterfaceEthMbps; it is called once per
	// aggregate Sub-Interval, with the Collector's lock held.
	InterfaceRate func() float64

	// OnInterval, if set, is called with each Sub-Interval of a Test
	// Connection as it is merged and each aggregate Sub-Interval as it is
	// emitted, also with -s (NoSubInt), in that order, with the
	// Collector's lock held: it must return promptly and must not call
	// the Collector.
	OnInterval func(Interval)

	// Now is the wall clock for BOMTime, EOMTime and aggregates produced
	// without a result (connection end, Finish); nil selects time.Now.
	Now func() time.Time
}

// Host is one server argument of the client.
type Host struct {
	Name        string // as typed on the command line
	Addr        string // resolved address
	ControlPort int
}

// TestInfo is what the test header lines and the JSON "Input" object show:
// the parameters of the first Test Connection whose activation succeeded,
// as the server accepted them (after its coercion), plus the client's
// command-line settings OB-UDPST reports.
//
// Its values apply to every connection: the IPv6 overhead in the rates and
// the NumberTestSubIntervals cap (OB-UDPST uses each connection's own, which
// differ only with mixed-family host lists or servers coercing differently).
// Interface and InterfaceMax are the client's -E and -M: the local
// interface whose rate (Options.InterfaceRate) the aggregate figures show
// next to their own, and whether it, not the test traffic, picks the
// maximum.
type TestInfo struct {
	Upstream       bool
	TestIntTime    int    // s (accepted)
	SubIntPeriod   int    // ms
	TrialInt       int    // ms
	LowThresh      int    // ms
	UpperThresh    int    // ms
	UseOWD         bool   // -o: OWD instead of RTT for the rate algorithm
	IgnoreOooDup   bool   // not -R
	RandomPayload  bool   // as accepted by the server
	MCIdent        int    // multi-connection ID
	SRIndex        uint16 // fixed or starting row; dataphase.AutoRateIndex for <Auto>
	SRStart        bool   // -I @n: SRIndex is a starting row
	SlowAdjThresh  int
	HighSpeedDelta int
	SeqErrThresh   int
	Algorithm      uint8 // dataphase.AlgorithmB or dataphase.AlgorithmC
	ConnMin        int   // -C min
	ConnMax        int   // -C max (the "Conn:" of the header)
	DSCPECN        int   // the DSCP+ECN byte
	CEThresh       int   // 0: ECN reporting off
	Jumbo          bool  // jumbo sizes permitted (no -j)
	TraditionalMTU bool  // -T
	// IPv6: the Test Connections run over IPv6 (payload sizes minus 20,
	// 20 more overhead bytes per datagram in every rate).
	IPv6         bool
	Family       dataphase.Family // -4 / -6 / neither
	Hosts        []Host           // every server argument, in command-line order
	ServerPort   int              // the server's test port of this connection
	ClientAddr   string
	ClientPort   int
	MaxBandwidth int    // -B, Mbps (total)
	Bimodal      int    // -i count: Sub-Intervals of the first mode, 0 = none
	SuppCount    int    // -i -count: the count when rate adjustment is suppressed, else 0
	Interface    string // -E: the local interface's name, "" for none
	InterfaceMax bool   // -M: the interface's rate picks the maximum
}

// subIntervals is NumberTestSubIntervals: the most Sub-Intervals a Test
// Connection reports.
func (t *TestInfo) subIntervals() int {
	if t.SubIntPeriod <= 0 {
		return 0
	}
	return t.TestIntTime * 1000 / t.SubIntPeriod
}

func (t *TestInfo) direction() string {
	if t.Upstream {
		return "Upstream"
	}
	return "Downstream"
}

func (t *TestInfo) auto() bool { return t.SRIndex == dataphase.AutoRateIndex }

// Overheads per datagram, as OB-UDPST 9.0.0 counts them (the package doc);
// IPv6 adds ipv6Extra to each.
const (
	overheadL3 = 28
	overheadL2 = 42
	overheadL1 = 46
	overheadL0 = 50 // L1 with a VLAN tag
	ipv6Extra  = 20
	// Link overheads per IP packet beyond L3 (the differences above):
	// Ethernet header, plus FCS, plus a VLAN tag.
	linkL2 = overheadL2 - overheadL3
	linkL1 = overheadL1 - overheadL3
	linkL0 = overheadL0 - overheadL3

	minPayload       = 52
	defaultPayload   = 1222
	tradPayload      = 1472
	jumboPayload     = 8972
	maxConnections   = 24
	maxIncremental   = 36000 // 3600 s / 100 ms
	highSpeedRow     = 1000
	obudpstVersion   = "9.0.0" // the OB-UDPST version whose formats we produce
	protocolVersion  = 20
	metricsSupported = "IPLR,Sampled_RTT,IPDV,IPRR,RIPR"
	warnNoTrafficMs  = 1000
	timeoutNoTraffic = 3000
)

// softwareVersion is what OB-UDPST calls SOFTWARE_VER, for the JSON, the
// server statistics and the banner: OB-UDPST's version with udpstp's own
// added ("9.0.0+udpstp.v1.2.3", see buildinfo.SoftwareVersion).
func softwareVersion() string {
	return buildinfo.SoftwareVersion(obudpstVersion, buildinfo.Get().Version)
}

// The result records below hold the values exactly as OB-UDPST puts them in
// its JSON (delays in seconds, ratios as fractions); the text lines are
// formatted from the integer records they were computed from.

// quality is what a Sub-Interval, a Summary and a Maximum have in common.
type quality struct {
	Delivered, LossRatio, ReorderedRatio, ReplicatedRatio, CEPercent float64
	Loss, Ooo, Dup, CE                                               uint32
	PDVMin, PDVAvg, PDVMax, PDVRange                                 float64
	RTTMin, RTTAvg, RTTMax, RTTRange                                 float64
}

// intervalResult is one element of "IncrementalResult".
type intervalResult struct {
	Interval  int
	Seconds   float64
	Wall      int64
	Active    int
	Q         quality
	Capacity  float64
	Intf      float64 // InterfaceEthMbps (-E)
	MinOneway float64
}

// summaryResult is "Summary" or an element of "ModalSummary".
type summaryResult struct {
	Mode, Intervals, Active int
	Q                       quality
	Capacity, Intf          float64
	MinOneway, MinRTT       float64
}

// maxResult is "AtMax" or an element of "ModalResult".
type maxResult struct {
	Mode, Intervals int
	Wall            int64
	Active          int
	Q               quality
	Capacity, Intf  float64
	L2, L1, L0      float64
	MinOneway       float64
}

// skipFigures are our Load Sender's own counts (not OB-UDPST's).
type skipFigures struct {
	Bursts, Dgrams, Withheld uint64
	Planned, Delivered       uint64
}

func (s *skipFigures) add(r *dataphase.SubIntervalResult) {
	s.Bursts += uint64(r.SkippedBursts)
	s.Dgrams += uint64(r.SkippedDgrams)
	s.Withheld += uint64(r.WithheldDgrams)
	s.Planned += r.SenderPlanned
	s.Delivered += r.SenderDelivered
}

// sum adds the figures of o.
func (s *skipFigures) sum(o *skipFigures) {
	s.Bursts += o.Bursts
	s.Dgrams += o.Dgrams
	s.Withheld += o.Withheld
	s.Planned += o.Planned
	s.Delivered += o.Delivered
}

func (s *skipFigures) any() bool { return s.Bursts != 0 || s.Dgrams != 0 || s.Withheld != 0 }

// percentOfPlan is the share of planned datagrams that were skipped.
func (s *skipFigures) percentOfPlan() float64 {
	if s.Planned == 0 {
		return 0
	}
	return float64(s.Dgrams) * 100 / float64(s.Planned)
}

// skipInterval is one aggregate Sub-Interval in which the sender skipped.
type skipInterval struct {
	Interval int
	F        skipFigures
}

// results is the whole JSON document's content. Everything Finish writes
// comes from here, so that the document can also be rebuilt from a parsed
// OB-UDPST output (the golden layout test does that).
type results struct {
	info      *TestInfo // nil: no Test Connection was activated
	bom       int64
	intervals []intervalResult
	// complete: Summary and Maximum were produced (at least one
	// Sub-Interval, no minimum-connections failure).
	complete bool
	summary  []summaryResult // 1, or 2 when bimodal
	max      []maxResult
	// modalKeys: ModalSummary, ModalResult and ECNBleachingDetected are
	// present; OB-UDPST leaves all three out when the bimodal count is >=
	// the number of Sub-Intervals produced.
	modalKeys bool
	bleached  bool
	eom       int64
	status    int
	msg, msg2 string
	skips     skipFigures
	skipList  []skipInterval
	fine      []fineInterval // ours, to the µs (fine.go)
	// fineMin are the test's minima to the µs (ours, fine.go), where the
	// Load Receiver measured them.
	fineMin dataphase.FineMinima
	// conns are the per-connection figures (conns.go), by 0-based
	// connection index; rows indexes the Sending Rate Table to name rows.
	conns map[int]*connSeries
	rows  map[dataphase.SendingRate]int
	// stillRising: the search was still rising at the end (rising.go).
	stillRising bool
	// groupWindow is the widest grouping window the executor's Engine
	// Threads used over the test (SetGroupingWindow); 0: none.
	groupWindow time.Duration
	// selection: a failover search's round trips (selection.go).
	selection *Selection
	// reasmFails is the host's IP reassembly failures over a Load
	// Receiver's test (SetReassemblyFailures); 0: none or not known.
	reasmFails int64
}
