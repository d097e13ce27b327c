package client

import (
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/report"
)

// The report's Sub-Interval figures (report.Options.OnInterval) become
// events after the report call that produced them returns, in the order
// the report produced them: an aggregate a connection's result completed
// comes before that connection's own.

// onInterval is the report's hook; it runs under the report's lock, on the
// run's goroutine, so it only queues.
func (r *run) onInterval(iv report.Interval) { r.intervals = append(r.intervals, iv) }

// emitIntervals emits the queued figures: aggregates as EventAggregate,
// connection c's as its EventSubInterval with sub, the Data Phase's result
// (c nil: after a report call that takes no result). A result the report
// ignored still has its event, without Interval.
func (r *run) emitIntervals(c *connState, sub *dataphase.SubIntervalResult) {
	own := false
	for i := range r.intervals {
		iv := r.intervals[i]
		if iv.Conn < 0 {
			r.emit(Event{Kind: EventAggregate, Conn: -1, Interval: &iv})
			continue
		}
		if c != nil && iv.Conn == c.index && !own {
			own = true
			r.emit(Event{Kind: EventSubInterval, Conn: c.index, Server: c.server, SubInt: *sub, Interval: &iv})
		}
	}
	r.intervals = r.intervals[:0]
	if c != nil && !own {
		r.emit(Event{Kind: EventSubInterval, Conn: c.index, Server: c.server, SubInt: *sub})
	}
}
