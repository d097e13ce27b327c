package agent

import (
	"context"
	"fmt"
	"time"
)

// maxSleep bounds one wait of the schedule loop: Go's timers run on the
// monotonic clock, which stands still while the machine is suspended, so a
// slot slept through is seen (and stored as missed) within this of the
// resume. Each wake of an idle Go process costs some 60 context switches of
// the runtime's monitor thread, so the bound is minutes, not seconds; with
// no test scheduled the loop sets no timer at all.
const maxSleep = 5 * time.Minute

// Run runs the schedules until ctx ends. Each test's next slot is a
// wall-clock time; a slot the loop reaches more than the tolerance late
// (the machine slept, the agent was busy with a long test) is stored as
// missed, and the test's next slot drawn from now.
func (a *Agent) Run(ctx context.Context) error {
	a.base.Store(&ctx)
	next := map[*Test]time.Time{}
	type kept struct {
		at       time.Time
		schedule string
	}
	byName := map[string]kept{}
	timer := time.NewTimer(0)
	<-timer.C
	defer timer.Stop()
	for {
		cfg := a.cfg.Load()
		now := a.now()
		// A reload keeps the slots of the tests it keeps by name.
		fresh := map[*Test]time.Time{}
		for _, t := range cfg.Tests {
			switch s, ok := next[t]; {
			case ok:
				fresh[t] = s
			case byName[t.Name].schedule == t.Schedule.String():
				fresh[t] = byName[t.Name].at
			default:
				fresh[t] = a.draw(t, now)
			}
		}
		next = fresh
		clear(byName)
		var due *Test
		for _, t := range cfg.Tests {
			byName[t.Name] = kept{next[t], t.Schedule.String()}
			if due == nil || next[t].Before(next[due]) {
				due = t
			}
		}
		if due == nil {
			// Nothing scheduled: wait for a reload (or the end) only.
			a.sleeps.Add(1)
			select {
			case <-ctx.Done():
				return nil
			case <-a.reload:
			}
			continue
		}
		if wait := min(next[due].Sub(now), maxSleep); wait > 0 {
			timer.Reset(wait)
			a.sleeps.Add(1)
			select {
			case <-ctx.Done():
				return nil
			case <-a.reload:
				if !timer.Stop() {
					<-timer.C
				}
			case <-timer.C:
			}
			continue
		}
		a.slot(ctx, cfg, due, next[due])
		if ctx.Err() != nil {
			return nil
		}
		next[due] = a.draw(due, a.now())
	}
}

// slot keeps or misses one slot of t.
func (a *Agent) slot(ctx context.Context, cfg *Config, t *Test, at time.Time) {
	if late := a.now().Sub(at); late > cfg.Tolerance {
		a.o.Log.Warn("slot missed", "test", t.Name, "slot", at, "late", late)
		a.missed(ctx, t, at, fmt.Sprintf("missed: the agent reached this slot %s late (the machine was asleep or the agent stopped)", late.Round(time.Second)))
		return
	}
	if err := a.waitLock(ctx, t.Name); err != nil {
		return
	}
	defer a.unlock()
	if late := a.now().Sub(at); late > cfg.Tolerance {
		a.missed(ctx, t, at, fmt.Sprintf("missed: another test held the agent for %s past this slot", late.Round(time.Second)))
		return
	}
	a.o.Log.Info("test", "test", t.Name, "schedule", t.Schedule.String())
	a.runTest(ctx, t)
}

func (a *Agent) draw(t *Test, now time.Time) time.Time {
	a.randMu.Lock()
	defer a.randMu.Unlock()
	return t.Schedule.Next(now, a.o.Rand).Round(0)
}

// RunNow starts test name at once, in the background: ErrBusy while
// another test runs. The test ends with Run's context.
func (a *Agent) RunNow(name string) error {
	ctx := context.Background()
	if p := a.base.Load(); p != nil {
		ctx = *p
	}
	t := a.test(name)
	if t == nil {
		return fmt.Errorf("agent: no test %q", name)
	}
	if !a.tryLock(name) {
		return fmt.Errorf("%w (%s)", ErrBusy, a.Running())
	}
	go func() {
		defer a.unlock()
		a.o.Log.Info("test", "test", name, "schedule", "run now")
		a.runTest(ctx, t)
	}()
	return nil
}
