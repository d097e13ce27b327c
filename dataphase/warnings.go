package dataphase

import "fmt"

// warnState is what the cap on warnings counts, and the warnings said once
// per Test Connection.
type warnState struct {
	warnings     int  // warning events so far (MaxWarnings)
	localBleach  bool // the local ECN bleaching warning was said
	remoteBleach bool // the remote one was
}

// WarnEndedEarly is the client's warning code for a test the server
// stopped before its time (ours: OB-UDPST's warnings take 1 to 8 of the
// 1..49 range, and its client reports such a test as complete).
const WarnEndedEarly = 9

// WarnImplausible is the client's warning code for PDUs dropped because
// their figures cannot be true (ours, as WarnEndedEarly is).
const WarnImplausible = 10

// canWarn reports whether a warning would be shown: OB-UDPST shows at most
// 10 per Test Connection and, except for invalid PDUs, only while the test
// runs. Callers ask before they format its text, so a flood of bad
// datagrams costs no allocation.
func (c *Conn) canWarn(always bool) bool {
	return c.warnings < MaxWarnings && (always || (c.action == ActionTest && !c.stopping))
}

// warn records a warning event if canWarn allows it. Code 0 is our own
// error that ends the Test Connection (a socket failure, a policed or
// unverified peer): one per Test Connection at most, so it always goes
// out, however many warnings came before.
func (c *Conn) warn(code uint8, text string, always bool) {
	if code != 0 && !c.canWarn(always) {
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
