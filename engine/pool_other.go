//go:build !linux || portable

package engine

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/udpstp/udpstp/dataphase"
)

// Off Linux there is no pool: Windows has no nanosecond readiness wait,
// and a macOS server that needs the scale has not come. A Pool runs each
// Test Connection on its own Engine Thread (RunConn), and sizes nothing.

// PoolSupported tells whether this platform has the pool: not off Linux.
const PoolSupported = false

// AllowedCPUs returns runtime.NumCPU as the affinity, and no quota.
func AllowedCPUs() CPULimit { return CPULimit{Affinity: runtime.NumCPU()} }

type poolSys struct {
	mu      sync.Mutex
	running map[*PoolConn]struct{}
	gone    sync.WaitGroup // Run's goroutines that take ended ones out
	turns   atomic.Uint64
	wakeups atomic.Uint64
}

// PoolConn is a Test Connection run by a Pool: off Linux, a Conn.
type PoolConn struct {
	c *Conn
}

// Stop asks the core to end (see Conn.Stop).
func (c *PoolConn) Stop() { c.c.Stop() }

// Done is closed after the last event was delivered (see Conn.Done).
func (c *PoolConn) Done() <-chan struct{} { return c.c.Done() }

// Stats returns the Conn's counters.
func (c *PoolConn) Stats() ConnStats { return c.c.Stats() }

// Run starts driving core over sock on a new Engine Thread of its own.
func (p *Pool) Run(sock *Socket, core Core, onEvent func(dataphase.Event)) *PoolConn {
	pc := &PoolConn{c: RunConn(sock, core, onEvent, p.opts.Log)}
	s := &p.sys
	s.mu.Lock()
	if s.running == nil {
		s.running = map[*PoolConn]struct{}{}
	}
	s.running[pc] = struct{}{}
	s.gone.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.gone.Done()
		<-pc.Done()
		st := pc.Stats()
		s.turns.Add(st.Turns)
		s.wakeups.Add(st.Wakeups)
		s.mu.Lock()
		delete(s.running, pc)
		s.mu.Unlock()
	}()
	return pc
}

// Stats returns a snapshot of the pool's counters; Threads counts the
// Test Connections' own threads.
func (p *Pool) Stats() PoolStats {
	s := &p.sys
	s.mu.Lock()
	defer s.mu.Unlock()
	st := PoolStats{MaxThreads: p.max, Threads: len(s.running), Conns: len(s.running),
		Turns: s.turns.Load(), Wakeups: s.wakeups.Load()}
	for pc := range s.running {
		cs := pc.Stats()
		st.Turns += cs.Turns
		st.Wakeups += cs.Wakeups
	}
	return st
}

// Close stops every running Test Connection and waits for their ends.
func (p *Pool) Close() {
	s := &p.sys
	s.mu.Lock()
	var all []*PoolConn
	for pc := range s.running {
		all = append(all, pc)
	}
	s.mu.Unlock()
	for _, pc := range all {
		pc.Stop()
	}
	for _, pc := range all {
		<-pc.Done()
	}
	// Their counters are added up and they are out of running when Close
	// returns, so that Stats after Close counts none.
	s.gone.Wait()
}
