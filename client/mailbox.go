package client

import "sync"

// mailbox hands values from any goroutine (an Engine Thread, a setup, a
// half of a bidirectional run) to the one goroutine that waits on its
// signal and drains it. post never blocks; values are a few a second,
// never one per datagram.
type mailbox[T any] struct {
	mu     sync.Mutex
	queue  []T
	signal chan struct{} // has a value once something was posted since the last wait
}

func newMailbox[T any]() *mailbox[T] { return &mailbox[T]{signal: make(chan struct{}, 1)} }

func (m *mailbox[T]) post(v T) {
	m.mu.Lock()
	m.queue = append(m.queue, v)
	m.mu.Unlock()
	select {
	case m.signal <- struct{}{}:
	default:
	}
}

// drain takes what was posted, in order.
func (m *mailbox[T]) drain() []T {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue
	m.queue = nil
	return q
}
