package control

// Setup handling: a Setup Request decided, answered and, when accepted,
// handed to a new Test Connection (server_conn.go).

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/udpstp/udpstp/dataphase"
)

// errACKOK is a Setup Request carrying cmdResponse 1 (ACKOK).
var errACKOK = &dataphase.PDUError{PDU: "setup request", Field: fieldCmdResponse.String(), Reason: "a request cannot carry ACKOK"}

// handleSetup decides one Setup Request (RFC 9946, the Test Setup PDU;
// its checks in OB-UDPST 9.0.0's order, see the package doc) and
// answers it. to is the address it was sent to when the control socket is
// bound to a wildcard address and tells it (else invalid): the answer
// comes from there and the test socket is bound there.
//
// It reads one clock, once: s.now, the wall clock (CLOCK_REALTIME), which
// is what the wire carries (an authenticated request's authTime, the
// signature of the answer and of the Null PDU). The local judgements made
// with the same reading (the per-source limits, the replay cache's
// expiry, the log's episodes) compare times with Sub and Before, which use
// the monotonic reading time.Now carries, so a step of the wall clock does
// not open or close them. The Test Time Base (CLOCK_MONOTONIC_RAW, package
// clock) times the Data Phase only; a Setup has no use for it.
func (s *Server) handleSetup(ctl Socket, b []byte, from netip.AddrPort, to netip.Addr) {
	b, form := widenSetup(b) // protocols 8..10 in the 56-byte form (legacy.go)
	var req SetupPDU
	if !s.decodeSetup(b, &req, from) {
		return
	}
	now := s.now()
	// The per-source limit counts well-formed requests only: what is not
	// one costs no more than the decode above, and junk from a source
	// must not use up the tokens of a real client behind the same address.
	// It comes before anything costly (HMAC checks, a socket).
	if ok, _ := s.limit.allow(from.Addr(), now); !ok {
		s.Counters.Add(CountSetupRateLimited)
		if s.eps.note(epSetupRateLimited, from.Addr(), now) {
			s.log.Warn("setup requests dropped: source over its rate limit", "from", from.Addr(),
				"rate_per_s", s.limit.rate, "burst", s.limit.burst)
		}
		return
	}
	serverKeys := s.keys.Load() // one key set for the whole request, whatever SetKeys does meanwhile
	checked := serverKeys.Checked(b)
	code, keys, replayed := s.setupCode(serverKeys, checked, b, form, &req, from, now)
	if replayed {
		return
	}
	var sc *serverConn
	if code == SetupNone {
		local := ctl.LocalAddr().Addr()
		if to.IsValid() {
			local = to
		}
		sc, code = s.admitSetup(local, from, req.MaxBandwidth)
	}
	var testPort uint16
	if sc != nil {
		testPort = sc.sock.LocalAddr().Port()
	}
	// A refusal over its source's answer budget is counted and dropped
	// before its answer is built (an allocation, and an HMAC for a keyed
	// request): that is the forged flood's case.
	if code != SetupNone && !s.refused(&req, code, from, now) {
		return
	}
	resp := setupResponse(b, form, &req, code, testPort, keys, checked, now)
	if err := sendControl(ctl, resp, from, to); err != nil {
		s.log.Error("cannot send setup response", "to", from, "err", err)
	}
	if code != SetupNone {
		return
	}
	s.armTestConn(sc, req, keys, from, now)
}

// decodeSetup decodes a Setup Request into req, or counts it by the field
// at fault and drops it without an answer, as OB-UDPST does. A flood of
// junk ends here at no allocation: the error is built, and the log
// record, only when it is written.
func (s *Server) decodeSetup(b []byte, req *SetupPDU, from netip.AddrPort) bool {
	field := setupFault(b)
	if field == fieldNone {
		req.Decode(b) // cannot fail: setupFault found nothing
		if req.CmdResponse == SetupAccepted {
			// OB-UDPST echoes a request's non-zero cmdResponse as the
			// answer; "accepted" with no test port would be a lie.
			field = fieldCmdResponse
		}
	}
	if field == fieldNone {
		return true
	}
	s.Counters.Add(CountSetupInvalid)
	s.countInvalidField(field)
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		err := req.Decode(b)
		if err == nil {
			err = errACKOK
		}
		s.log.Debug("invalid setup request dropped", "from", from, "err", err)
	}
	return false
}

