package dataphase

import "fmt"

// warnState is what the cap on warnings counts, and the warnings said once
// per Test Connection.
type warnState struct {
	warnings     int  // warning events so far (MaxWarnings)
	localBleach  bool // the local ECN bleaching warning was said
	remoteBleach bool // the remote one was
}

// The codes of warning events (Event.Code): OB-UDPST's ErrorStatus values
// 1..49 are warnings, a completed test keeps them. 1..8 are OB-UDPST
// 9.0.0's (its base 1 plus its warning index, WARN_SRV_TIMEOUT 0 to
// WARN_REM_ECNBLCH 7), kept for interop: -1's exit status and the JSON's
// ErrorStatus carry them. 9 and 10 are ours, in the range it leaves free.
// Untyped: Event.Code is a uint8, an ErrorStatus an int.
const (
	// WarnError is no OB-UDPST code: our own error that ends the Test
	// Connection (a socket failure, a policed or unverified peer). A
	// client reports it as ErrorStatus 255.
	WarnError = 0

	WarnServerTimeout     = 1 // the server never answered the setup or activation
	WarnLocalStatusLoss   = 2 // Status PDUs this end receives were lost
	WarnRemoteStatusLoss  = 3 // Status PDUs the peer receives were lost
	WarnLocalTrafficStop  = 4 // nothing valid arrived for a second
	WarnRemoteTrafficStop = 5 // the peer's PDUs say rxStopped
	WarnInvalidPDU        = 6 // a datagram that is no valid PDU (invalid.go)
	WarnLocalBleach       = 7 // ECN bleached on the way to this end
	WarnRemoteBleach      = 8 // ECN bleached on the way to the peer

	// WarnEndedEarly is the client's warning code for a test the server
	// stopped before its time (OB-UDPST's client reports such a test as
	// complete).
	WarnEndedEarly = 9
	// WarnImplausible is the client's warning code for PDUs dropped
	// because their figures cannot be true (plausible.go).
	WarnImplausible = 10

	// WarnMax is the highest ErrorStatus that is a warning; above it are
	// errors, which a completed test does not keep.
	WarnMax = 49
)

// canWarn reports whether a warning would be shown: OB-UDPST shows at most
// 10 per Test Connection and, except for invalid PDUs, only while the test
// runs. Callers ask before they format its text, so a flood of bad
// datagrams costs no allocation.
func (c *Conn) canWarn(always bool) bool {
	return c.warnings < MaxWarnings && (always || (c.action == ActionTest && !c.stopping))
}

// warn records a warning event if canWarn allows it. WarnError is our own
// error that ends the Test Connection (a socket failure, a policed or
// unverified peer): one per Test Connection at most, so it always goes
// out, however many warnings came before.
func (c *Conn) warn(code uint8, text string, always bool) {
	if code != WarnError && !c.canWarn(always) {
		return
	}
	c.warnings++
	c.events = append(c.events, Event{Kind: EvWarning, Code: code, Text: text})
}

func seqErrText(n uint16) string {
	if n == SpduSeqErrOoO {
		return "OoO/Dup"
	}
	return fmt.Sprint(n)
}
