package control

// Drain: a server asked to stop gently (SIGTERM under systemd or
// Kubernetes) stops admitting and lets the tests it runs finish. A new
// Setup Request is then answered with code 13 (CONNFAIL), the answer
// OB-UDPST 9.0.0 gives when it has no connection left for a test ("Max
// connections exceeded", ErrorStatus 113): the busy server's answer,
// which every client already knows and on which ours tries the next
// server it was given (docs/fleet.md).

// SetupDraining is the Setup Response code of a draining server.
const SetupDraining = SetupConnFail

// Drain stops admitting: from now on every Setup Request that passes its
// checks is refused with SetupDraining, and Drained is closed once no
// Test Connection is left, pending or running. Running tests go on to
// their normal end. Serve still has to be stopped by its context.
func (s *Server) Drain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining.Load() {
		return
	}
	s.draining.Store(true)
	s.checkDrainedLocked()
}

// Draining reports whether Drain was called.
func (s *Server) Draining() bool { return s.draining.Load() }

// Drained is closed once the server drains and has no Test Connection
// left.
func (s *Server) Drained() <-chan struct{} { return s.drained }

// checkDrainedLocked closes drained when the server drains and nothing
// runs; the caller holds s.mu.
func (s *Server) checkDrainedLocked() {
	if s.draining.Load() && len(s.active) == 0 {
		s.drainOnce.Do(func() { close(s.drained) })
	}
}
