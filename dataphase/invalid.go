package dataphase

import "fmt"

// invalid counts a datagram that is not a valid PDU for this end, by what
// failed, with OB-UDPST's warning line (at most MaxWarnings per Test
// Connection).
func (c *Conn) invalid(kind string, err error, data []byte, n int) {
	field := ""
	if pe, ok := err.(*PDUError); ok {
		field = pe.Field
	}
	load := kind == "load"
	switch {
	case field == "length" && load:
		c.counts[CountLoadInvalidSize]++
	case field == "length":
		c.counts[CountStatusInvalidSize]++
	case field == "checkSum" && load:
		c.counts[CountLoadInvalidChecksum]++
	case field == "checkSum":
		c.counts[CountStatusInvalidChecksum]++
	case load:
		c.counts[CountLoadInvalidFormat]++
	default:
		c.counts[CountStatusInvalidFormat]++
	}
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
func (c *Conn) implausible(why uint8) {
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
			c.pl.discarded, kind, implausibleText[c.pl.why])})
}
