package control

// The server's counters: what its Control Phase saw and what its Data
// Phases reported, for the logs, -G, the service status line and metrics.
// Each is declared once, as a constant with a line of its table; a
// Snapshot copies them all and Each lists them with their names.

import (
	"strconv"
	"sync/atomic"

	"github.com/udpstp/udpstp/dataphase"
)

// ServerCounter names one of the server's Control Phase counters. It
// indexes ServerCounters and ServerSnapshot.Counts; serverCounterInfo
// gives its name and help text.
type ServerCounter uint8

const (
	CountSetupRequests    ServerCounter = iota // every datagram on a control socket
	CountSetupRateLimited                      // dropped unanswered: its source exceeded its Setup Request rate
	CountSetupInvalid                          // dropped silently: length, identifier, cmdRequest, checksum
	CountSetupAccepted
	CountLegacyAccepted // accepted with a protocol version before 20
	// CountActivationRequests counts valid Test Activation Requests,
	// before their authentication is checked.
	CountActivationRequests
	CountActivated
	CountActivationWait // Test Connections released without an activation
	// Invalid control PDUs (Setup and Test Activation Requests) by what
	// failed: the length, the checksum, anything else.
	CountInvalidSize
	CountInvalidChecksum
	CountInvalidFormat
	// Authentication failures of Setup (codes 7 and 8, also counted as
	// refusals) and Test Activation Requests: a digest no key matches, a
	// time outside the window.
	CountAuthFailure
	CountAuthTime
	// The defences (docs/security.md).
	CountSetupReplayed     // authenticated Setup Requests dropped as replays
	CountRefusalUnanswered // refusals not answered: the source is over its answer budget
	CountPendingEvicted    // Test Connections awaiting activation evicted for newer Setups
	CountActivationForeign // Test Activations dropped: not from the Setup's address
	CountSourceRunningCap  // Setups refused (code 13): the source holds its cap of Test Connections
	CountSourcePendingCap  // Setups refused (code 13): the source holds all the pending Test Connections it may
	CountSetupDraining     // Setups refused (code 13): the server drains (drain.go)

	NumServerCounters // the number of ServerCounters, not one
)

var serverCounterInfo = [NumServerCounters]dataphase.CounterInfo{
	CountSetupRequests:      {Name: "setup_requests", Help: "Datagrams received on the control sockets"},
	CountSetupRateLimited:   {Name: "setup_rate_limited", Help: "Setup Requests dropped unanswered: their source exceeded its rate"},
	CountSetupInvalid:       {Name: "setup_invalid", Help: "Setup Requests dropped unanswered: invalid length, identifier, command or checksum"},
	CountSetupAccepted:      {Name: "setup_accepted", Help: "Setup Requests accepted"},
	CountLegacyAccepted:     {Name: "setup_legacy_accepted", Help: "Setup Requests accepted with a protocol version before 20"},
	CountActivationRequests: {Name: "activation_requests", Help: "Valid Test Activation Requests received, before their authentication is checked"},
	CountActivated:          {Name: "activated", Help: "Test Connections activated"},
	CountActivationWait:     {Name: "activation_timeouts", Help: "Test Connections released without an activation"},
	CountInvalidSize:        {Name: "control_invalid_size", Help: "Setup and Test Activation Requests dropped for their length"},
	CountInvalidChecksum:    {Name: "control_invalid_checksum", Help: "Setup and Test Activation Requests dropped for their checksum"},
	CountInvalidFormat:      {Name: "control_invalid_format", Help: "Setup and Test Activation Requests dropped for another field"},
	CountAuthFailure:        {Name: "auth_failures", Help: "Setup and Test Activation Requests whose digest no key matches"},
	CountAuthTime:           {Name: "auth_time_failures", Help: "Setup and Test Activation Requests authenticated with a time outside the window"},
	CountSetupReplayed:      {Name: "setup_replayed", Help: "Authenticated Setup Requests dropped unanswered as replays of one seen within its time window"},
	CountRefusalUnanswered:  {Name: "setup_refusals_unanswered", Help: "Setup refusals not answered: their source was over its answer budget"},
	CountPendingEvicted:     {Name: "pending_evicted", Help: "Test Connections awaiting activation evicted to make room for a newer Setup"},
	CountActivationForeign:  {Name: "activation_foreign_source", Help: "Test Activation Requests dropped: not from the address of their Setup Request"},
	CountSourceRunningCap:   {Name: "setup_source_cap", Help: "Setup Requests refused: their source held its cap of Test Connections, pending and running"},
	CountSourcePendingCap:   {Name: "setup_source_pending_cap", Help: "Setup Requests refused: their source held all the Test Connections awaiting activation it may"},
	CountSetupDraining:      {Name: "setup_draining", Help: "Setup Requests refused: the server was draining before it stops"},
}

