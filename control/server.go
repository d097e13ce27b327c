package control

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
)

// ServerCounters count what the server's Control Phase saw, for logs and
// statistics. Every refusal is counted by its code.
type ServerCounters struct {
	SetupRequests   atomic.Uint64
	SetupInvalid    atomic.Uint64 // dropped silently: length, identifier, cmdRequest, checksum
	Accepted        atomic.Uint64
	Rejected        [14]atomic.Uint64 // by Setup code
	LegacyAccepted  atomic.Uint64
	ActivationWait  atomic.Uint64 // Test Connections released without an activation
	ActivationBad   atomic.Uint64 // invalid or unauthenticated Test Activation Requests
	Activated       atomic.Uint64
	EndedByReason   [8]atomic.Uint64
	ActiveDataPhase atomic.Int64
}

// Server is the Control Phase of `udpstp server`: it takes Setup Requests on
// its control sockets, decides Admission, opens a socket per Test
// Connection, takes its Test Activation and starts its Data Phase.
type Server struct {
	cfg   ServerConfig
	net   Network
	log   *slog.Logger
	table []dataphase.SendingRate
	adm   admission
	ctl   []Socket

	Counters ServerCounters

	mu     sync.Mutex
	active map[*serverConn]struct{}
	wg     sync.WaitGroup
	ended  chan struct{} // -1: closed when the first Test Connection ends
	once   sync.Once

	now func() time.Time // the wall clock for authentication (tests replace it)
}

// serverConn is one Test Connection from Setup to end.
type serverConn struct {
	id    uint64
	sock  Socket
	grant grant
	peer  netip.AddrPort
	dp    DataPhase
}

// NewServer opens the control sockets. Nothing is answered until Serve.
func NewServer(cfg ServerConfig, n Network, log *slog.Logger) (*Server, error) {
	s := &Server{
		cfg:    cfg,
		net:    n,
		log:    log,
		table:  dataphase.BuildRateTable(dataphase.TableOptions{NoJumbo: cfg.NoJumbo, TraditionalMTU: cfg.TraditionalMTU}),
		adm:    admission{maxConns: cfg.MaxConnections, maxBW: cfg.MaxBandwidth},
		active: map[*serverConn]struct{}{},
		ended:  make(chan struct{}),
		now:    time.Now,
	}
	if s.adm.maxConns <= 0 {
		s.adm.maxConns = MaxConnsPerServer
	}
	addrs, err := controlAddrs(cfg)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		sock, err := n.ListenUDP(a, SocketOptions{Family: cfg.Family, V6Only: cfg.Family == FamilyV6, SockBuf: cfg.SockBuf})
		if err != nil {
			s.closeControl()
			return nil, fmt.Errorf("control socket: %w", err)
		}
		s.ctl = append(s.ctl, sock)
	}
	return s, nil
}

// controlAddrs resolves where to listen: every address (one dual-stack
// socket, as OB-UDPST binds [::] with IPV6_V6ONLY off), or the addresses
// and names given, each restricted to the family asked for.
func controlAddrs(cfg ServerConfig) ([]netip.AddrPort, error) {
	port := uint16(cfg.Port)
	if len(cfg.BindAddrs) == 0 {
		if cfg.Family == FamilyV4 {
			return []netip.AddrPort{netip.AddrPortFrom(netip.IPv4Unspecified(), port)}, nil
		}
		return []netip.AddrPort{netip.AddrPortFrom(netip.IPv6Unspecified(), port)}, nil
	}
	var out []netip.AddrPort
	for _, h := range cfg.BindAddrs {
		a, err := resolve(h, cfg.Family)
		if err != nil {
			return nil, err
		}
		out = append(out, netip.AddrPortFrom(a, port))
	}
	return out, nil
}

