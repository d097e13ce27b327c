package engine

import (
	"log/slog"

	"github.com/udpstp/udpstp/dataphase"
)

// coreState is one Test Connection's core, the way its events leave, and
// what an executor must know of how it ends. Both executors embed it (Conn
// and PoolConn), so that delivering, failing and abandoning a core read
// the same in both: whatever happens to the core or its thread, onEvent
// gets exactly one EvEnd, the last event.
type coreState struct {
	sock    *Socket
	core    Core
	onEvent func(dataphase.Event)

	stopped      bool         // core.Stop was called
	worked       bool         // the last service sent, read or reported something
	bp           backpressure // what its last send attempt ran into (sendPlans)
	endDelivered bool         // an EvEnd went to onEvent
	failed       bool         // core.Fail was called: the executor ends it even if the core does not
}

// deliver hands the core's events to onEvent.
func (s *coreState) deliver() {
	for _, ev := range s.core.Events() {
		s.worked = true
		if ev.Kind == dataphase.EvEnd {
			s.endDelivered = true
		}
		s.onEvent(ev)
	}
}

// fail ends the core after a socket error and delivers its last events.
func (s *coreState) fail(log *slog.Logger, err error) {
	log.Error("engine: socket failure", "local", s.sock.LocalAddr(), "peer", s.sock.Peer(), "err", err)
	s.failed = true
	s.core.Fail(err)
	s.deliver()
}

// abandon ends the core with err where its own work can no longer be
// trusted (it panicked, its thread failed, its pool closed before it
// started): Fail and the delivery each guarded, then an EvEnd made up
// with EndFailure if none went out. It never panics.
func (s *coreState) abandon(err error) {
	if !s.failed {
		s.failed = true
		if protect(func() { s.core.Fail(err) }) {
			protect(s.deliver)
		}
	}
	s.ensureEnd()
}

// ensureEnd delivers a made-up EvEnd with EndFailure unless an EvEnd went
// out already: whoever waits for the end (the server's Admission) must
// hear of it.
func (s *coreState) ensureEnd() {
	if s.endDelivered {
		return
	}
	s.endDelivered = true
	protect(func() { s.onEvent(dataphase.Event{Kind: dataphase.EvEnd, End: dataphase.EndFailure}) })
}

// protect runs f and reports whether it returned without panicking.
func protect(f func()) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	f()
	return true
}
