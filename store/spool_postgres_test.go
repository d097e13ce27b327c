//go:build !small

package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/pgtest"
)

// TestSpoolPostgresOutage: three agents, each with its own SQLite spool
// and its own connection to one PostgreSQL, write results before, during
// and after an outage of the cluster (pgtest's Stop and Start): no Put
// fails, results wait while it is down, and after it is back every result
// is in PostgreSQL once, none twice, none missing.
func TestSpoolPostgresOutage(t *testing.T) {
	c := pgtest.Start(t)
	outage := pgtest.Outage(t)
	ctx := context.Background()
	db := c.NewDatabase(t)
	dir := t.TempDir()

	const agents = 3
	var spools [agents]*Spool
	for i := range spools {
		local, err := Open(ctx, "sqlite:"+filepath.Join(dir, fmt.Sprintf("agent%d.db", i)))
		if err != nil {
			t.Fatal(err)
		}
		remote, err := Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewSpool(local, remote, SpoolOptions{Outbox: filepath.Join(dir, fmt.Sprintf("agent%d.outbox", i)),
			MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		spools[i] = s
		defer s.Close()
	}
	check, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	count := func() int {
		rs, err := check.List(ctx, Filter{})
		if err != nil {
			return -1
		}
		return len(rs)
	}

	// Each agent writes a result every 50 ms (a pace, not a wait for
	// anything), at most 2000, until stopped.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	written := map[string]bool{}
	for a, s := range spools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for i := range 2000 {
				r := &Result{ID: fmt.Sprintf("00000000-0000-7000-8000-%04d%08d", a, i), Origin: OriginClient,
					Agent: fmt.Sprintf("agent%d", a), Start: time.Now(), Status: StatusOK}
				if err := s.Put(ctx, r); err != nil {
					t.Errorf("agent %d: Put: %v", a, err)
					return
				}
				mu.Lock()
				written[r.ID] = true
				mu.Unlock()
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
	}
	var once sync.Once
	halt := func() { once.Do(func() { close(stop) }); wg.Wait() }
	defer halt() // before the spools close, also when the test fails
	await.True(t, "results uploaded before the outage", func() bool { return count() >= 3*agents })
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	await.True(t, "every agent's results waiting", func() bool {
		for _, s := range spools {
			if s.Pending() == 0 || s.RemoteUp() {
				return false
			}
		}
		return true
	})
	// The outage itself: time passing while the agents write.
	time.Sleep(time.Until(stopped.Add(outage)))
	waiting := 0
	for _, s := range spools {
		waiting += s.Pending()
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("PostgreSQL down for %v; %d results waited", time.Since(stopped).Round(time.Millisecond), waiting)
	before := count()
	await.True(t, "uploads after the outage", func() bool { return count() > before })
	halt()
	for i, s := range spools {
		fctx, cancel := context.WithTimeout(ctx, await.Deadline)
		if err := s.Flush(fctx); err != nil {
			t.Fatalf("agent %d: %v", i, err)
		}
		cancel()
	}

	rs, err := check.List(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range rs {
		seen[r.ID]++
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s in PostgreSQL %d times", id, n)
		}
		if !written[id] {
			t.Errorf("%s in PostgreSQL, never written", id)
		}
	}
	for id := range written {
		if seen[id] == 0 {
			t.Errorf("%s lost", id)
		}
	}
	if len(rs) != len(written) || waiting == 0 {
		t.Errorf("%d rows for %d results written, %d waited", len(rs), len(written), waiting)
	}
	t.Logf("%d results from %d agents, each in PostgreSQL once", len(written), agents)
}
