// Package resultdoc reads a client's JSON result document into typed
// structs: OB-UDPST's document of one test (its 7.x to 9.0.0 releases'
// and udpstp's, strict or with udpstp's "udpstp" extensions key), a
// --bidirectional pair and a --repeat document (report/bidir.go,
// report/repeat.go write them). It is the one reader of that document:
// the result store's summary (store.Summarize), the node_exporter
// textfile (report/textfile), the plots (report/plot) and the benchmarks
// (internal/testkit/capacity) take their figures from its structs, each
// with its own policy for a missing or odd figure.
//
// It decodes and does nothing else: no figure is converted, clamped or
// checked here. Numbers are float64 throughout, so that no value a
// producer writes (or a corrupt file holds) overflows a field, and a
// figure a reader must tell missing from zero is a pointer. A key of the
// wrong JSON type is an error (encoding/json's, naming the key's path).
// It imports encoding/json alone, so that a client built with -tags
// small, which writes the textfile, carries nothing more for it.
package resultdoc

import "encoding/json"

// Kind is what a result document holds.
type Kind int

const (
	// Single is one test's document, OB-UDPST's or udpstp's: Test.
	Single Kind = iota
	// Bidirectional is --bidirectional's pair: {"Upstream": a test's
	// document, "Downstream": a test's document, "udpstp":
	// {"Bidirectional": ...}}.
	Bidirectional
	// Repeat is --repeat's {"Runs": [a test's document or a pair, ...],
	// "Aggregate": ...}.
	Repeat
)

// Document is a result document's top level: what tells the three kinds
// apart, and what a pair or a repeat adds. The parts, a pair's halves
// and a repeat's runs, are kept as they are, for DecodeTest and Decode:
// a part that does not decode leaves the others readable (a plot draws
// the other half).
type Document struct {
	Upstream, Downstream json.RawMessage // a pair's halves, each a test's document
	Runs                 []json.RawMessage
	Aggregate            *Aggregate
	Udpstp               *PairExtensions `json:"udpstp"`
}

// Kind is what d holds: a repeat when it has Runs, a pair when it has a
// half, else a single test (whose keys DecodeTest reads).
func (d *Document) Kind() Kind {
	switch {
	case d.Runs != nil:
		return Repeat
	case d.Upstream != nil || d.Downstream != nil:
		return Bidirectional
	}
	return Single
}

