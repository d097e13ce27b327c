package control

// A Test Connection's lifetime on the server: its Test Activation, its
// Data Phase, its log lines and its release.

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"os"
	"sync/atomic"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
)

// serverConn is one Test Connection from Setup to end.
type serverConn struct {
	sock  Socket
	grant grant
	peer  netip.AddrPort // where the Setup Request came from
	seq   uint64         // the order of Setups, for the pending set
	at    time.Time      // when its Setup was accepted
	dp    DataPhase
	log   connLog
	// The Test Activation as the client asked it and as it was granted,
	// for the test's record (testrecord.go).
	requested, granted ActivationPDU

	// Under Server.mu: shutdown closed the socket before its Data Phase
	// started; a newer Setup evicted it while it awaited activation; its
	// reservation has been returned; it was activated (its source counts
	// it as running); its Data Phase saw the peer receive (its source is
	// trusted).
	closed, evicted, released, started, validated bool
}

// runConn waits for the Test Activation on the new socket, then runs the
// Data Phase and releases the Test Connection when it ends.
func (s *Server) runConn(sc *serverConn, req SetupPDU, keys SessionKeys) {
	defer s.wg.Done()
	// The Test Connection's ErrorStatus, kept as OB-UDPST keeps its
	// endTimeStatus: an unspecified error (255) until the stop handshake
	// completes, which declares success but keeps the last warning's code.
	var status atomic.Int32
	status.Store(statusUnspecified)
	defer s.releaseConn(sc, &status)
	legacy := req.ProtocolVer < AuthECNProtocolVer
	core, peer, ok := s.activate(sc, req, keys, legacy)
	if !ok {
		s.Counters.Add(CountActivationWait)
		return
	}
	if peer.Addr().Unmap() != sc.peer.Addr().Unmap() || peer.Port() != sc.peer.Port() {
		// Through a NAT that maps by destination the activation may come
		// from another port of the Setup's address (activate checked the
		// address).
		sc.log.log.Debug("test activation from another port than the setup", "setup_from", sc.peer, "activated_from", peer)
	}
	s.Counters.Add(CountActivated)
	running := &s.Counters.runningDown
	if !core.LoadSender() {
		running = &s.Counters.runningUp
	}
	running.Add(1)
	defer running.Add(-1)
	log := s.log.With("peer", peer, "setup_from", sc.peer, "test_port", sc.sock.LocalAddr().Port())
	sc.log.log = log
	w := &connWatch{s: s, sc: sc, core: core, log: log, status: &status,
		hdr: uint64(dataphase.L3Overhead(!IsIPv4(peer)))}
	if s.onTestEnd != nil {
		w.rec = newTestRecorder(sc, peer, req, !core.LoadSender())
	}
	s.mu.Lock()
	if sc.closed {
		// Shutdown closed the socket while the activation was answered:
		// there is nothing left to run the Data Phase on.
		s.mu.Unlock()
		return
	}
	sc.dp = s.net.RunDataPhase(sc.sock, core, w.event)
	s.mu.Unlock()
	log.Info("test started", "direction", direction(core))
	started := time.Now()
	<-sc.dp.Done()
	w.ended(started)
}

// releaseConn ends a Test Connection, activated or not: its socket, its
// place in the pending set and its source's count, its reservation, and,
// with -1, the server.
func (s *Server) releaseConn(sc *serverConn, status *atomic.Int32) {
	sc.sock.Close()
	s.mu.Lock()
	now := time.Now()
	if sc.started {
		s.pending.ended(sc, sc.validated, now)
	} else {
		s.pending.remove(sc, now)
	}
	if !sc.released {
		s.adm.release(sc.grant)
		sc.released = true
	}
	delete(s.active, sc)
	s.checkDrainedLocked()
	s.mu.Unlock()
	if s.cfg.OneTest {
		s.once.Do(func() {
			s.oneTest.Store(status.Load())
			close(s.ended)
		})
	}
}

// connWatch follows one running Test Connection's Data Phase events:
// the counters, the test's record, its source's trust, its ErrorStatus,
// its log lines. event runs on the executor's thread, ended on runConn's
// once the Data Phase is done.
type connWatch struct {
	s      *Server
	sc     *serverConn
	core   *dataphase.Conn
	log    *slog.Logger
	hdr    uint64        // the L3 overhead a Sub-Interval's rate counts
	status *atomic.Int32 // runConn's ErrorStatus
	rec    *testRecorder // the executor's until the Data Phase is done

	endReason atomic.Uint32
	// The highest Sub-Interval rate, for the line that ends the test; the
	// events come on the executor's thread, the line on runConn's.
	maxMbps   atomic.Uint64 // math.Float64bits
	validated bool          // read on the executor's thread only
}

