package control

import (
	"time"

	"github.com/udpstp/udpstp/dataphase"
)

// Defaults and limits of OB-UDPST 9.0.0's options (its `udpst -?`, kept
// in testdata/obudpst/usage.txt);
// the timing limits are the Data Phase's (a client checks a grant against
// them, dataphase.CheckGrant).
const (
	DefaultTestIntTime  = 10 // s
	MinTestIntTime      = dataphase.MinTestIntTime
	MaxTestIntTime      = dataphase.MaxTestIntTime
	DefaultSubIntPeriod = 1000 // ms
	MinSubIntPeriod     = dataphase.MinSubIntPeriod
	MaxSubIntPeriod     = dataphase.MaxSubIntPeriod
	DefaultTrialInt     = 50 // ms
	MinTrialInt         = dataphase.MinTrialInt
	MaxTrialInt         = dataphase.MaxTrialInt
	DefaultLowThresh    = 30 // ms
	DefaultUpperThresh  = 90 // ms
	MaxDelayThresh      = 10000
	DefaultSlowAdj      = 3
	DefaultHSDelta      = 10
	DefaultSeqErrThresh = 10
	DefaultSockBuf      = 1024000
	MaxSockBuf          = 16777216
	MaxConnsPerClient   = 24
	MaxConnsPerServer   = 254
	MaxClientBandwidth  = 32767  // Mbps, client -B
	MaxServerBandwidth  = 100000 // Mbps, server -B
	MaxDSCPECN          = 255
	SetupTimeout        = 3 * time.Second // one timer for Setup and Test Activation
)

// ServerConfig is everything `udpstp server` was told.
type ServerConfig struct {
	BindAddrs []string // local addresses to listen on; empty: every address, IPv4 and IPv6
	Port      int      // control port
	Family    dataphase.Family

	NoJumbo        bool // -j
	TraditionalMTU bool // -T
	MaxBandwidth   int  // -B: Mbps available per direction, 0 = no Admission by bandwidth
	MaxTestTime    int  // -t: the longest test granted, s
	MaxDSCPECN     int  // -m: the highest DSCP+ECN byte granted
	MaxRateIndex   int  // -I: the highest fixed or starting row granted
	AllowRandom    bool // -X: grant random payload
	Keys           *ServerKeys
	SockBuf        int  // -b: SO_SNDBUF/SO_RCVBUF request; 0 = system default
	NoSeqRollback  bool // -n
	OneTest        bool // -1: exit after the first Test Connection ends
	MaxConnections int  // Test Connections at once (OB-UDPST: 254)

	Reporting
}

// Reporting is what either role is told about what it reports and
// exports: the same options with the same meaning on both sides.
type Reporting struct {
	Verbose    bool // -v
	Debug      bool // -D
	ShowErrors bool // -e
	NoSubInt   bool // -s
	LossRatio  bool // -r
	// -O [+]file: the Load Receiver's per-datagram export (downstream),
	// a file name with OB-UDPST's #-conversions and strftime's; ExportAll
	// is the '+'.
	ExportFile string
	ExportAll  bool
	// -E intf and -M: the local interface whose rate the results show,
	// and whether it picks the maximum.
	Interface    string
	InterfaceMax bool
}

// DefaultServerConfig returns OB-UDPST's server defaults.
func DefaultServerConfig() ServerConfig {
	return ServerConfig{
		Port:           DefaultControlPort,
		MaxTestTime:    MaxTestIntTime,
		MaxDSCPECN:     MaxDSCPECN,
		MaxRateIndex:   1152,
		SockBuf:        DefaultSockBuf,
		MaxConnections: MaxConnsPerServer,
	}
}

// ServerAddr is one server argument of a client: host[:port].
type ServerAddr struct {
	Host string // name or literal address, as typed (IPv6 without brackets)
	Port int    // control port
}

// ClientConfig is everything `udpstp client` was told.
type ClientConfig struct {
	Servers  []ServerAddr
	Upstream bool
	Family   dataphase.Family
	ConnMin  int // -C min
	ConnMax  int // -C max

	NoJumbo        bool
	TraditionalMTU bool
	RandomPayload  bool // -X
	MaxBandwidth   int  // -B total Mbps, divided over the connections
	// MaxRateMbps bounds the test's rate at the IP layer, the automatic
	// search's too, divided over the connections (dataphase.RateBound):
	// the agent's `[probe] max_rate_mbps`; 0: none.
	MaxRateMbps   int
	Key           []byte
	KeyID         uint8
	SockBuf       int
	NoSeqRollback bool

	// Requested test parameters (the server may coerce them).
	TestIntTime    int    // s
	SubIntPeriod   int    // ms
	TrialInt       int    // ms
	LowThresh      int    // ms
	UpperThresh    int    // ms
	SlowAdjThresh  int    // -c
	HighSpeedDelta int    // -h
	SeqErrThresh   int    // -q
	IncludeOooDup  bool   // -R
	UseOwDelVar    bool   // -o
	Algorithm      uint8  // dataphase.AlgorithmB or dataphase.AlgorithmC
	SRIndex        uint16 // -I: fixed or starting row; dataphase.AutoRateIndex = search from 0
	StartIndex     bool   // -I @n
	DSCPECN        int    // -m
	CEThresh       int    // -Z
	Bimodal        int    // -i count: Sub-Intervals of the first mode
	Suppress       bool   // -i -count: rate adjustment suppressed in the first mode
	Protocol       int    // --protocol: the version spoken (legacy.go); 0 = ProtocolVersion

	// Output.
	Format     string // "" (text), "json", "jsonb", "jsonf"
	OutputFile string // --output: JSON written atomically
	TextFile   string // --textfile: the result for node_exporter (*.prom), written atomically
	// Extensions (--extensions) adds udpstp's own figures to the JSON
	// result under its "udpstp" key; without it the result has exactly
	// OB-UDPST's keys (report.Options.Extensions).
	Extensions bool
	Reporting
}

// DefaultClientConfig returns OB-UDPST's client defaults.
func DefaultClientConfig() ClientConfig {
	return ClientConfig{
		ConnMin: 1, ConnMax: 1,
		SockBuf:        DefaultSockBuf,
		TestIntTime:    DefaultTestIntTime,
		SubIntPeriod:   DefaultSubIntPeriod,
		TrialInt:       DefaultTrialInt,
		LowThresh:      DefaultLowThresh,
		UpperThresh:    DefaultUpperThresh,
		SlowAdjThresh:  DefaultSlowAdj,
		HighSpeedDelta: DefaultHSDelta,
		SeqErrThresh:   DefaultSeqErrThresh,
		SRIndex:        0xFFFF,
	}
}
