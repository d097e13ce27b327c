package client

import (
	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/report"
)

// EventKind says what an Event reports. New kinds may come; an observer
// ignores those it does not know.
type EventKind uint8

const (
	// EventConnected: a Test Connection was activated (Activated holds
	// what the server granted) and its Data Phase starts.
	EventConnected EventKind = iota + 1
	// EventSubInterval: a Test Connection completed a Sub-Interval
	// (SubInt), before the report merges it into the aggregate.
	EventSubInterval
	// EventWarning: a warning with its ErrorStatus code (1..49), or an
	// ALERT line or udpstp's own note (Code -1, the status unchanged), as
	// the report prints it: report.StillRisingNote (Conn -1) after the
	// test when the search was still rising at its end.
	EventWarning
	// EventError: an error with its ErrorStatus code (50 and above): a
	// setup that failed, a socket failure, too few Test Connections left
	// (Conn -1), the interrupt (Conn -1).
	EventError
	// EventConnEnded: a Test Connection's Data Phase ended (End says how).
	EventConnEnded
	// EventEnd: the run is over (Status is its ErrorStatus, the result
	// file written, Document the result). It is the last event.
	EventEnd
	// EventStart: the first Test Connection was activated; Info holds
	// what the report's header and the JSON's Input show. It comes once,
	// before that connection's EventConnected; a run whose setups all
	// fail has none.
	EventStart
	// EventAggregate: the report emitted an aggregate Sub-Interval (the
	// sum of the connections, the text's Sub-Interval line); Interval
	// holds its figures (Conn -1).
	EventAggregate
	// EventTrial: a Test Connection sent or received a Status PDU, 20 a
	// second at the default Trial Interval (Trial).
	EventTrial
	// EventRunEnd: one test of --repeat is over (Run says which, Status
	// is its ErrorStatus); the next one's events, or EventEnd, follow.
	EventRunEnd
	// EventSelected: a failover search with SelectRTT is over (Conn -1):
	// Selection holds each candidate's Setup round trip and the one
	// chosen, if any. It comes before EventStart.
	EventSelected
)

// Event is something that happened in a run, for Options.Observe.
type Event struct {
	Kind EventKind
	// Conn is the Test Connection, from 0 (the report's "[1]" is 0); -1
	// for the run as a whole.
	Conn int
	// Server is the Test Connection's server as given (host and port);
	// zero for the run as a whole.
	Server control.ServerAddr
	// Upstream is the direction of the test the event belongs to. With
	// --bidirectional both halves report, each numbering its Test
	// Connections from 0: Conn and Upstream together name one.
	Upstream bool
	// Run is the test's number within --repeat, from 1; 0 without it.
	Run int

	Activated *control.ClientConn         // EventConnected; read only
	SubInt    dataphase.SubIntervalResult // EventSubInterval
	Code      int                         // EventWarning, EventError: the ErrorStatus code (-1: an ALERT line)
	Text      string                      // EventWarning, EventError: the line as the report prints it
	End       dataphase.EndReason         // EventConnEnded
	Status    int                         // EventEnd

	Info *report.TestInfo // EventStart; read only
	// Interval is a Sub-Interval's IncrementalResult figures: the
	// connection's own (EventSubInterval; nil when the report ignored the
	// Sub-Interval, one beyond the test's count) or the aggregate's
	// (EventAggregate).
	Interval *report.Interval
	Trial    dataphase.TrialInfo // EventTrial
	// Selection is EventSelected's measurement; read only.
	Selection *report.Selection
	// Document is the result as the JSON format of the run (compact JSON
	// with text output) renders it, with its final newline (EventEnd).
	Document []byte
}