// Info returns the counter's name and help text.
func (c ServerCounter) Info() dataphase.CounterInfo { return serverCounterInfo[c] }

func (c ServerCounter) String() string { return serverCounterInfo[c].Name }

// numSetupCodes sizes the refusals by Setup code.
const numSetupCodes = SetupConnFail + 1

// The counters by a label, next to those of the table.
var (
	rejectedInfo = dataphase.CounterInfo{Name: "setup_rejected", Help: "Setup Requests answered with a refusal, by Setup response code"}
	endedInfo    = dataphase.CounterInfo{Name: "tests_ended", Help: "Data Phases ended, by direction and how they ended"}
)

// Directions index the counters and gauges kept per direction, as
// Admission's bandwidth pools do.
const (
	dirDown = iota
	dirUp
	numDirs
)

var dirNames = [numDirs]string{dirDown: "downstream", dirUp: "upstream"}

// ServerCounters count what the server's Control Phase saw and add up what
// its Data Phases report in their events; any goroutine may add or read.
type ServerCounters struct {
	counts   [NumServerCounters]atomic.Uint64
	rejected [numSetupCodes]atomic.Uint64                    // by Setup code
	ended    [numDirs][dataphase.NumEndReasons]atomic.Uint64 // by direction and end reason
	// Running Data Phases by direction.
	runningDown, runningUp atomic.Int64
	// data adds up the Data Phases' counts by direction (the -G file's
	// traffic figures are their sum). They come from Status PDUs, so they
	// are what each receiving end counted: the load the server sent as
	// its clients received it, and the load the server received; the
	// Load Sender's own figures (Skipped Bursts) are the downstream ones.
	data [numDirs]dataphase.AtomicCounts
}

// Add counts one of c.
func (s *ServerCounters) Add(c ServerCounter) { s.counts[c].Add(1) }

// Load reads one counter.
func (s *ServerCounters) Load(c ServerCounter) uint64 { return s.counts[c].Load() }

// reject counts a refusal by its Setup code.
func (s *ServerCounters) reject(code uint8) {
	if int(code) < len(s.rejected) {
		s.rejected[code].Add(1)
	}
}

// end counts an ended Data Phase by its direction (the server sends the
// load downstream) and its reason.
func (s *ServerCounters) end(loadSender bool, r dataphase.EndReason) {
	d := dirUp
	if loadSender {
		d = dirDown
	}
	if int(r) < len(s.ended[d]) {
		s.ended[d][r].Add(1)
	}
}

// countInvalid counts an invalid control PDU by what failed.
func (s *Server) countInvalid(err error) {
	s.countRejection(dataphase.RejectionOf(err))
}

// countInvalidField counts an invalid control PDU by the field at fault.
func (s *Server) countInvalidField(field pduField) {
	s.countRejection(field.rejection())
}

func (s *Server) countRejection(r dataphase.Rejection) {
	switch r {
	case dataphase.RejectSize:
		s.Counters.Add(CountInvalidSize)
	case dataphase.RejectChecksum:
		s.Counters.Add(CountInvalidChecksum)
	default:
		s.Counters.Add(CountInvalidFormat)
	}
}

// countAuth counts an authentication failure by its code.
func (s *Server) countAuth(code uint8) {
	if code == SetupAuthTime {
		s.Counters.Add(CountAuthTime)
	} else {
		s.Counters.Add(CountAuthFailure)
	}
}

// countEvent adds what a Data Phase counted (an EvTrial's or EvEnd's
// Counts) to the totals of its direction (the server sends the load
// downstream). It runs on the executor's thread for every event, so it
// only adds.
func (s *Server) countEvent(ev *dataphase.Event, loadSender bool) {
	d := dirUp
	if loadSender {
		d = dirDown
	}
	s.Counters.data[d].Add(&ev.Counts)
}

// ServerSnapshot is a copy of a Server's counters and state at one time
// (the -G records, the service status line, metrics).
type ServerSnapshot struct {
	Running, RunningDown, RunningUp int // Test Connections in the Data Phase
	Reserved                        int // Test Connections holding a slot (also awaiting activation)
	DownMbps, UpMbps                int // bandwidth reserved per direction
	// The limits: the most Test Connections at once, and -B, the
	// bandwidth per direction (0: no bandwidth Admission).
	MaxConnections, MaxMbps int

	Counts   [NumServerCounters]uint64                // by ServerCounter
	Rejected [numSetupCodes]uint64                    // by Setup code
	Ended    [numDirs][dataphase.NumEndReasons]uint64 // by direction (downstream first) and dataphase.EndReason

	Data    dataphase.Counts          // the Data Phases' counters, added up
	DataDir [numDirs]dataphase.Counts // the same by direction, downstream first
}