// event takes one Data Phase event (dataphase.Event).
func (w *connWatch) event(ev dataphase.Event) {
	s, sc := w.s, w.sc
	s.countEvent(&ev, w.core.LoadSender())
	if w.rec != nil {
		w.rec.event(&ev)
	}
	if !w.validated && w.core.Validated() {
		// The peer showed it receives (dataphase/amplification.go):
		// its source is trusted (pending.go).
		w.validated = true
		s.mu.Lock()
		if !sc.validated {
			sc.validated = true
			s.pending.validated(sc)
		}
		s.mu.Unlock()
	}
	if ev.Kind == dataphase.EvSubInterval {
		if r := ev.SubInt.L3Mbps(w.hdr); r > math.Float64frombits(w.maxMbps.Load()) {
			w.maxMbps.Store(math.Float64bits(r))
		}
	}
	switch ev.Kind {
	case dataphase.EvEnd:
		w.endReason.Store(uint32(ev.End))
		// The stop handshake, whoever began it, ends the test as a
		// success for -1's exit status, as OB-UDPST's server does.
		handshake := ev.End == dataphase.EndStopped || ev.End == dataphase.EndLocalStop || ev.End == dataphase.EndPeerStop
		if handshake && w.status.Load() > dataphase.WarnMax {
			w.status.Store(0)
		}
	case dataphase.EvWarning:
		if ev.Code != dataphase.WarnError && ev.Code <= dataphase.WarnMax {
			w.status.Store(int32(ev.Code))
		}
		// OB-UDPST's warnings show with -v; our own errors (a policed
		// Load Sender, a socket failure) always do.
		if s.cfg.Verbose || ev.Code == dataphase.WarnError {
			sc.log.warn(ev.Text)
		}
	case dataphase.EvSubInterval:
		if s.cfg.Verbose && !s.cfg.NoSubInt {
			w.logSubInterval(&ev)
		}
	case dataphase.EvTrial:
		if s.cfg.Debug && ev.Trial.Index >= 0 {
			w.log.Debug("rate adjustment", "loss", ev.Trial.Loss, "rtt_var", int64(int32(ev.Trial.RTTVarSample)), "index", ev.Trial.Index)
		}
	}
}

// logSubInterval writes a Sub-Interval's line (-v).
func (w *connWatch) logSubInterval(ev *dataphase.Event) {
	st := &ev.SubInt.Stats
	sent := float64(st.RxDatagrams) + float64(st.SeqErrLoss)
	share := "delivered_pct"
	v := fmt.Sprintf("%.2f", 100*float64(st.RxDatagrams)/max(sent, 1))
	if w.s.cfg.LossRatio { // -r, as OB-UDPST's lines show it
		share, v = "loss_ratio", fmt.Sprintf("%.2E", float64(st.SeqErrLoss)/max(sent, 1))
	}
	w.log.Info("sub-interval", "n", ev.SubInt.Seq, "datagrams", st.RxDatagrams, "loss", st.SeqErrLoss,
		share, v, "mbps_l3", fmt.Sprintf("%.2f", ev.SubInt.L3Mbps(w.hdr)))
}

// ended hands the test's record over, counts its end and writes its last
// line, once its Data Phase (started then) is done.
func (w *connWatch) ended(started time.Time) {
	s, core := w.s, w.core
	r := dataphase.EndReason(w.endReason.Load())
	if w.rec != nil {
		// Off the Engine Threads: this goroutine only waited.
		w.rec.rec.Start, w.rec.rec.End = started, time.Now()
		w.rec.rec.ErrorStatus, w.rec.rec.EndReason = int(w.status.Load()), r
		s.onTestEnd(&w.rec.rec)
	}
	s.Counters.end(core.LoadSender(), r)
	// One line per test, never per datagram: who, which way, the highest
	// Sub-Interval rate (IP layer, as the receiving end counted it), the
	// ErrorStatus the test ends with (as -1 exits) and how long it ran.
	// The reason stays last, where the tests that read it look.
	w.log.Info("test ended", "direction", direction(core),
		"max_mbps_l3", fmt.Sprintf("%.2f", math.Float64frombits(w.maxMbps.Load())), "error_status", w.status.Load(),
		"duration", time.Since(started).Round(time.Millisecond), "reason", r.String())
}

// statusUnspecified is OB-UDPST's ErrorStatus for an unspecified error
// (its warnings are 1..dataphase.WarnMax).
const statusUnspecified = 255

func direction(c *dataphase.Conn) string {
	if c.LoadSender() {
		return "downstream"
	}
	return "upstream"
}

