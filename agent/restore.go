package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/udpstp/udpstp/store"
)

// restoreWindow is how many of a test's newest results Restore reads for
// its gauges: enough for each of its servers and directions.
const restoreWindow = 50

// Restore picks up where a stopped agent left off, from the store: the
// gauges of each configured test's last results (so that a restart does
// not blank /metrics), and, for a cron schedule, the slots that passed
// while the agent was not running, stored as one missed result. A
// memoryless schedule has no slots to miss: its next one is drawn at
// start.
func (a *Agent) Restore(ctx context.Context) error {
	now := a.now()
	cfg := a.cfg.Load()
	for _, t := range cfg.Tests {
		rows, err := a.o.Store.List(ctx, store.Filter{Test: t.Name, Limit: restoreWindow})
		if err != nil {
			return fmt.Errorf("agent: reading the last results of %s: %w", t.Name, err)
		}
		for i := len(rows) - 1; i >= 0; i-- { // oldest first: the newest sets last
			a.m.restore(&rows[i])
		}
		c, ok := t.Schedule.(*Cron)
		if !ok || len(rows) == 0 {
			continue
		}
		first := c.Next(rows[0].Start, nil)
		var last time.Time
		n := 0
		s := first
		for ; now.Sub(s) > cfg.Tolerance && n < 100000; s = c.Next(s, nil) {
			last = s
			n++
		}
		if n > 0 {
			// Its start is the last slot missed, so that the next start
			// counts from there.
			a.missed(ctx, t, last, fmt.Sprintf("missed: %d slot(s) from %s to %s passed while the agent was not running",
				n, first.Format(time.RFC3339), last.Format(time.RFC3339)))
		}
		if !s.After(now) {
			// A slot passed within the tolerance (the agent restarted
			// just after it): Run keeps it, late, rather than drawing the
			// next one from now and dropping it silently.
			a.resumeMu.Lock()
			a.resume[t.Name] = s
			a.resumeMu.Unlock()
		}
	}
	return nil
}
