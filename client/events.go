package client

import (
	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
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
	// ALERT line (Code -1, the status unchanged), as the report prints it.
	EventWarning
	// EventError: an error with its ErrorStatus code (50 and above): a
	// setup that failed, a socket failure, too few Test Connections left
	// (Conn -1), the interrupt (Conn -1).
	EventError
	// EventConnEnded: a Test Connection's Data Phase ended (End says how).
	EventConnEnded
	// EventEnd: the run is over (Status is its ErrorStatus, the result
	// file written). It is the last event.
	EventEnd
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

	Activated *control.ClientConn         // EventConnected; read only
	SubInt    dataphase.SubIntervalResult // EventSubInterval
	Code      int                         // EventWarning, EventError: the ErrorStatus code (-1: an ALERT line)
	Text      string                      // EventWarning, EventError: the line as the report prints it
	End       dataphase.EndReason         // EventConnEnded
	Status    int                         // EventEnd
}