// activate takes the first valid Test Activation Request from the address
// the Setup Request came from within the setup timeout (awaitActivation),
// marks the Test Connection started, connects the socket to the request's
// sender, and answers (grantActivation). The address, not the port, binds
// the two: a NAT whose mapping depends on the destination (nftables
// `masquerade random`, many carrier-grade NATs) sends them from different
// ports.
func (s *Server) activate(sc *serverConn, req SetupPDU, keys SessionKeys, legacy bool) (*dataphase.Conn, netip.AddrPort, bool) {
	ta, taLen, n, from, ok := s.awaitActivation(sc, req, keys, legacy)
	if !ok {
		return nil, netip.AddrPort{}, false
	}
	// Activated: no longer evictable, unless a newer Setup evicted it
	// already.
	s.mu.Lock()
	gone := sc.evicted || sc.closed
	if !gone {
		s.pending.started(sc, time.Now())
		sc.started = true
		s.adm.activate(&sc.grant)
	}
	s.mu.Unlock()
	if gone {
		return nil, netip.AddrPort{}, false
	}
	if err := sc.sock.Connect(from); err != nil {
		sc.log.error("cannot connect test socket", "peer", from, "err", err)
		return nil, netip.AddrPort{}, false
	}
	core, ok := s.grantActivation(sc, req, keys, legacy, ta, taLen, n, from)
	return core, from, ok
}

// awaitActivation reads the test socket until the setup timeout for a
// Test Activation Request: well-formed, from the Setup's address, and
// authenticated when the Setup was. It returns the request, its length as
// received (n) and as decoded (taLen), and its sender. A Test Activation
// from anywhere else (a forged source: the Setup Response named the test
// port to its real sender only) is dropped and counted, so the Load stream
// cannot be aimed at a third party.
func (s *Server) awaitActivation(sc *serverConn, req SetupPDU, keys SessionKeys, legacy bool) (ta ActivationPDU, taLen, n int, from netip.AddrPort, ok bool) {
	deadline := time.Now().Add(SetupTimeout)
	buf := make([]byte, 2048)
	for {
		var err error
		n, from, err = sc.sock.RecvFrom(buf, deadline)
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				s.log.Debug("test socket closed before activation", "err", err)
			} else {
				if s.eps.note(epActivationTimeout, sc.peer.Addr(), time.Now()) {
					s.log.Info("no test activation within the setup timeout", "setup_from", sc.peer)
				}
			}
			return ta, 0, 0, netip.AddrPort{}, false
		}
		b := buf[:n]
		if preChecksum(req.ProtocolVer) { // protocols 8..10 (legacy.go)
			if w, ok := widenActivation(b); ok {
				b = w
			} else {
				b = b[:0] // not 56 bytes: dropped, as 7.x and 8.1 drop it
			}
		}
		ta = ActivationPDU{} // nothing of a dropped request stays
		taLen, err = ta.DecodeRequest(b, legacy)
		if err != nil {
			s.countInvalid(err)
			if s.log.Enabled(context.Background(), slog.LevelDebug) {
				s.log.Debug("invalid test activation dropped", "from", from, "err", err)
			}
			continue
		}
		s.Counters.Add(CountActivationRequests)
		if from.Addr().Unmap() != sc.peer.Addr().Unmap() {
			s.Counters.Add(CountActivationForeign)
			if s.eps.note(epActivationForeign, from.Addr(), time.Now()) {
				s.log.Warn("test activation dropped: not from the setup's address", "from", from,
					"setup_from", sc.peer, "test_port", sc.sock.LocalAddr().Port())
			}
			continue
		}
		if !legacy && req.AuthMode == AuthControl {
			// A failed check gets no answer at all, as OB-UDPST 9.0.0
			// answers none (the package doc).
			if c := VerifyRequest(b, keys, s.now()); c != 0 {
				s.countAuth(c)
				if s.eps.note(epActivationAuth, from.Addr(), time.Now()) {
					sc.log.error("test activation request failed authentication", "from", from, "code", c)
				}
				continue
			}
		}
		return ta, taLen, n, from, true
	}
}