// Decode reads the top level of a result document of any kind (also a
// repeat's run, which is a test or a pair).
func Decode(b []byte) (*Document, error) {
	var d Document
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// DecodeTest reads one test's document (a single test's, a pair's half,
// or a repeat's run that is not a pair).
func DecodeTest(b []byte) (*Test, error) {
	var t Test
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// ErrorStatusOf is a test's ErrorStatus read alone, for a document that
// DecodeTest refused for another key: a run that failed keeps its status.
func ErrorStatusOf(b []byte) (float64, bool) {
	var st struct{ ErrorStatus *float64 }
	if json.Unmarshal(b, &st) != nil || st.ErrorStatus == nil {
		return 0, false
	}
	return *st.ErrorStatus, true
}

// Aggregate is what a reader takes of a --repeat document's Aggregate.
type Aggregate struct {
	RunsRequested float64
}

// PairExtensions is a pair's "udpstp" key.
type PairExtensions struct {
	Bidirectional *PairFigures
}

// PairFigures is a pair's "udpstp"."Bidirectional": the latency under
// load (report/bidir.go).
type PairFigures struct {
	IdleSubIntervals float64 // Sub-Intervals of each half that were the idle baseline
	StartOffset      float64 // the downstream half's start after the upstream half's, s
	Upstream         *HalfFigures
	Downstream       *HalfFigures
}

// HalfFigures is one half's latency under load.
type HalfFigures struct {
	MinRTTSummary *float64
	Loaded        *struct {
		RTTAvg *float64
		Fine   *struct{ RTTAvg *float64 } // udpstp's, to the µs
	}
	RTTVarBaseFine *float64 // udpstp's, to the µs: what Loaded.Fine varies against
}

// Test is one test's document: OB-UDPST's keys and udpstp's extensions.
type Test struct {
	IPLayerCapSupported *struct{ SoftwareVersion string }
	Input               *Input // absent in a brief (jsonb) document
	Output              *Output
	ErrorStatus         *float64 // OB-UDPST writes it in every result
	ErrorMessage        string
	ErrorMessage2       string
	Udpstp              *TestExtensions `json:"udpstp"` // --extensions
	// DataRecords is a key of OB-UDPST's server statistics file (-G),
	// so that a reader can say what such a file is instead of only what
	// it is not.
	DataRecords json.RawMessage `json:"data_records"`
}

// Input is the test's parameters.
type Input struct {
	Role          string // "Sender": upstream; "Receiver": downstream
	Host          string
	HostIPAddress string
	// HostList's first is the server as used, with its control port
	// (Input's Port is the Test Connection's).
	HostList []struct {
		Host, HostIPAddress string
		ControlPort         float64
	}
	NumberOfConnections float64
	TestType            string // "Search" or "Fixed"
	IPDVEnable          float64
	TestSubInterval     float64 // ms
	LowerThresh         float64
	UpperThresh         float64
}

// Output is the test's results; absent when no Test Connection was
// activated.
type Output struct {
	BOMTime, EOMTime  string   // RFC 3339, UTC
	TestInterval      *float64 // s
	IncrementalResult []Interval
	Summary           *Summary
	ModalSummary      []Summary
	AtMax             *Maximum
	ModalResult       []Maximum
}

// Interval is a Sub-Interval's figures (IncrementalResult), or its
// delays to the µs (udpstp's Delays: Interval and the delays only).
type Interval struct {
	Interval                                   float64
	Seconds                                    float64
	TimeOfSubInterval                          string
	ActiveConnections                          float64
	IPLayerCapacity                            float64 // Mbps
	LossCount, ReorderedCount, ReplicatedCount float64
	RTTMin, RTTAvg, RTTMax                     float64 // s
	PDVMin, PDVAvg, PDVMax                     float64 // s
}

// Summary is a mode's Summary (Output.Summary, ModalSummary).
// Its keys and Maximum's are spelled out in each (not embedded), so
// that encoding/json's errors name a key by its path in the document.
type Summary struct {
	Mode                   *float64
	Intervals              *float64
	ActiveConnections      *float64
	DeliveredPercent       *float64
	CEPercentOfDelivered   *float64
	LossCount              *float64
	ReorderedCount         *float64
	ReplicatedCount        *float64
	CECountOfDelivered     *float64
	PDVMin, PDVAvg         *float64 // s
	PDVMax                 *float64
	RTTMin, RTTAvg         *float64 // s
	RTTMax                 *float64
	IPLayerCapacitySummary *float64 // Mbps
	LossRatioSummary       *float64
	ReorderedRatioSummary  *float64
	ReplicatedRatioSummary *float64
	RTTRangeSummary        *float64 // s
	MinOnewayDelaySummary  *float64 // s
	MinRTTSummary          *float64 // s
}

// Maximum is a mode's Sub-Interval at the maximum (Output.AtMax,
// ModalResult).
type Maximum struct {
	Mode                      *float64
	Intervals                 *float64
	ActiveConnections         *float64
	DeliveredPercent          *float64
	CEPercentOfDelivered      *float64
	LossCount                 *float64
	ReorderedCount            *float64
	ReplicatedCount           *float64
	CECountOfDelivered        *float64
	PDVMin, PDVAvg            *float64 // s
	PDVMax                    *float64
	RTTMin, RTTAvg            *float64 // s
	RTTMax                    *float64
	TimeOfMax                 string
	MaxIPLayerCapacity        *float64 // Mbps, and the Ethernet layers'
	MaxETHCapacityNoFCS       *float64
	MaxETHCapacityWithFCS     *float64
	MaxETHCapacityWithFCSVLAN *float64
	LossRatioAtMax            *float64
	ReorderedRatioAtMax       *float64
	ReplicatedRatioAtMax      *float64
	PDVRangeAtMax             *float64 // s
	MinOnewayDelayAtMax       *float64 // s
	MinRTTAtMax               *float64 // s
}

// TestExtensions is a test's "udpstp" key (--extensions): what a reader
// takes of its per-connection figures and delays to the µs.
type TestExtensions struct {
	Connections     []Conn
	Delays          []Interval       // per aggregate Sub-Interval
	ServerSelection *ServerSelection // a failover search's round trips
}

// ServerSelection is a failover search's choice by round trip
// (report/selection.go): its candidates in the order tried.
type ServerSelection struct {
	Mode       string
	Candidates []SelectionCandidate
}

// SelectionCandidate is one candidate of a ServerSelection.
type SelectionCandidate struct {
	Host, HostIPAddress  string
	ControlPort          float64
	Priority             float64
	SetupRTTMicroseconds *float64 // missing: it did not answer (Error)
	Error                string
	Chosen               float64 // 1: the test ran against it
}

// Conn is one Test Connection's Sub-Intervals.
type Conn struct {
	Connection                                 float64 // from 1
	IPLayerCapacity                            []float64
	LossCount, ReorderedCount, ReplicatedCount []float64
	SendingRateIndex                           []float64
	SendingRateMbps                            []float64
}

// Num is *p, 0 when p is nil: for a reader to which a missing figure is
// a zero.
func Num(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}