// setupCode is the Admission checks of a well-formed Setup Request, before
// any socket is opened: its authentication (and the replay cache), then
// version, multi-connection fields, MTU bits, bandwidth and auth mode, as
// OB-UDPST 9.0.0 orders them, then a drain. It returns the answer's code
// (SetupNone: admissible), the session keys of an authenticated request,
// and replayed when the request is to be dropped unanswered.
func (s *Server) setupCode(serverKeys *ServerKeys, checked bool, b []byte, form setupForm, req *SetupPDU,
	from netip.AddrPort, now time.Time) (code uint8, keys SessionKeys, replayed bool) {
	code = req.CmdResponse // a non-zero value in a request comes back as the answer
	authErr := false
	if checked {
		var c uint8
		if keys, c = verifySetup(serverKeys, b, form, req.ProtocolVer, now); c != 0 { // legacy.go
			code, authErr = c, true
			s.countAuth(c)
		} else if replay, full := s.replay.seen(AuthDigest(b), AuthTime(b), now); replay || full {
			// Dropped unanswered: the signature is genuine, the request
			// is not new (or the cache of recent ones is full).
			s.Counters.Add(CountSetupReplayed)
			if s.eps.note(epSetupReplayed, from.Addr(), now) {
				s.log.Warn("authenticated setup request dropped as a replay", "from", from,
					"auth_time", AuthTime(b), "cache_full", full)
			}
			return code, keys, true
		}
	}
	if !authErr {
		jumbo := req.ModifierBitmap&SetupJumbo != 0
		trad := req.ModifierBitmap&SetupTraditionalMTU != 0
		switch {
		case !form.accepts(req.ProtocolVer):
			code = SetupBadVersion
		case req.MCCount == 0 || req.MCCount > MaxConnsPerClient || req.MCIndex >= req.MCCount:
			code = SetupMCInvalid
		case jumbo == s.cfg.NoJumbo:
			code = SetupJumboMismatch
		case trad != s.cfg.TraditionalMTU:
			code = SetupTradMismatch
		default:
			if c := s.adm.checkBandwidth(req.MaxBandwidth); c != 0 {
				code = c
			} else if c := serverKeys.CheckMode(req.AuthMode); c != 0 {
				code = c
			}
		}
	}
	if code == SetupNone && s.draining.Load() {
		// The cheap refusal of a draining server, before a socket is
		// opened (admitSetup checks again under the lock).
		code = SetupDraining
		s.Counters.Add(CountSetupDraining)
	}
	return code, keys, false
}

// setupResponse is the answer to the Setup Request b: the request edited
// in place, as OB-UDPST 9.0.0 builds it (the package doc), in the
// request's layout. testPort is the accepted Test Connection's.
func setupResponse(b []byte, form setupForm, req *SetupPDU, code uint8, testPort uint16, keys SessionKeys,
	checked bool, now time.Time) []byte {
	resp := append(make([]byte, 0, SetupLen), b...)
	resp[8] = SetupCmdResponse
	if code == SetupNone {
		binary.BigEndian.PutUint16(resp[12:], testPort)
		resp[9] = SetupAccepted
	} else {
		resp[9] = code
	}
	if code == SetupBadVersion {
		binary.BigEndian.PutUint16(resp[2:], ProtocolVersion)
	}
	answerAuth(resp, req.ProtocolVer, req.AuthMode, req.KeyID, keys, checked, now)
	return form.narrow(resp)
}

// refused counts and logs (once an episode) a refused Setup Request and
// says whether its refusal is answered: a refusal is no larger than its
// request; still, a forged flood must not make the server a reflector at
// the flood's rate.
func (s *Server) refused(req *SetupPDU, code uint8, from netip.AddrPort, now time.Time) (answer bool) {
	s.Counters.reject(code)
	if s.eps.note(epSetupRefused, from.Addr(), now) {
		s.log.Warn("setup request rejected", "from", from, "code", code, "reason", SetupCodeText(code),
			"version", req.ProtocolVer, "mc", fmt.Sprintf("%d/%d", req.MCIndex, req.MCCount))
	}
	if ok, _ := s.answers.allow(from.Addr(), now); !ok {
		s.Counters.Add(CountRefusalUnanswered)
		if s.eps.note(epRefusalUnanswered, from.Addr(), now) {
			s.log.Warn("setup refusals not answered: source over its answer budget", "from", from.Addr(),
				"rate_per_s", s.answers.rate, "burst", s.answers.burst)
		}
		return false
	}
	return true
}

