// Package store keeps test results: one row per test, with its headline
// figures for lists, charts and metrics, and its complete OB-UDPST JSON
// document. Two engines sit behind one interface: SQLite in a file (the
// embedded default of a probe, through a pure-Go driver so the binary stays
// static) and PostgreSQL (a fleet's shared store). Open picks one by the
// --store argument every command that reads or writes results takes:
// "sqlite:PATH" or "postgres://...".
//
// Results are keyed by UUID, so writing one twice (a retried upload) keeps
// one row.
package store

import (
	"context"
	"errors"
	"time"
)

// Origin says who wrote a result.
type Origin string

const (
	// OriginClient: a client's result (the agent, /probe, a copy of a
	// client run).
	OriginClient Origin = "client"
	// OriginServer: the server's record of a test it served (its archive).
	OriginServer Origin = "server"
)

// Status is a result's outcome, in words that list and filter well.
type Status string

const (
	StatusOK      Status = "ok"      // ErrorStatus 0
	StatusWarning Status = "warning" // ErrorStatus 1-49: the test ran, with a warning
	StatusError   Status = "error"   // ErrorStatus 50 and above, or no test at all
	// StatusMissed: a scheduled slot the agent did not run (it was
	// asleep, busy or stopped); Warning says why. A slot run against
	// servers that were down or refused is StatusError.
	StatusMissed Status = "missed"
)

// Result is one test. The figures are those of the test's summary (its
// maximum, over Sub-Intervals, as OB-UDPST reports it); a figure the test
// did not measure is nil.
type Result struct {
	ID     string // UUID (RFC 9562), lower case with hyphens
	Origin Origin
	Test   string // the agent's name for the test; "" for a one-off
	Agent  string // identity of the probe (or server) that wrote it
	Server string // the server as host:port, as used
	Client string // the client's address (server records; may be a pseudonym)

	Start, End time.Time
	// Direction: "up", "down" or "bidirectional".
	Direction   string
	Status      Status
	ErrorStatus int    // OB-UDPST's ErrorStatus (exit status)
	Warning     string // ErrorMessage, or why a slot was missed

	MaxMbps     *float64 // maximum L3 capacity, Mbit/s (IPLayerCapacity's max)
	SummaryMbps *float64 // the summary's L3 capacity, Mbit/s
	LossRatio   *float64 // at the maximum
	RTTMinMs    *float64
	RTTRangeMs  *float64
	DelayVarMs  *float64 // one-way delay variation at the maximum
	// LoadedMs is the latency under load (bidirectional tests), RPM the
	// round trips per minute it gives, Grade its word for people.
	LoadedMs *float64
	RPM      *float64
	Grade    string

	// CrossMbps is the other traffic (not the test's) the probe's
	// interface carried during the test, in Mbit/s (the rates before and
	// after it are logged; docs/agent.md, "Cross-traffic"); nil: not
	// measured. CrossBusy: it was above the
	// agent's threshold, so the test shared its line and measured less
	// than the line can carry.
	CrossMbps *float64
	CrossBusy bool

	// Doc is the complete JSON document (stored compressed). List leaves
	// it nil; Get fills it.
	Doc []byte
}

// Filter selects results; zero fields select all.
type Filter struct {
	Origin      Origin
	Test        string
	Agent       string
	Server      string
	Direction   string
	Since       time.Time // Start at or after
	Until       time.Time // Start before
	Limit       int       // at most this many, newest first; 0: no limit
	BeforeStart time.Time // paging: only results that started before this
	// Agents: only results of one of these probes (none: any); with
	// Agent, both hold.
	Agents []string
	Status Status // only results of this status
	// PerAgent: List returns at most this many results of each probe,
	// its newest (a fleet page's last results of the probes it shows,
	// in one query); 0: no such bound.
	PerAgent int

	// SinceSet and UntilSet make Since and Until bound even at the zero
	// time (a command line's 0001-01-01T00:00:00Z); without them a zero
	// Since or Until is no bound.
	SinceSet, UntilSet bool
}

// Point is one point of a time series: a figure of a test at a time.
type Point struct {
	T time.Time
	V float64
}

// Retention bounds how many results a store keeps; zero fields keep all.
type Retention struct {
	MaxAge   time.Duration
	MaxCount int
}

// Store is a result store.
type Store interface {
	// Put writes r; a result with the same ID is left as it is (a retried
	// write succeeds and changes nothing).
	Put(ctx context.Context, r *Result) error
	// Get returns the result with that ID, with its Doc, or ErrNotFound.
	Get(ctx context.Context, id string) (*Result, error)
	// List returns the results f selects, newest first, without Doc.
	List(ctx context.Context, f Filter) ([]Result, error)
	// Series returns one figure (a Result column: "max_mbps",
	// "summary_mbps", "loss_ratio", "rtt_min_ms", "rtt_range_ms",
	// "delay_var_ms", "loaded_ms", "rpm") of the results f selects, oldest
	// first, reduced on the store's side to at most points points (the
	// screen's resolution) by taking each bucket's mean.
	Series(ctx context.Context, f Filter, figure string, points int) ([]Point, error)
	// Prune deletes what r does not keep and returns how many it deleted.
	Prune(ctx context.Context, r Retention) (int, error)
	// Fleet sums up the results f selects per server and per agent, on the
	// store's side (a fleet's store holds millions of rows).
	Fleet(ctx context.Context, f Filter) (*Fleet, error)
	Close() error
}

// CapacityEdges are the lower edges, in Mbit/s, of the buckets of a
// capacity distribution: bucket i holds maxima in [edge i, edge i+1).
var CapacityEdges = []float64{0, 1, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000}

// Fleet is what a fleet's page shows.
type Fleet struct {
	Servers []ServerSummary // by Server
	Agents  []AgentSummary  // by Agent
}

// ServerSummary is one server's tests.
type ServerSummary struct {
	Server   string
	Tests    int
	ByStatus map[Status]int
	// Capacity counts the maxima (MaxMbps) per bucket of CapacityEdges.
	Capacity []int
}

// AgentSummary is one probe's tests.
type AgentSummary struct {
	Agent       string
	Tests       int
	Missed      int // results with StatusMissed
	Last        time.Time
	LastStatus  Status
	LastMaxMbps *float64
}

// ErrNotFound is Get's answer for an ID the store does not hold.
var ErrNotFound = errors.New("store: no such result")
