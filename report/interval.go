package report

import "github.com/udpstp/udpstp/dataphase"

// Interval is one Sub-Interval as an IncrementalResult entry of the JSON
// holds it: the aggregate's, which is what OB-UDPST reports, or (ours) one
// Test Connection's own, computed the same way from its record alone. It
// is what Options.OnInterval receives, for a progress line or a stream of
// events; the report's own output is unchanged by it.
type Interval struct {
	// Conn is the Test Connection, from 0; -1 for the aggregate, the sum
	// of the connections.
	Conn int
	// Number is the Sub-Interval's number: the aggregate's (the text's
	// "Sub-Interval[n]"), or the connection's own count.
	Number int
	// Capacity is the Mbps(L3/IP) figure: for the aggregate the sum of the
	// connections'.
	Capacity float64
	// Loss, Ooo and Dup are the sequence errors.
	Loss, Ooo, Dup uint32
	// DelayVar and RTTVar are the one-way delay and round-trip time
	// variations in ms, minimum, average and maximum, as the text line
	// shows them.
	DelayVar, RTTVar [3]uint32
	// Active is the number of active Test Connections at the time.
	Active int
	// Fine are the delay variations to the µs (ours, fine.go); no
	// samples where this end is not the Load Receiver.
	Fine dataphase.FineDelays

	res intervalResult
}

func newInterval(conn, n int, rec *record, s shown, res intervalResult) Interval {
	return Interval{
		Conn: conn, Number: n, Capacity: res.Capacity,
		Loss: rec.loss, Ooo: rec.ooo, Dup: rec.dup,
		DelayVar: [3]uint32{s.dvMin, s.dvAvg, s.dvMax},
		RTTVar:   [3]uint32{s.rttMin, s.rttAvg, s.rttMax},
		Active:   res.Active,
		Fine:     rec.fine,
		res:      res,
	}
}

// connInterval is connection conn's Sub-Interval n as an IncrementalResult
// entry: its own record, capacity and minimum delay; no interface rate,
// which OB-UDPST reads for the aggregate only.
func (c *Collector) connInterval(conn, n int, wall int64, rec *record, l3 float64, r *dataphase.SubIntervalResult) Interval {
	var cd int32 // OB-UDPST's value before any in-order Load PDU is 0
	if r.ClockDeltaSet {
		cd = r.ClockDeltaMin
	}
	s := rec.shown()
	return newInterval(conn, n, rec, s, intervalResult{
		Interval: n, Seconds: float64(rec.accum) / 1000, Wall: wall, Active: c.active,
		Q: rec.quality(s), Capacity: l3,
		MinOneway: (float64(cd) + float64(s.dvMin)) / 1000,
	})
}