// resolve turns a host name or literal into one address of the family
// asked for (the first the resolver gives, as OB-UDPST takes it).
func resolve(host string, fam Family) (netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		if (fam == FamilyV4 && !a.Is4()) || (fam == FamilyV6 && a.Is4()) {
			return netip.Addr{}, fmt.Errorf("%s: address does not match the address family asked for", host)
		}
		return a, nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", host)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("resolve %s: %w", host, err)
	}
	for _, a := range ips {
		a = a.Unmap()
		if fam == FamilyAny || (fam == FamilyV4) == a.Is4() {
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("resolve %s: no address of the family asked for", host)
}

// Addrs returns the control sockets' local addresses.
func (s *Server) Addrs() []netip.AddrPort {
	out := make([]netip.AddrPort, len(s.ctl))
	for i, c := range s.ctl {
		out[i] = c.LocalAddr()
	}
	return out
}

// Active returns the Test Connections running and the bandwidth reserved
// per direction (Mbps).
func (s *Server) Active() (conns, downMbps, upMbps int) { return s.adm.snapshot() }

// Serve answers Setup Requests until ctx is cancelled (or, with OneTest,
// until the first Test Connection ends). It then stops admitting, ends the
// running tests with the stop handshake so their clients get a clear end,
// and returns when they are over or the grace period has passed.
func (s *Server) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var rw sync.WaitGroup
	for _, c := range s.ctl {
		rw.Add(1)
		go func(c Socket) {
			defer rw.Done()
			s.readControl(ctx, c)
		}(c)
	}
	select {
	case <-ctx.Done():
	case <-s.ended:
		cancel()
	}
	s.closeControl()
	rw.Wait()
	s.shutdown(5 * time.Second)
	return nil
}

func (s *Server) closeControl() {
	for _, c := range s.ctl {
		c.Close()
	}
}

// shutdown stops every running Test Connection and waits for them.
func (s *Server) shutdown(grace time.Duration) {
	s.mu.Lock()
	for c := range s.active {
		if c.dp != nil {
			c.dp.Stop()
		} else {
			c.sock.Close() // awaiting activation: release it now
		}
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		s.log.Warn("test connections still running at shutdown", "grace", grace)
	}
}

// readControl serves one control socket.
func (s *Server) readControl(ctx context.Context, c Socket) {
	buf := make([]byte, 65536)
	for ctx.Err() == nil {
		n, from, err := c.RecvFrom(buf, time.Now().Add(250*time.Millisecond))
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue
			}
			if ctx.Err() == nil {
				s.log.Error("control socket read failed", "addr", c.LocalAddr(), "err", err)
				time.Sleep(10 * time.Millisecond)
			}
			continue
		}
		s.handleSetup(c, buf[:n], from)
	}
}

// handleSetup decides one Setup Request (wire.md 2.1.2, in its order) and
// answers it.
func (s *Server) handleSetup(ctl Socket, b []byte, from netip.AddrPort) {
	s.Counters.SetupRequests.Add(1)
	var req SetupPDU
	if err := req.Decode(b); err != nil {
		// Dropped without an answer, as OB-UDPST does.
		s.Counters.SetupInvalid.Add(1)
		s.log.Debug("invalid setup request dropped", "from", from, "err", err)
		return
	}
	now := s.now()
	code := req.CmdResponse // a non-zero value in a request comes back as the answer
	var keys SessionKeys
	checked := s.cfg.Keys.Checked(b)
	authErr := false
	if checked {
		var c uint8
		if keys, c = s.cfg.Keys.VerifySetup(b, req.ProtocolVer, now); c != 0 {
			code, authErr = c, true
		}
	}
	if !authErr {
		jumbo := req.ModifierBitmap&SetupJumbo != 0
		trad := req.ModifierBitmap&SetupTraditionalMTU != 0
		switch {
		case req.ProtocolVer < MinProtocolVersion || req.ProtocolVer > ProtocolVersion:
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
			} else if c := s.cfg.Keys.CheckMode(req.AuthMode); c != 0 {
				code = c
			}
		}
	}
	var (
		g    grant
		sock Socket
	)
	if code == SetupNone {
		if g, code = s.adm.reserve(req.MaxBandwidth); code == SetupNone {
			var err error
			sock, err = s.net.ListenUDP(netip.AddrPortFrom(ctl.LocalAddr().Addr(), 0),
				SocketOptions{Family: s.cfg.Family, V6Only: s.cfg.Family == FamilyV6, SockBuf: s.cfg.SockBuf})
			if err != nil {
				s.log.Error("cannot open a test socket", "err", err)
				s.adm.release(g)
				code = SetupConnFail
			}
		}
	}

	// The response is the request edited in place (wire.md 2.1.3).
	resp := append(make([]byte, 0, SetupLen), b...)
	resp[8] = SetupCmdResponse
	if code == SetupNone {
		binary.BigEndian.PutUint16(resp[12:], sock.LocalAddr().Port())
		resp[9] = SetupAccepted
	} else {
		resp[9] = code
	}
	if code == SetupBadVersion {
		binary.BigEndian.PutUint16(resp[2:], ProtocolVersion)
	}
	s.signResponse(resp, req.ProtocolVer, req.AuthMode, req.KeyID, keys, checked, now)
	if err := ctl.SendTo(resp, from); err != nil {
		s.log.Error("cannot send setup response", "to", from, "err", err)
	}
	if code != SetupNone {
		if int(code) < len(s.Counters.Rejected) {
			s.Counters.Rejected[code].Add(1)
		}
		s.log.Warn("setup request rejected", "from", from, "code", code, "reason", SetupCodeText(code),
			"version", req.ProtocolVer, "mc", fmt.Sprintf("%d/%d", req.MCIndex, req.MCCount))
		return
	}
	s.Counters.Accepted.Add(1)
	if req.ProtocolVer < AuthECNProtocolVer {
		s.Counters.LegacyAccepted.Add(1)
	} else {
		// The Null PDU opens the way through a stateful firewall in front
		// of the server: from the new test port to the client's socket.
		var null NullPDU
		null.ProtocolVer, null.CmdRequest, null.AuthMode = req.ProtocolVer, NullCmdRequest, req.AuthMode
		nb := null.Encode(make([]byte, NullLen))
		if req.AuthMode == AuthControl {
			Sign(nb, keys.Server[:], uint32(now.Unix()), req.KeyID)
		}
		if err := sock.SendTo(nb, from); err != nil {
			s.log.Debug("cannot send null request", "to", from, "err", err)
		}
	}
	sc := &serverConn{sock: sock, grant: g, peer: from}
	s.mu.Lock()
	s.active[sc] = struct{}{}
	s.mu.Unlock()
	s.wg.Add(1)
	go s.runConn(sc, req, keys)
}