// grantActivation coerces an accepted Test Activation Request to what the
// server grants, marks the connected socket, answers in the request's
// layout and builds the Data Phase. n is the request's size on the wire.
func (s *Server) grantActivation(sc *serverConn, req SetupPDU, keys SessionKeys, legacy bool, ta ActivationPDU,
	taLen, n int, from netip.AddrPort) (*dataphase.Conn, bool) {
	v4 := IsIPv4(from)
	recvTOS := true
	if ta.ECNCEThresh != 0 && !legacy {
		recvTOS = sc.sock.EnableRecvTOS(v4) == nil
	}
	sc.requested = ta
	Coerce(&ta, legacy, Limits{
		MaxTestTime: s.cfg.MaxTestTime, MaxDSCPECN: s.cfg.MaxDSCPECN,
		MaxRateIndex: s.cfg.MaxRateIndex, AllowRandom: s.cfg.AllowRandom,
	}, tableForProto(s.table, req.ProtocolVer), recvTOS)
	if ta.DSCPECN != 0 {
		// The response already goes out marked, as OB-UDPST 9.0.0
		// sends it (the Test Activation PDU of RFC 9946).
		if err := sc.sock.SetTOS(ta.DSCPECN, v4); err != nil {
			sc.log.warn("cannot set DSCP/ECN; granting 0", "err", err)
			ta.DSCPECN, ta.ECNCEThresh = 0, 0
		}
	}
	sc.granted = ta
	out := ta.Encode(make([]byte, ActivationLen), legacy)
	if len(out) == taLen {
		// Protocol 20 re-signs or clears the auth block; every
		// version clears the checksum the request carried (the
		// coerced values would no longer verify against it).
		answerAuth(out, req.ProtocolVer, ta.AuthMode, ta.KeyID, keys, false, s.now())
	} else {
		out = out[:taLen] // a short request: no auth block, no checksum field
	}
	if preChecksum(req.ProtocolVer) {
		out = out[:ActivationV8Len]
	}
	p := s.params(&ta, legacy, !v4, req.AuthMode)
	if preChecksum(req.ProtocolVer) {
		p.Proto, p.Table = req.ProtocolVer, tableForProto(s.table, req.ProtocolVer)
	}
	p.PeerBytesIn, p.PeerBytesOut = n, len(out) // the anti-amplification budget's start (dataphase/amplification.go)
	if err := sc.sock.Send(out); err != nil {
		sc.log.error("cannot send test activation response", "peer", from, "err", err)
		return nil, false
	}
	return dataphase.NewConn(p, clock.Now()), true
}

// params turns a coerced activation into the Data Phase's parameters.
func (s *Server) params(ta *ActivationPDU, legacy, ipv6 bool, authMode uint8) dataphase.Params {
	p := activationParams(ta, legacy)
	p.Server, p.IPv6, p.AuthMode = true, ipv6, authMode
	p.Table = s.table
	p.NoSeqRollback = s.cfg.NoSeqRollback
	p.PoliceOverRate = true
	var seed [8]byte
	rand.Read(seed[:])
	p.Seed = binary.LittleEndian.Uint64(seed[:])
	return p
}

// activationParams are the Data Phase parameters an accepted Test
// Activation (as the server granted it) stands for, on either end.
func activationParams(ta *ActivationPDU, legacy bool) dataphase.Params {
	p := dataphase.Params{
		Upstream:       ta.CmdRequest == ActivationUpstream,
		Legacy:         legacy,
		TestIntTime:    time.Duration(ta.TestIntTime) * time.Second,
		TrialInt:       time.Duration(ta.TrialInt) * time.Millisecond,
		SubIntPeriod:   time.Duration(ta.SubIntPeriod) * time.Millisecond,
		LowThresh:      uint32(ta.LowThresh),
		UpperThresh:    uint32(ta.UpperThresh),
		SeqErrThresh:   uint32(ta.SeqErrThresh),
		SlowAdjThresh:  uint32(ta.SlowAdjThresh),
		HighSpeedDelta: uint32(ta.HighSpeedDelta),
		IgnoreOooDup:   ta.IgnoreOooDup == 1,
		UseOwDelVar:    ta.UseOwDelVar == 1,
		Algorithm:      ta.RateAdjAlgo,
		SRIndexConf:    ta.SRIndexConf,
		StartIndex:     ta.StartIndex(),
		RandomPayload:  ta.ModifierBitmap&ActivationRandomPayload != 0,
	}
	if legacy {
		p.SubIntPeriod = time.Duration(ta.SubIntPeriodSec) * time.Second
	} else {
		p.SRAdjSuppCount = uint32(ta.SRAdjSuppCount)
		p.ECNCEThresh = ta.ECNCEThresh
	}
	return p
}

// connLog writes one Test Connection's warnings and errors, at most
// dataphase.MaxWarnings of them (the Data Phase's own cap, which its
// warnings count against too), then one line saying the rest is
// suppressed: a misbehaving or hostile peer cannot flood the log.
type connLog struct {
	log  *slog.Logger
	used atomic.Int32
}

func (l *connLog) warn(msg string, args ...any)  { l.emit(slog.LevelWarn, msg, args) }
func (l *connLog) error(msg string, args ...any) { l.emit(slog.LevelError, msg, args) }

func (l *connLog) emit(level slog.Level, msg string, args []any) {
	switch n := l.used.Add(1); {
	case n <= dataphase.MaxWarnings:
		l.log.Log(context.Background(), level, msg, args...)
	case n == dataphase.MaxWarnings+1:
		l.log.Warn("further warnings of this Test Connection suppressed", "limit", dataphase.MaxWarnings)
	}
}