// RejectedTotal is the number of Setup Requests answered with a refusal.
func (n *ServerSnapshot) RejectedTotal() uint64 {
	var t uint64
	for _, v := range n.Rejected {
		t += v
	}
	return t
}

// Snapshot reads the counters (each atomically; the set is not one
// instant, which for statistics does not matter).
func (s *Server) Snapshot() ServerSnapshot {
	c := &s.Counters
	var n ServerSnapshot
	n.Reserved, n.DownMbps, n.UpMbps = s.adm.snapshot()
	n.MaxConnections, n.MaxMbps = s.adm.maxConns, s.adm.maxBW
	n.RunningDown, n.RunningUp = int(c.runningDown.Load()), int(c.runningUp.Load())
	n.Running = n.RunningDown + n.RunningUp
	for i := range c.counts {
		n.Counts[i] = c.counts[i].Load()
	}
	for i := range c.rejected {
		n.Rejected[i] = c.rejected[i].Load()
	}
	for d := range c.ended {
		for r := range c.ended[d] {
			n.Ended[d][r] = c.ended[d][r].Load()
		}
	}
	for d := range c.data {
		n.DataDir[d] = c.data[d].Load()
		n.Data.Add(&n.DataDir[d])
	}
	return n
}

// Metric is one value of a ServerSnapshot with what it is, for a metrics
// exporter or a dump.
type Metric struct {
	dataphase.CounterInfo
	// Gauge: a level that goes down as well as up; otherwise a count
	// since the server started.
	Gauge bool
	// Direction is "downstream" or "upstream" for a value kept per
	// direction, "" for the others.
	Direction string
	// Label and LabelValue name the value's part of a labelled counter
	// (a refusal's "code", an end's "reason"); "" for the others.
	Label, LabelValue string
	Value             uint64
}

// bytesPerMbps converts the Mbps of Admission into the bytes per second
// metrics use (Prometheus names carry base units).
const bytesPerMbps = 1e6 / 8

// Each calls f for every value of the snapshot, in a fixed order: the
// gauges, the Control Phase counters, the refusals by Setup code and the
// ends by direction and reason (the codes and reasons that exist, zero or
// not), and the Data Phases' counters by direction. The bandwidth limit is
// listed only with -B.
func (n *ServerSnapshot) Each(f func(Metric)) {
	gauge := func(name, help, dir string, v uint64) {
		f(Metric{CounterInfo: dataphase.CounterInfo{Name: name, Help: help}, Gauge: true, Direction: dir, Value: v})
	}
	u := func(v int) uint64 { return uint64(max(v, 0)) } // in uint64 before scaling: 100000 Mbps overflows a 32-bit int in bytes
	gauge("running_connections", "Test Connections in their Data Phase", dirNames[dirDown], u(n.RunningDown))
	gauge("running_connections", "Test Connections in their Data Phase", dirNames[dirUp], u(n.RunningUp))
	gauge("reserved_connections", "Test Connections holding a slot, also those awaiting activation", "", u(n.Reserved))
	gauge("max_connections", "The most Test Connections the server admits at once", "", u(n.MaxConnections))
	const reservedHelp = "Bandwidth reserved by Admission for the Test Connections holding a slot (bytes per second)"
	gauge("reserved_bandwidth_bytes_per_second", reservedHelp, dirNames[dirDown], u(n.DownMbps)*bytesPerMbps)
	gauge("reserved_bandwidth_bytes_per_second", reservedHelp, dirNames[dirUp], u(n.UpMbps)*bytesPerMbps)
	if n.MaxMbps > 0 {
		const limitHelp = "Bandwidth Admission grants per direction, the server's --bandwidth/-B (bytes per second)"
		gauge("bandwidth_limit_bytes_per_second", limitHelp, dirNames[dirDown], u(n.MaxMbps)*bytesPerMbps)
		gauge("bandwidth_limit_bytes_per_second", limitHelp, dirNames[dirUp], u(n.MaxMbps)*bytesPerMbps)
	}
	for c := range NumServerCounters {
		f(Metric{CounterInfo: c.Info(), Value: n.Counts[c]})
	}
	for code := SetupBadVersion; code < numSetupCodes; code++ {
		f(Metric{CounterInfo: rejectedInfo, Label: "code", LabelValue: strconv.Itoa(int(code)), Value: n.Rejected[code]})
	}
	for d := range n.Ended {
		for r := dataphase.EndStopped; r < dataphase.NumEndReasons; r++ {
			f(Metric{CounterInfo: endedInfo, Direction: dirNames[d], Label: "reason", LabelValue: r.Name(), Value: n.Ended[d][r]})
		}
	}
	for c := range dataphase.NumCounters {
		for d := range n.DataDir {
			f(Metric{CounterInfo: c.Info(), Direction: dirNames[d], Value: n.DataDir[d][c]})
		}
	}
}