// signResponse rewrites the auth block of a Setup or Test Activation
// Response (wire.md 2.1.3): protocol 20 signs with the server key (a zero
// key when none was tried) or clears it; older versions echo the block,
// with the digest zeroed when it was checked. The checksum is left 0.
func (s *Server) signResponse(resp []byte, pver uint16, authMode, keyID uint8, keys SessionKeys, checked bool, now time.Time) {
	binary.BigEndian.PutUint16(resp[len(resp)-2:], 0)
	switch {
	case pver < AuthECNProtocolVer:
		if checked {
			ClearDigest(resp)
		}
	case authMode == AuthControl:
		Sign(resp, keys.Server[:], uint32(now.Unix()), keyID)
	default:
		ClearAuth(resp)
	}
}

// runConn waits for the Test Activation on the new socket, then runs the
// Data Phase and releases the Test Connection when it ends.
func (s *Server) runConn(sc *serverConn, req SetupPDU, keys SessionKeys) {
	defer s.wg.Done()
	defer func() {
		sc.sock.Close()
		s.adm.release(sc.grant)
		s.mu.Lock()
		delete(s.active, sc)
		s.mu.Unlock()
		if s.cfg.OneTest {
			s.once.Do(func() { close(s.ended) })
		}
	}()
	legacy := req.ProtocolVer < AuthECNProtocolVer
	core, peer, ok := s.activate(sc, req, keys, legacy)
	if !ok {
		s.Counters.ActivationWait.Add(1)
		return
	}
	s.Counters.Activated.Add(1)
	s.Counters.ActiveDataPhase.Add(1)
	defer s.Counters.ActiveDataPhase.Add(-1)
	log := s.log.With("peer", peer, "test_port", sc.sock.LocalAddr().Port())
	var endReason atomic.Uint32
	onEvent := func(ev dataphase.Event) {
		switch ev.Kind {
		case dataphase.EvEnd:
			endReason.Store(uint32(ev.End))
		case dataphase.EvWarning:
			// OB-UDPST's warnings show with -v; our own errors (a policed
			// Load Sender, a socket failure) always do.
			if s.cfg.Verbose || ev.Code == 0 {
				log.Warn(ev.Text)
			}
		case dataphase.EvSubInterval:
			if s.cfg.Verbose && !s.cfg.NoSubInt {
				st := &ev.SubInt.Stats
				log.Info("sub-interval", "n", ev.SubInt.Seq, "datagrams", st.RxDatagrams, "loss", st.SeqErrLoss,
					"mbps_l3", fmt.Sprintf("%.2f", l3Mbps(st, peer)))
			}
		case dataphase.EvTrial:
			if s.cfg.Debug && ev.Trial.Index >= 0 {
				log.Debug("rate adjustment", "loss", ev.Trial.Loss, "rtt_var", int64(int32(ev.Trial.RTTVarSample)), "index", ev.Trial.Index)
			}
		}
	}
	s.mu.Lock()
	sc.dp = s.net.RunDataPhase(sc.sock, core, onEvent)
	s.mu.Unlock()
	log.Info("test started", "direction", direction(core))
	<-sc.dp.Done()
	r := dataphase.EndReason(endReason.Load())
	if int(r) < len(s.Counters.EndedByReason) {
		s.Counters.EndedByReason[r].Add(1)
	}
	log.Info("test ended", "reason", r.String())
}

