package dataphase

import "github.com/udpstp/udpstp/clock"

func (c *Conn) pollLoad(now clock.Pair, b *SendBuffer) bool {
	var bu burst
	switch {
	case c.confirm:
		// One datagram carrying the stop action (OB-UDPST: a Burst of
		// size 1), then the end.
		bu = c.confirmBurst()
	default:
		var ok bool
		if c.amp.on {
			pending := c.snd.deferredBytes()
			c.snd.sizeCap = c.amp.sizeCap(c.snd.deferN)
			bu, ok = c.snd.fire(now.Mono, c.stopping)
			if ok && bu.count() > 0 && !c.ampFits(bu, pending) {
				c.counts[CountAmpHeld]++
				bu = burst{} // the firing passes: the budget is spent
			}
		} else {
			bu, ok = c.snd.fire(now.Mono, c.stopping)
		}
		if (!ok || bu.count() == 0) && c.snd.deferN == 0 {
			return false
		}
	}
	if c.stopping && c.p.Server {
		c.action = ActionStop2
	}
	c.trafficCheck(now.Mono)
	c.pl.sample(now.Mono)
	h := LoadHeader{
		TestAction:   c.action,
		SpduSeqErr:   c.spduSeqErr,
		SpduTimeSec:  c.echoSec,
		SpduTimeNsec: c.echoNsec,
		RTTRespDelay: c.respDelay(now.Mono),
	}
	if c.rxStopped {
		h.RxStopped = 1
	}
	lpdu := now.Wall
	if c.amp.shifting() {
		lpdu -= c.amp.shiftNs // the clock proof's secret (amplification.go)
	}
	h.LpduTimeSec, h.LpduTimeNsec = clock.Split(lpdu)
	n := c.snd.write(b, bu, &h)
	if c.confirm {
		c.confirm = false
		c.end(c.closeReason)
	}
	return n > 0
}

// ampFits reports whether Burst bu may go before validation, with pending
// bytes deferred from an earlier plan (amplification.go).
func (c *Conn) ampFits(bu burst, pending int64) bool {
	if c.snd.sizeCap == 0 || c.amp.nSizes+c.snd.deferN+bu.count() > maxUnvalidated {
		return false
	}
	b := pending + int64(bu.n)*int64(bu.payload)
	if bu.addon != 0 {
		b += int64(bu.addon)
	}
	return b <= c.amp.budget()
}

// confirmBurst is the one datagram that carries a client's stop action.
func (c *Conn) confirmBurst() burst {
	for t := range c.snd.tx {
		if c.snd.interval(t) > 0 {
			if bu := c.snd.burstOf(t, true); bu.count() > 0 {
				return bu
			}
		}
	}
	return burst{n: 1, payload: DefaultPayload}
}

func (c *Conn) onLoad(data []byte, d *InDatagram, pair clock.Pair) {
	var h LoadHeader
	if err := h.DecodeProto(data, c.p.proto()); err != nil {
		c.invalid(loadPDU, err, data, d.Len)
		return
	}
	if int(h.UDPPayload) != d.Len {
		// OB-UDPST counts the claim without comparing it: its senders
		// always write the real length (each datagram's size, GSO
		// segments included), so
		// a mismatch is a broken or lying sender, and its PDU is invalid
		// here, counted as a size error. Nothing that interoperates sends
		// one; a lying sender's datagrams still count for policing.
		c.invalid(loadPDU, errLoadLength, data, d.Len)
		return
	}
	if c.amp.nEcho > 0 {
		// An echo of a Status PDU sent before validation: the peer got
		// it. Its secret nanoseconds map back to the true send time for
		// the round-trip time.
		if t, ok := c.amp.echoed(clock.Join(h.SpduTimeSec, h.SpduTimeNsec)); ok {
			c.amp.on = false
			h.SpduTimeSec, h.SpduTimeNsec = clock.Split(t)
		}
	}
	if c.p.Server {
		if h.TestAction != ActionTest {
			// The client's confirmation, or its own stop: done.
			c.end(c.peerStopped())
			return
		}
		if !c.stopping {
			c.watchdogAt = d.Time + clock.Time(Watchdog)
		}
	} else {
		if c.action != ActionTest || c.confirm {
			return // stopping: further Load PDUs are ignored
		}
		if h.TestAction != ActionTest {
			c.serverStopped(d.Time)
			c.action = h.TestAction
			c.confirm, c.closeReason = true, EndStopped
			return
		}
		if why := c.pl.load(&h, d.Time, c.rcv.last, c.rcv.lastEcho); why != implOK {
			c.implausible(why) // no sign of life either
			return
		}
		c.watchdogAt = d.Time + clock.Time(Watchdog)
	}
	c.seen(d.Time, h.RxStopped)
	if e := c.rcv.onLoad(&h, pair.WallAt(d.Time), d.TOS, d.HasTOS); e != 0 {
		c.counts[CountRemoteStatusLoss] += uint64(e)
		if c.canWarn(false) {
			c.warn(WarnRemoteStatusLoss, "REMOTE WARNING: Incoming status feedback messages lost ("+seqErrText(e)+")", false)
		}
	}
}
