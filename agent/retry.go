package agent

// Results the store refused (a full disk, a locked or damaged SQLite
// file, a table gone): kept in memory, oldest first, and written again
// with a backoff until the store takes them, never lost while the agent
// runs. Meanwhile Health (and /healthz) is an error; each result is
// logged when it is kept, the recovery once. At the stop, one last try;
// what still fails is logged with its ID (docs/agent.md, "Health").

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/udpstp/udpstp/store"
)

// Bounds of the retries: the backoff between tries, and how many results
// wait in memory (a test stores at most one result a minute, so this is
// days of a broken store); past it the oldest is dropped, logged.
const (
	retryMinBackoff = time.Second
	retryMaxBackoff = 30 * time.Second
	maxKept         = 10000
)

// keep queues r, which the store refused with err, for the retries.
func (a *Agent) keep(r *store.Result, err error) {
	a.keptMu.Lock()
	defer a.keptMu.Unlock()
	if len(a.kept) >= maxKept {
		old := a.kept[0]
		a.kept = a.kept[1:]
		a.o.Log.Error("result lost: too many results wait for the store", "id", old.ID, "test", old.Test, "waiting", maxKept)
	}
	a.kept = append(a.kept, r)
	a.keptErr = err
	a.o.Log.Error("result not stored; kept and retried, /healthz is 503 until the store takes it", "id", r.ID, "test", r.Test, "err", err)
	select {
	case a.keptWake <- struct{}{}:
	default:
	}
}

// retry writes the kept results until ctx ends, then tries once more.
func (a *Agent) retry(ctx context.Context) {
	backoff := time.Duration(0)
	timer := time.NewTimer(0)
	<-timer.C
	defer timer.Stop()
	for {
		if a.flushKept(ctx) {
			backoff = 0
			select {
			case <-ctx.Done():
				return
			case <-a.keptWake:
				continue
			}
		}
		backoff = min(max(2*backoff, retryMinBackoff), retryMaxBackoff)
		timer.Reset(backoff)
		select {
		case <-ctx.Done():
			if !a.flushKept(context.Background()) {
				a.keptMu.Lock()
				for _, r := range a.kept {
					a.o.Log.Error("result lost: the store refused it until the agent stopped", "id", r.ID, "test", r.Test, "err", a.keptErr)
				}
				a.keptMu.Unlock()
			}
			return
		case <-timer.C:
		}
	}
}

// flushKept writes the kept results, oldest first, and says whether none
// is left.
func (a *Agent) flushKept(ctx context.Context) bool {
	for {
		a.keptMu.Lock()
		if len(a.kept) == 0 {
			a.keptMu.Unlock()
			return true
		}
		r := a.kept[0]
		a.keptMu.Unlock()
		if err := a.put(ctx, r); err != nil {
			a.keptMu.Lock()
			a.keptErr = err
			a.keptMu.Unlock()
			return false
		}
		a.keptMu.Lock()
		a.kept = a.kept[1:]
		empty := len(a.kept) == 0
		if empty {
			a.keptErr = nil
		}
		a.keptMu.Unlock()
		a.logStored(r)
		if empty {
			a.o.Log.Info("the store takes results again; every kept result is stored")
		}
	}
}

// Health is nil while results are stored, else why not: results kept
// because the store refused them, or the store's own trouble (a spool
// whose remote has failed for long, store.Spool.Health).
func (a *Agent) Health() error {
	var errs []error
	a.keptMu.Lock()
	if n := len(a.kept); n > 0 {
		errs = append(errs, fmt.Errorf("%d result(s) not stored, retried: %w", n, a.keptErr))
	}
	a.keptMu.Unlock()
	if h, ok := a.o.Store.(interface{ Health() error }); ok {
		if err := h.Health(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