func direction(c *dataphase.Conn) string {
	if c.LoadSender() {
		return "downstream"
	}
	return "upstream"
}

func l3Mbps(st *dataphase.SubIntervalStats, peer netip.AddrPort) float64 {
	if st.DeltaTime == 0 {
		return 0
	}
	hdr := uint64(28)
	if !IsIPv4(peer) {
		hdr = 48
	}
	return float64((st.RxBytes+uint64(st.RxDatagrams)*hdr)*8) / float64(st.DeltaTime)
}

// activate takes the first valid Test Activation Request from any source
// within the setup timeout, connects the socket to its sender, coerces it,
// marks the socket, answers, and builds the Data Phase.
func (s *Server) activate(sc *serverConn, req SetupPDU, keys SessionKeys, legacy bool) (*dataphase.Conn, netip.AddrPort, bool) {
	deadline := time.Now().Add(SetupTimeout)
	buf := make([]byte, 2048)
	for {
		n, from, err := sc.sock.RecvFrom(buf, deadline)
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				s.log.Debug("test socket closed before activation", "err", err)
			} else {
				s.log.Info("no test activation within the setup timeout", "peer", sc.peer)
			}
			return nil, netip.AddrPort{}, false
		}
		b := buf[:n]
		var ta ActivationPDU
		if err := ta.Decode(b, legacy); err != nil {
			s.Counters.ActivationBad.Add(1)
			s.log.Debug("invalid test activation dropped", "from", from, "err", err)
			continue
		}
		if !legacy && req.AuthMode == AuthControl {
			// A failed check gets no answer at all (wire.md 2.4.1 step 2).
			if c := VerifyRequest(b, keys, s.now()); c != 0 {
				s.Counters.ActivationBad.Add(1)
				s.log.Error("test activation request failed authentication", "from", from, "code", c)
				continue
			}
		}
		if err := sc.sock.Connect(from); err != nil {
			s.log.Error("cannot connect test socket", "peer", from, "err", err)
			return nil, netip.AddrPort{}, false
		}
		v4 := IsIPv4(from)
		recvTOS := true
		if ta.ECNCEThresh != 0 && !legacy {
			recvTOS = sc.sock.EnableRecvTOS(v4) == nil
		}
		Coerce(&ta, legacy, Limits{
			MaxTestTime: s.cfg.MaxTestTime, MaxDSCPECN: s.cfg.MaxDSCPECN,
			MaxRateIndex: s.cfg.MaxRateIndex, AllowRandom: s.cfg.AllowRandom,
		}, s.table, recvTOS)
		if ta.DSCPECN != 0 {
			// The response already goes out marked (wire.md 1.5 step 5).
			if err := sc.sock.SetTOS(ta.DSCPECN, v4); err != nil {
				s.log.Warn("cannot set DSCP/ECN; granting 0", "err", err)
				ta.DSCPECN, ta.ECNCEThresh = 0, 0
			}
		}
		out := ta.Encode(make([]byte, ActivationLen), legacy)
		if !legacy {
			s.signResponse(out, req.ProtocolVer, ta.AuthMode, ta.KeyID, keys, false, s.now())
		}
		p := s.params(&ta, legacy, !v4, req.AuthMode)
		if err := sc.sock.Send(out); err != nil {
			s.log.Error("cannot send test activation response", "peer", from, "err", err)
			return nil, netip.AddrPort{}, false
		}
		return dataphase.NewConn(p, clock.Now()), from, true
	}
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