// armTestConn starts an accepted Test Connection once its Setup Response
// is sent: from protocol 20 on, the Null PDU from the new test port, then
// the wait for its Test Activation (runConn).
func (s *Server) armTestConn(sc *serverConn, req SetupPDU, keys SessionKeys, from netip.AddrPort, now time.Time) {
	s.Counters.Add(CountSetupAccepted)
	if req.ProtocolVer < AuthECNProtocolVer {
		s.Counters.Add(CountLegacyAccepted)
	} else {
		// The Null PDU opens the way through a stateful firewall in front
		// of the server: from the new test port to the client's socket.
		var null NullPDU
		null.ProtocolVer, null.CmdRequest, null.AuthMode = req.ProtocolVer, NullCmdRequest, req.AuthMode
		nb := null.Encode(make([]byte, NullLen))
		if req.AuthMode == AuthControl {
			Sign(nb, keys.Server[:], uint32(now.Unix()), req.KeyID)
		}
		if err := sc.sock.SendTo(nb, from); err != nil {
			s.log.Debug("cannot send null request", "to", from, "err", err)
		}
	}
	go s.runConn(sc, req, keys)
}

// admitSetup reserves what a Setup Request from from needs and opens its
// test socket, evicting pending Test Connections of heavier sources when
// every slot or, with -B, the bandwidth pool is reserved. It returns the
// new Test Connection, already counted as pending, or the refusal's code.
func (s *Server) admitSetup(local netip.Addr, from netip.AddrPort, maxBandwidth uint16) (*serverConn, uint8) {
	src := from.Addr()
	now := time.Now()
	s.mu.Lock()
	why := s.pending.admit(src, now) // the cheap refusal, before a socket is opened
	s.mu.Unlock()
	if why != capOK {
		s.refuseBySource(from, why, now)
		return nil, SetupConnFail
	}
	sock, err := listenRandom(func(port uint16) (Socket, error) {
		return s.net.ListenUDP(netip.AddrPortFrom(local, port),
			SocketOptions{Family: s.cfg.Family, V6Only: s.cfg.Family == dataphase.FamilyV6, SockBuf: s.cfg.SockBuf})
	}, s.ports)
	if err != nil {
		s.log.Error("cannot open a test socket", "err", err)
		return nil, SetupConnFail
	}
	var evicted []*serverConn
	defer func() {
		for _, v := range evicted {
			v.sock.Close() // its runConn sees the close and ends
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending.hardFull(src) {
		// Another control socket's Setup from the same source took
		// the last place meanwhile.
		sock.Close()
		return nil, SetupConnFail
	}
	if s.draining.Load() {
		// Drain came while the socket was opened: Drained must not
		// close with a Test Connection about to start.
		sock.Close()
		s.Counters.Add(CountSetupDraining)
		return nil, SetupDraining
	}
	g, code := s.adm.reserve(maxBandwidth)
	for code == SetupConnFail || code == SetupCapExceeded {
		// Every slot, or the bandwidth, is reserved: evict a pending
		// Test Connection of an unproven source, if one may go
		// (running ones count as none's: checkBandwidth judged those).
		v := s.pending.victim(src, now)
		if v == nil {
			break
		}
		evicted = append(evicted, s.evictLocked(v, now))
		g, code = s.adm.reserve(maxBandwidth)
	}
	if code != SetupNone {
		sock.Close()
		return nil, code
	}
	s.seq++
	sc := &serverConn{sock: sock, grant: g, peer: from, seq: s.seq, at: now,
		log: connLog{log: s.log.With("peer", from, "test_port", sock.LocalAddr().Port())}}
	s.active[sc] = struct{}{}
	s.pending.add(sc)
	s.wg.Add(1)
	return sc, SetupNone
}

// refuseBySource counts and logs (once an episode) a Setup its source's
// caps refuse.
func (s *Server) refuseBySource(from netip.AddrPort, why int, now time.Time) {
	if why == capRunning {
		s.Counters.Add(CountSourceRunningCap)
		if s.eps.note(epSourceRunningCap, from.Addr(), now) {
			s.log.Warn("setup request refused: the source holds its share of test connections", "from", from,
				"max_per_source", s.pending.runCap)
		}
		return
	}
	s.Counters.Add(CountSourcePendingCap)
	if s.eps.note(epSourcePendingCap, from.Addr(), now) {
		s.log.Warn("setup request refused: the source holds its share of test connections awaiting activation", "from", from)
	}
}

// evictLocked takes a pending Test Connection out to make room: its
// reservation is returned now, its socket closed by the caller once s.mu
// is released. s.mu is held.
func (s *Server) evictLocked(v *serverConn, now time.Time) *serverConn {
	s.pending.remove(v, now)
	v.evicted = true
	s.adm.release(v.grant)
	v.released = true
	s.Counters.Add(CountPendingEvicted)
	if s.eps.note(epPendingEvicted, v.peer.Addr(), time.Now()) {
		s.log.Warn("test connection awaiting activation evicted for a newer setup", "setup_from", v.peer,
			"pending", s.pending.n, "max_connections", s.adm.maxConns)
	}
	return v
}
