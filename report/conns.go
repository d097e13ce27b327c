package report

import (
	"sort"

	"github.com/udpstp/udpstp/dataphase"
)

// Per-connection figures, ours (OB-UDPST's JSON has only the aggregate):
// each Test Connection's Sub-Interval capacity and sequence errors, and,
// where this end sends the load, the sending rate row the search had
// reached. They go under the "udpstp" key as "Connections" (see
// Collector.Add), one object per Test Connection with one array per
// figure, so that a 24-connection hour at 100 ms stays a few megabytes.
// They exist for plots of a multi-connection test and of the search
// (`udpstp plot`); a single-connection downstream test, where the
// aggregate says it all, does not carry them.

// connSeries is one Test Connection's Sub-Intervals.
type connSeries struct {
	capacity       []float64 // L3 Mbps
	loss, ooo, dup []uint32
	rateMbps       []float64 // nominal L3 Mbps of the row, 0 when unknown
	rateRow        []int     // row index, -1 when unknown or not in our table
	rateSet        bool      // some Sub-Interval had the row (this end sends the load)
}

// addConn records connection conn's Sub-Interval n (l3 is its capacity).
func (r *results) addConn(conn int, rec *record, l3 float64, sr *dataphase.SubIntervalResult) {
	if r.conns == nil {
		r.conns = map[int]*connSeries{}
	}
	s := r.conns[conn]
	if s == nil {
		s = &connSeries{}
		r.conns[conn] = s
	}
	s.capacity = append(s.capacity, l3)
	s.loss, s.ooo, s.dup = append(s.loss, rec.loss), append(s.ooo, rec.ooo), append(s.dup, rec.dup)
	mbps, row := 0.0, -1
	if sr.SendRateSet {
		s.rateSet = true
		mbps, row = sr.SendRate.L3Mbps(r.info.IPv6), r.rowIndex(sr.SendRate)
	}
	s.rateMbps, s.rateRow = append(s.rateMbps, mbps), append(s.rateRow, row)
}

// rowIndex is the index of row in the Sending Rate Table the test's -j and
// -T select, or -1 when it is not there (a server with another table).
func (r *results) rowIndex(row dataphase.SendingRate) int {
	if r.rows == nil {
		r.rows = dataphase.RowIndexes(dataphase.BuildRateTable(dataphase.TableOptions{NoJumbo: !r.info.Jumbo, TraditionalMTU: r.info.TraditionalMTU}))
	}
	if i, ok := r.rows[row]; ok {
		return i
	}
	return -1
}

// connsShown reports whether the document carries the per-connection
// figures: more than one connection, or a sending rate to show.
func (r *results) connsShown() bool {
	if len(r.conns) > 1 {
		return true
	}
	for _, s := range r.conns {
		if s.rateSet {
			return true
		}
	}
	return false
}

// connsArray renders "Connections": connection numbers from 1, as in the
// verbose text's "[i]" prefixes.
func (r *results) connsArray() jarr {
	ids := make([]int, 0, len(r.conns))
	for id := range r.conns {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	arr := make(jarr, 0, len(ids))
	for _, id := range ids {
		s := r.conns[id]
		o := &jobj{}
		o.int("Connection", int64(id+1))
		o.add("IPLayerCapacity", numArray(s.capacity, precPercent))
		o.add("LossCount", u32Array(s.loss))
		o.add("ReorderedCount", u32Array(s.ooo))
		o.add("ReplicatedCount", u32Array(s.dup))
		if s.rateSet {
			rows := make(jarr, len(s.rateRow))
			for i, v := range s.rateRow {
				rows[i] = jint(v)
			}
			o.add("SendingRateIndex", rows)
			o.add("SendingRateMbps", numArray(s.rateMbps, precPercent))
		}
		arr = append(arr, o)
	}
	return arr
}

func numArray(v []float64, p int) jarr {
	a := make(jarr, len(v))
	for i, x := range v {
		a[i] = jnum{x, p}
	}
	return a
}

func u32Array(v []uint32) jarr {
	a := make(jarr, len(v))
	for i, x := range v {
		a[i] = jint(int64(x))
	}
	return a
}
