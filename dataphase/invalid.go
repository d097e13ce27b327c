package dataphase

import "fmt"

// pduKind is which PDU a datagram was taken for: a Load Receiver reads
// Load PDUs, a Load Sender Status PDUs.
type pduKind uint8

const (
	loadPDU pduKind = iota
	statusPDU
)

// String is the word OB-UDPST's "Received invalid ... PDU" warning uses
// (its wording, kept for interop: the line reaches the user and the JSON).
func (k pduKind) String() string {
	if k == loadPDU {
		return "load"
	}
	return "status"
}

// invalidCounter is the counter of an invalid PDU by its kind and what
// failed.
var invalidCounter = [...][numRejections]Counter{
	loadPDU:   {RejectFormat: CountLoadInvalidFormat, RejectSize: CountLoadInvalidSize, RejectChecksum: CountLoadInvalidChecksum},
	statusPDU: {RejectFormat: CountStatusInvalidFormat, RejectSize: CountStatusInvalidSize, RejectChecksum: CountStatusInvalidChecksum},
}

// invalid counts a datagram that is not a valid PDU for this end, by what
// failed, with OB-UDPST's warning line (at most MaxWarnings per Test
// Connection).
func (c *Conn) invalid(kind pduKind, err error, data []byte, n int) {
	c.counts[invalidCounter[kind][RejectionOf(err)]]++
	load := kind == loadPDU
	if !c.canWarn(true) {
		return
	}
	var id, ck uint16
	var action, flag uint8
	if len(data) >= 4 {
		id = uint16(data[0])<<8 | uint16(data[1])
		action, flag = data[2], data[3]
	}
	switch {
	case load && len(data) >= LoadHeaderLen:
		ck = uint16(data[30])<<8 | uint16(data[31])
	case !load && len(data) >= StatusLegacyLen:
		off := statusOffNominalCk
		if c.p.Legacy {
			off = statusOffLegacyCk
		}
		if len(data) > off+1 {
			ck = uint16(data[off])<<8 | uint16(data[off+1])
		}
	}
	c.warn(WarnInvalidPDU, fmt.Sprintf("WARNING: Received invalid %s PDU (%d,0x%04X:0x%02X:0x%02X,0x%04X)", kind, n, id, action, flag, ck), true)
}

// implausible drops a PDU whose figures cannot be true (plausible.go):
// counted, said at most a few times (each line with the count so far),
// outside the cap on warnings as those lines are few and say how to read
// the result.
func (c *Conn) implausible(why implausibility) {
	c.counts[CountImplausible]++
	c.pl.why = why
	if c.pl.discard() {
		c.implausibleWarning()
	}
}

func (c *Conn) implausibleWarning() {
	kind := "Status"
	if !c.loadSender {
		kind = "Load"
	}
	c.pl.lastSaid = c.pl.discarded
	c.events = append(c.events, Event{Kind: EvWarning, Code: WarnImplausible,
		Text: fmt.Sprintf("WARNING: %d %s PDUs dropped so far as forged: their figures cannot be true (the last: %s)",
			c.pl.discarded, kind, c.pl.why)})
}
