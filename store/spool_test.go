package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
)

// memStore is a Store in memory whose every call fails while down: the
// remote a spool test takes down. It counts the Puts that stored a row,
// in the order they came.
type memStore struct {
	mu     sync.Mutex
	down   bool
	rows   map[string]Result
	stored []string // IDs in the order their first Put came
	fails  int      // calls refused while down
}

func newMemStore() *memStore { return &memStore{rows: map[string]Result{}} }

var errDown = errors.New("memStore: down")

func (m *memStore) setDown(d bool) { m.mu.Lock(); m.down = d; m.mu.Unlock() }

func (m *memStore) check() error {
	if m.down {
		m.fails++
		return errDown
	}
	return nil
}

func (m *memStore) Put(_ context.Context, r *Result) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(); err != nil {
		return err
	}
	if _, ok := m.rows[r.ID]; !ok {
		m.rows[r.ID] = *r
		m.stored = append(m.stored, r.ID)
	}
	return nil
}

func (m *memStore) Get(_ context.Context, id string) (*Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(); err != nil {
		return nil, err
	}
	r, ok := m.rows[id]
	if !ok {
		return nil, ErrNotFound
	}
	return &r, nil
}

func (m *memStore) List(_ context.Context, f Filter) ([]Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(); err != nil {
		return nil, err
	}
	var rs []Result
	for _, id := range m.stored {
		if r := m.rows[id]; f.Agent == "" || r.Agent == f.Agent {
			rs = append(rs, r)
		}
	}
	return rs, nil
}

func (m *memStore) Series(context.Context, Filter, string, int) ([]Point, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return nil, m.check()
}

func (m *memStore) Prune(context.Context, Retention) (int, error) { return 0, nil }

func (m *memStore) Fleet(context.Context, Filter) (*Fleet, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return &Fleet{}, m.check()
}

func (m *memStore) Close() error { return nil }

func (m *memStore) storedIDs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.stored)
}

func (m *memStore) failed() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fails
}

// fastSpool retries every few ms: the tests wait for events, not for the
// backoff.
func fastSpool(t *testing.T, local, remote Store, outbox string) *Spool {
	t.Helper()
	s, err := NewSpool(local, remote, SpoolOptions{Outbox: outbox, MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func spoolResult(agent string, i int) *Result {
	return &Result{ID: fmt.Sprintf("00000000-0000-7000-8000-%s%08d", agent, i), Origin: OriginClient, Agent: agent,
		Start: time.Unix(int64(i), 0), Status: StatusOK}
}

// TestSpoolOutage: three writers Put while the remote is down; every Put
// returns once the local store has the result, Pending counts them, reads
// come from the local store; when the remote is back, every result is
// uploaded once, each writer's in the order it wrote them.
func TestSpoolOutage(t *testing.T) {
	local, remote := newMemStore(), newMemStore()
	remote.setDown(true)
	s := fastSpool(t, local, remote, filepath.Join(t.TempDir(), "outbox"))
	defer s.Close()
	const writers, each = 3, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := s.Put(context.Background(), spoolResult(fmt.Sprintf("a%d", w), i)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if n := s.Pending(); n != writers*each {
		t.Fatalf("pending %d, want %d", n, writers*each)
	}
	await.True(t, "an upload refused", func() bool { return remote.failed() > 1 })
	if s.RemoteUp() {
		t.Error("remote up while down")
	}
	if rs, err := s.List(context.Background(), Filter{Agent: "a1"}); err != nil || len(rs) != each {
		t.Errorf("list while down: %d results, %v", len(rs), err)
	}
	remote.setDown(false)
	ctx, cancel := context.WithTimeout(context.Background(), await.Deadline)
	defer cancel()
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	ids := remote.storedIDs()
	if len(ids) != writers*each || s.Pending() != 0 {
		t.Fatalf("%d uploaded, %d pending", len(ids), s.Pending())
	}
	last := map[string]string{}
	for _, id := range ids {
		agent := id[24:26]
		if id <= last[agent] {
			t.Errorf("%s uploaded after %s", id, last[agent])
		}
		last[agent] = id
	}
	if fi, err := os.Stat(s.opt.Outbox); err != nil || fi.Size() != 0 {
		t.Errorf("outbox after the upload: %v %v", fi, err)
	}
}

// TestSpoolRestart: what waits when the spool is closed is uploaded by
// the next one over the same local store and outbox.
func TestSpoolRestart(t *testing.T) {
	local, remote := newMemStore(), newMemStore()
	outbox := filepath.Join(t.TempDir(), "outbox")
	remote.setDown(true)
	s := fastSpool(t, local, remote, outbox)
	for i := range 5 {
		if err := s.Put(context.Background(), spoolResult("a0", i)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	remote.setDown(false)
	if len(remote.storedIDs()) != 0 {
		t.Fatal("uploaded while down")
	}
	s = fastSpool(t, local, remote, outbox)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), await.Deadline)
	defer cancel()
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if ids := remote.storedIDs(); len(ids) != 5 {
		t.Errorf("uploaded %v", ids)
	}
}

// TestSpoolOutboxCut: an outbox whose last line a crash cut short: a cut
// "p" line is a Put that never returned (dropped), a cut "a" line an
// acknowledgement not recorded (uploaded again); IDs without a local row
// are dropped.
func TestSpoolOutboxCut(t *testing.T) {
	for _, tc := range []struct {
		outbox string
		want   []string
	}{
		{"p A\np B\na A\np C", []string{"B"}},
		{"p A\np B\na A\na B", []string{"B"}},
		{"p A\np B\na A\na B\n", nil},
		{"p A\np B\np A\n", []string{"A", "B"}},
		{"", nil},
	} {
		p := filepath.Join(t.TempDir(), "outbox")
		os.WriteFile(p, []byte(tc.outbox), 0o600)
		q, bad, err := readOutbox(p)
		if err != nil || len(bad) != 0 || !slices.Equal(q, tc.want) {
			t.Errorf("%q: %v %v, want %v", tc.outbox, q, err, tc.want)
		}
	}
}
