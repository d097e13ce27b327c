package agent

import (
	"context"
	"slices"
	"sync"

	"github.com/udpstp/udpstp/store"
)

// memStore is a store for the runner's tests: Put and List, in memory.
type memStore struct {
	mu     sync.Mutex
	rows   []store.Result
	pruned []store.Retention // Prune's calls
}

func (m *memStore) Put(_ context.Context, r *store.Result) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows = append(m.rows, *r)
	return nil
}

func (m *memStore) Get(context.Context, string) (*store.Result, error) { return nil, store.ErrNotFound }

func (m *memStore) List(_ context.Context, f store.Filter) ([]store.Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.Result
	for _, r := range m.rows {
		if f.Test == "" || r.Test == f.Test {
			out = append(out, r)
		}
	}
	slices.Reverse(out)
	return out, nil
}

func (m *memStore) Series(context.Context, store.Filter, string, int) ([]store.Point, error) {
	return nil, nil
}
func (m *memStore) Prune(_ context.Context, r store.Retention) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pruned = append(m.pruned, r)
	return 0, nil
}
func (m *memStore) Fleet(context.Context, store.Filter) (*store.Fleet, error) { return nil, nil }
func (m *memStore) Close() error                                              { return nil }

func (m *memStore) all() []store.Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.rows)
}
