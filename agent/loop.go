package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
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
	retryCtx, stopRetry := context.WithCancel(context.WithoutCancel(ctx))
	retried := make(chan struct{})
	go func() { defer close(retried); a.retry(retryCtx) }()
	defer func() { stopRetry(); <-retried }() // after the tests' results
	defer func() {
		a.stopMu.Lock()
		a.stopped = true
		a.stopMu.Unlock()
		a.runNows.Wait()
	}()
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
				a.resumeMu.Lock()
				if at, ok := a.resume[t.Name]; ok {
					fresh[t] = at
				}
				delete(a.resume, t.Name)
				a.resumeMu.Unlock()
			}
		}
		next = fresh
		a.publishNext(cfg, next)
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

// publishNext logs each test's next slot when it changed (at start, after
// each run, at a reload) and sets /metrics' gauge, so that whoever tries
// the agent knows when it tests next (docs/agent.md).
func (a *Agent) publishNext(cfg *Config, next map[*Test]time.Time) {
	byName := make(map[string]time.Time, len(next))
	for _, t := range cfg.Tests {
		byName[t.Name] = next[t]
	}
	a.nextMu.Lock()
	last := a.nextRuns
	a.nextRuns = byName
	a.nextMu.Unlock()
	for _, t := range cfg.Tests {
		at := byName[t.Name]
		if prev, ok := last[t.Name]; !ok || !prev.Equal(at) {
			a.o.Log.Info("next test", "test", t.Name, "at", at.Format(time.RFC3339), "in", at.Sub(a.now()).Round(time.Second), "schedule", t.Schedule.String())
		}
	}
	a.m.setNext(byName)
}

// NextRuns are the next slots of the scheduled tests, by name (none
// before Run starts).
func (a *Agent) NextRuns() map[string]time.Time {
	a.nextMu.Lock()
	defer a.nextMu.Unlock()
	return maps.Clone(a.nextRuns)
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
	if why := a.deferWhileBusy(ctx, cfg, t); why != "" { // crosstraffic.go
		a.missed(ctx, t, at, why)
		return
	}
	defer a.markInFlight(t, t.Schedule.String())() // before the log line: a kill after it is seen
	a.o.Log.Info("test", "test", t.Name, "schedule", t.Schedule.String())
	a.runTest(ctx, t)
}

func (a *Agent) draw(t *Test, now time.Time) time.Time {
	a.randMu.Lock()
	defer a.randMu.Unlock()
	return t.Schedule.Next(now, a.o.Rand).Round(0)
}

// RunNow starts test name at once, in the background: ErrBusy while
// another test runs. The test ends with Run's context, and Run waits for
// it: its result is stored before the agent stops.
func (a *Agent) RunNow(name string) error {
	ctx := context.Background()
	if p := a.base.Load(); p != nil {
		ctx = *p
	}
	t := a.test(name)
	if t == nil {
		return fmt.Errorf("agent: no test %q", name)
	}
	a.stopMu.Lock()
	defer a.stopMu.Unlock()
	if a.stopped {
		return errors.New("agent: stopping")
	}
	if !a.tryLock(name) {
		return fmt.Errorf("%w (%s)", ErrBusy, a.Running())
	}
	a.runNows.Add(1)
	go func() {
		defer a.runNows.Done()
		defer a.unlock()
		defer a.markInFlight(t, "run now")()
		a.o.Log.Info("test", "test", name, "schedule", "run now")
		a.runTest(ctx, t)
	}()
	return nil
}
