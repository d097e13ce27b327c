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

	// refusedSeen is the socket's ECONNREFUSED count the core was last
	// told of (tellRefused).
	refusedSeen uint64
}

// newCoreState starts a core's state on sock; refusals the socket counted
// before (in the Control Phase) are not the core's.
func newCoreState(sock *Socket, core Core, onEvent func(dataphase.Event)) coreState {
	return coreState{sock: sock, core: core, onEvent: onEvent, refusedSeen: sock.refusals()}
}

// RefusalSink is implemented by a core that wants to hear of ICMP port
// unreachable errors on its socket (dataphase.Conn does: a peer that
// keeps refusing is gone). The executor calls PeerRefused on its thread,
// between the core's other calls, with the number of refusals since the
// last call.
type RefusalSink interface {
	PeerRefused(n int)
}

var _ RefusalSink = (*dataphase.Conn)(nil)

// tellRefused hands the core the refusals its socket counted since the
// last turn. It is an atomic load per turn; the interface check costs no
// allocation.
func (s *coreState) tellRefused() {
	r := s.sock.refusals()
	if r == s.refusedSeen {
		return
	}
	d := r - s.refusedSeen
	s.refusedSeen = r
	if rs, ok := s.core.(RefusalSink); ok {
		rs.PeerRefused(int(min(d, 1<<20)))
	}
}

// deliver tells the core of new refusals on its socket and hands its
// events to onEvent.
func (s *coreState) deliver() {
	s.tellRefused()
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
