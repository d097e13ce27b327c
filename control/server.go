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
	SetupRequests    atomic.Uint64 // every datagram on a control socket
	SetupRateLimited atomic.Uint64 // dropped unanswered: its source exceeded its Setup Request rate
	SetupInvalid     atomic.Uint64 // dropped silently: length, identifier, cmdRequest, checksum
	Accepted         atomic.Uint64
	Rejected         [14]atomic.Uint64 // by Setup code
	LegacyAccepted   atomic.Uint64
	ActivationWait   atomic.Uint64 // Test Connections released without an activation
	Activated        atomic.Uint64
	EndedByReason    [8]atomic.Uint64

	// ActivationRequests counts valid Test Activation Requests, before
	// their authentication is checked.
	ActivationRequests atomic.Uint64
	// Invalid control PDUs (Setup and Test Activation Requests) by what
	// failed: the length, the checksum, anything else.
	InvalidSize, InvalidChecksum, InvalidFormat atomic.Uint64
	// Authentication failures of Setup (codes 7 and 8, also in Rejected)
	// and Test Activation Requests: a digest no key matches, a time
	// outside the window.
	AuthFailure, AuthTime atomic.Uint64
	// Running Data Phases by direction.
	RunningDown, RunningUp atomic.Int64

	Data DataCounters
}

// DataCounters add up what the Data Phases report in their events (the
// -G file's traffic figures). They come from Status PDUs, so they are
// what each receiving end counted: the load the server sent as its
// clients received it, and the load the server received.
type DataCounters struct {
	StatusSent, StatusReceived atomic.Uint64 // Status PDUs sent and (valid) received
	// The server's load as its clients reported receiving it; TxIPBytes
	// counts IP and UDP headers too (28 bytes, 48 for IPv6).
	TxDatagrams, TxIPBytes, TxLoss, TxOooDup atomic.Uint64
	// The load the server received, as its Status PDUs reported it.
	RxDatagrams, RxIPBytes, RxLoss, RxOooDup atomic.Uint64
	// Status PDUs lost (a reordered one counts 65535, as in OB-UDPST):
	// those sent to us (local) and those we sent (remote, as the peer
	// reported); and the "traffic has completely stopped" events.
	LocalStatusLoss, RemoteStatusLoss   atomic.Uint64
	LocalTrafficStop, RemoteTrafficStop atomic.Uint64
	// Invalid Load and Status PDUs by what failed (every one: the Data
	// Phase counts beyond the warnings it shows).
	LoadInvalidSize, LoadInvalidFormat, LoadInvalidChecksum       atomic.Uint64
	StatusInvalidSize, StatusInvalidFormat, StatusInvalidChecksum atomic.Uint64
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
	keys  atomic.Pointer[ServerKeys] // cfg.Keys, replaced by SetKeys
	limit *sourceLimiter
	grace time.Duration

	Counters ServerCounters

	mu     sync.Mutex
	active map[*serverConn]struct{}
	wg     sync.WaitGroup
	ended  chan struct{} // -1: closed when the first Test Connection ends
	once   sync.Once
	// oneTest is the ErrorStatus of that first Test Connection (-1).
	oneTest atomic.Int32

	now func() time.Time // the wall clock for authentication (tests replace it)
}

// serverConn is one Test Connection from Setup to end.
type serverConn struct {
	closed bool // shutdown closed its socket before its Data Phase started (under Server.mu)
	sock   Socket
	grant  grant
	peer   netip.AddrPort
	dp     DataPhase
	log    connLog
}

// ServerOptions are a Server's service settings beyond ServerConfig.
type ServerOptions struct {
	// Sockets, if any, are the control sockets, already open and bound
	// (systemd's socket activation); the Server owns them from then on.
	// Without them NewServerWith binds per cfg.
	Sockets []Socket
	// SetupRate limits the Setup Requests handled per source address (an
	// IPv6 source by its /64) to SetupRate per second, in bursts of up to
	// SetupBurst; the others are dropped unanswered and counted in
	// SetupRateLimited. 0: no limit.
	SetupRate  float64
	SetupBurst int
	// ShutdownGrace bounds how long Serve waits, once stopped, for the
	// running tests to finish their stop handshake; 0: DefaultShutdownGrace.
	ShutdownGrace time.Duration
}

// DefaultShutdownGrace is how long a stopping server waits for the stop
// handshakes of its running tests: they take a few Trial Intervals, and
// the whole shutdown stays within 5 s.
const DefaultShutdownGrace = 4 * time.Second

// NewServer opens the control sockets. Nothing is answered until Serve.
func NewServer(cfg ServerConfig, n Network, log *slog.Logger) (*Server, error) {
	return NewServerWith(cfg, n, log, ServerOptions{})
}

// NewServerWith is NewServer with service options: control sockets opened
// by someone else, a per-source limit on Setup Requests.
func NewServerWith(cfg ServerConfig, n Network, log *slog.Logger, o ServerOptions) (*Server, error) {
	s := &Server{
		cfg:    cfg,
		net:    n,
		log:    log,
		table:  dataphase.BuildRateTable(dataphase.TableOptions{NoJumbo: cfg.NoJumbo, TraditionalMTU: cfg.TraditionalMTU}),
		adm:    admission{maxConns: cfg.MaxConnections, maxBW: cfg.MaxBandwidth},
		limit:  newSourceLimiter(o.SetupRate, o.SetupBurst),
		grace:  o.ShutdownGrace,
		active: map[*serverConn]struct{}{},
		ended:  make(chan struct{}),
		now:    time.Now,
	}
	s.keys.Store(cfg.Keys)
	if s.grace <= 0 {
		s.grace = DefaultShutdownGrace
	}
	if s.adm.maxConns <= 0 {
		s.adm.maxConns = MaxConnsPerServer
	}
	if len(o.Sockets) > 0 {
		s.ctl = append(s.ctl, o.Sockets...)
		return s, nil
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
		a, err := resolve(context.Background(), h, cfg.Family)
		if err != nil {
			return nil, err
		}
		out = append(out, netip.AddrPortFrom(a, port))
	}
	return out, nil
}

// resolve turns a host name or literal into one address of the family
// asked for (the first the resolver gives, as OB-UDPST takes it).
func resolve(ctx context.Context, host string, fam Family) (netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		if (fam == FamilyV4 && !a.Is4()) || (fam == FamilyV6 && a.Is4()) {
			return netip.Addr{}, fmt.Errorf("%s: address does not match the address family asked for", host)
		}
		return a, nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
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
	s.shutdown(s.grace)
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
			c.closed = true
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

// readControl serves one control socket until Serve closes it. It waits
// without a deadline: a datagram costs no clock read or timer reset, and
// the close ends the wait.
func (s *Server) readControl(ctx context.Context, c Socket) {
	buf := make([]byte, 65536)
	for {
		n, from, err := c.RecvFrom(buf, time.Time{})
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Error("control socket read failed", "addr", c.LocalAddr(), "err", err)
			time.Sleep(100 * time.Millisecond) // a lasting error logs ten lines a second, not a hundred
			continue
		}
		s.Counters.SetupRequests.Add(1)
		s.handleSetup(c, buf[:n], from)
	}
}

// handleSetup decides one Setup Request (wire.md 2.1.2, in its order) and
// answers it.
func (s *Server) handleSetup(ctl Socket, b []byte, from netip.AddrPort) {
	var req SetupPDU
	if err := req.Decode(b); err != nil {
		// Dropped without an answer, as OB-UDPST does.
		s.Counters.SetupInvalid.Add(1)
		s.countInvalid(err)
		// A flood of junk ends here: build the log record only when it is
		// written (its arguments alone would allocate per datagram).
		if s.log.Enabled(context.Background(), slog.LevelDebug) {
			s.log.Debug("invalid setup request dropped", "from", from, "err", err)
		}
		return
	}
	// The per-source limit counts well-formed requests only: what is not
	// one costs no more than the decode above, and junk from a source
	// must not use up the tokens of a real client behind the same address.
	// It comes before anything costly (HMAC checks, a socket).
	if ok, first := s.limit.allow(from.Addr(), time.Now()); !ok {
		s.Counters.SetupRateLimited.Add(1)
		if first {
			s.log.Warn("setup requests dropped: source over its rate limit", "from", from.Addr(),
				"rate_per_s", s.limit.rate, "burst", s.limit.burst)
		}
		return
	}
	now := s.now()
	code := req.CmdResponse // a non-zero value in a request comes back as the answer
	var keys SessionKeys
	serverKeys := s.keys.Load() // one key set for the whole request, whatever SetKeys does meanwhile
	checked := serverKeys.Checked(b)
	authErr := false
	if checked {
		var c uint8
		if keys, c = serverKeys.VerifySetup(b, req.ProtocolVer, now); c != 0 {
			code, authErr = c, true
			s.countAuth(c)
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
			} else if c := serverKeys.CheckMode(req.AuthMode); c != 0 {
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
	sc := &serverConn{sock: sock, grant: g, peer: from, log: connLog{log: s.log.With("peer", from, "test_port", sock.LocalAddr().Port())}}
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
	// The Test Connection's ErrorStatus, kept as OB-UDPST keeps its
	// endTimeStatus: an unspecified error (255) until the stop handshake
	// completes, which declares success but keeps the last warning's code.
	var status atomic.Int32
	status.Store(statusUnspecified)
	defer func() {
		sc.sock.Close()
		s.adm.release(sc.grant)
		s.mu.Lock()
		delete(s.active, sc)
		s.mu.Unlock()
		if s.cfg.OneTest {
			s.once.Do(func() {
				s.oneTest.Store(status.Load())
				close(s.ended)
			})
		}
	}()
	legacy := req.ProtocolVer < AuthECNProtocolVer
	core, peer, ok := s.activate(sc, req, keys, legacy)
	if !ok {
		s.Counters.ActivationWait.Add(1)
		return
	}
	s.Counters.Activated.Add(1)
	running := &s.Counters.RunningDown
	if !core.LoadSender() {
		running = &s.Counters.RunningUp
	}
	running.Add(1)
	defer running.Add(-1)
	log := s.log.With("peer", peer, "test_port", sc.sock.LocalAddr().Port())
	sc.log.log = log
	hdr := uint64(dataphase.L3Overhead(!IsIPv4(peer)))
	var endReason atomic.Uint32
	onEvent := func(ev dataphase.Event) {
		s.countEvent(&ev, hdr)
		switch ev.Kind {
		case dataphase.EvEnd:
			endReason.Store(uint32(ev.End))
			if ev.End == dataphase.EndStopped && status.Load() > maxWarningStatus {
				status.Store(0)
			}
		case dataphase.EvWarning:
			if ev.Code != 0 && ev.Code <= maxWarningStatus {
				status.Store(int32(ev.Code))
			}
			// OB-UDPST's warnings show with -v; our own errors (a policed
			// Load Sender, a socket failure) always do.
			if s.cfg.Verbose || ev.Code == 0 {
				sc.log.warn(ev.Text)
			}
		case dataphase.EvSubInterval:
			if s.cfg.Verbose && !s.cfg.NoSubInt {
				st := &ev.SubInt.Stats
				sent := float64(st.RxDatagrams) + float64(st.SeqErrLoss)
				share := "delivered_pct"
				v := fmt.Sprintf("%.2f", 100*float64(st.RxDatagrams)/max(sent, 1))
				if s.cfg.LossRatio { // -r, as OB-UDPST's lines show it
					share, v = "loss_ratio", fmt.Sprintf("%.2E", float64(st.SeqErrLoss)/max(sent, 1))
				}
				log.Info("sub-interval", "n", ev.SubInt.Seq, "datagrams", st.RxDatagrams, "loss", st.SeqErrLoss,
					share, v, "mbps_l3", fmt.Sprintf("%.2f", l3Mbps(st, hdr)))
			}
		case dataphase.EvTrial:
			if s.cfg.Debug && ev.Trial.Index >= 0 {
				log.Debug("rate adjustment", "loss", ev.Trial.Loss, "rtt_var", int64(int32(ev.Trial.RTTVarSample)), "index", ev.Trial.Index)
			}
		}
	}
	s.mu.Lock()
	if sc.closed {
		// Shutdown closed the socket while the activation was answered:
		// there is nothing left to run the Data Phase on.
		s.mu.Unlock()
		return
	}
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

// OB-UDPST's ErrorStatus bounds: warnings are 1..49; 255 is an
// unspecified error.
const (
	maxWarningStatus  = 49
	statusUnspecified = 255
)

// OneTestStatus is the ErrorStatus of the Test Connection that ended a -1
// (OneTest) server, which OB-UDPST makes its exit status: 0 when it ended
// with the stop handshake, the last warning's code (1..49) if it warned,
// 255 if it ended otherwise or never started. It is 0 before then.
func (s *Server) OneTestStatus() int { return int(s.oneTest.Load()) }

func direction(c *dataphase.Conn) string {
	if c.LoadSender() {
		return "downstream"
	}
	return "upstream"
}

// l3Mbps is a Sub-Interval's received rate with hdr bytes of IP and UDP
// header per datagram.
func l3Mbps(st *dataphase.SubIntervalStats, hdr uint64) float64 {
	if st.DeltaTime == 0 {
		return 0
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
			s.countInvalid(err)
			if s.log.Enabled(context.Background(), slog.LevelDebug) {
				s.log.Debug("invalid test activation dropped", "from", from, "err", err)
			}
			continue
		}
		s.Counters.ActivationRequests.Add(1)
		if !legacy && req.AuthMode == AuthControl {
			// A failed check gets no answer at all (wire.md 2.4.1 step 2).
			if c := VerifyRequest(b, keys, s.now()); c != 0 {
				s.countAuth(c)
				sc.log.error("test activation request failed authentication", "from", from, "code", c)
				continue
			}
		}
		if err := sc.sock.Connect(from); err != nil {
			sc.log.error("cannot connect test socket", "peer", from, "err", err)
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
				sc.log.warn("cannot set DSCP/ECN; granting 0", "err", err)
				ta.DSCPECN, ta.ECNCEThresh = 0, 0
			}
		}
		out := ta.Encode(make([]byte, ActivationLen), legacy)
		// Protocol 20 re-signs or clears the auth block; every version
		// clears the checksum the request carried (the coerced values
		// would no longer verify against it).
		s.signResponse(out, req.ProtocolVer, ta.AuthMode, ta.KeyID, keys, false, s.now())
		p := s.params(&ta, legacy, !v4, req.AuthMode)
		p.PeerBytesIn, p.PeerBytesOut = n, len(out) // the anti-amplification budget's start (dataphase/amplification.go)
		if err := sc.sock.Send(out); err != nil {
			sc.log.error("cannot send test activation response", "peer", from, "err", err)
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

// SetKeys replaces the keys Setup Requests are checked with, as a reload
// of the key files does; nil turns authentication off. It is safe while
// the server runs: a request in progress finishes with the keys it
// started with, and running Test Connections keep the session keys they
// were set up with.
func (s *Server) SetKeys(k *ServerKeys) { s.keys.Store(k) }

// Keys returns the keys Setup Requests are checked with now.
func (s *Server) Keys() *ServerKeys { return s.keys.Load() }

// Peaks returns the most Test Connections and bandwidth per direction
// (Mbps) reserved at once since the previous call, and starts the next
// period.
func (s *Server) Peaks() (conns, downMbps, upMbps int) { return s.adm.peaks() }

// countInvalid counts an invalid control PDU by what failed.
func (s *Server) countInvalid(err error) {
	// The decoders return a *dataphase.PDUError as it is, never wrapped; a
	// type assertion costs nothing where errors.As would allocate.
	var field string
	if pe, ok := err.(*dataphase.PDUError); ok {
		field = pe.Field
	}
	switch field {
	case "length":
		s.Counters.InvalidSize.Add(1)
	case "checkSum":
		s.Counters.InvalidChecksum.Add(1)
	default:
		s.Counters.InvalidFormat.Add(1)
	}
}

// countAuth counts an authentication failure by its code.
func (s *Server) countAuth(code uint8) {
	if code == SetupAuthTime {
		s.Counters.AuthTime.Add(1)
	} else {
		s.Counters.AuthFailure.Add(1)
	}
}

// countEvent adds a Data Phase event to the data counters. It runs on the
// executor's thread for every event, so it only adds.
func (s *Server) countEvent(ev *dataphase.Event, hdr uint64) {
	d := &s.Counters.Data
	switch ev.Kind {
	case dataphase.EvTrial:
		t := &ev.Trial
		ip := uint64(t.Bytes) + uint64(t.Datagrams)*hdr
		if t.Sent {
			// Our Status PDU: what we received in its Trial Interval.
			d.StatusSent.Add(1)
			d.RxDatagrams.Add(uint64(t.Datagrams))
			d.RxIPBytes.Add(ip)
			d.RxLoss.Add(uint64(t.Loss))
			d.RxOooDup.Add(uint64(t.Ooo) + uint64(t.Dup))
		} else {
			// The peer's Status PDU: what it received of our load.
			d.StatusReceived.Add(1)
			d.TxDatagrams.Add(uint64(t.Datagrams))
			d.TxIPBytes.Add(ip)
			d.TxLoss.Add(uint64(t.Loss))
			d.TxOooDup.Add(uint64(t.Ooo) + uint64(t.Dup))
		}
	}
	// Counted by the Data Phase itself, uncapped; a Trial Interval's event
	// and the end carry what happened since the previous one.
	a := &ev.Anomalies
	d.LocalStatusLoss.Add(a.LocalStatusLoss)
	d.RemoteStatusLoss.Add(a.RemoteStatusLoss)
	d.LocalTrafficStop.Add(a.LocalTrafficStop)
	d.RemoteTrafficStop.Add(a.RemoteTrafficStop)
	d.LoadInvalidSize.Add(a.LoadInvalidSize)
	d.LoadInvalidFormat.Add(a.LoadInvalidFormat)
	d.LoadInvalidChecksum.Add(a.LoadInvalidChecksum)
	d.StatusInvalidSize.Add(a.StatusInvalidSize)
	d.StatusInvalidFormat.Add(a.StatusInvalidFormat)
	d.StatusInvalidChecksum.Add(a.StatusInvalidChecksum)
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

// ServerSnapshot is a copy of a Server's counters and state at one time
// (the -G records, the service status line).
type ServerSnapshot struct {
	Running, RunningDown, RunningUp int // Test Connections in the Data Phase
	Reserved                        int // Test Connections holding a slot (also awaiting activation)
	DownMbps, UpMbps                int // bandwidth reserved per direction

	SetupRequests, SetupRateLimited, SetupInvalid uint64
	Accepted, LegacyAccepted                      uint64
	Rejected                                      [14]uint64
	ActivationRequests, Activated                 uint64
	ActivationWait                                uint64
	InvalidSize, InvalidChecksum, InvalidFormat   uint64
	AuthFailure, AuthTime                         uint64
	EndedByReason                                 [8]uint64

	Data DataTotals
}

// DataTotals are DataCounters read at one time.
type DataTotals struct {
	StatusSent, StatusReceived                                    uint64
	TxDatagrams, TxIPBytes, TxLoss, TxOooDup                      uint64
	RxDatagrams, RxIPBytes, RxLoss, RxOooDup                      uint64
	LocalStatusLoss, RemoteStatusLoss                             uint64
	LocalTrafficStop, RemoteTrafficStop                           uint64
	LoadInvalidSize, LoadInvalidFormat, LoadInvalidChecksum       uint64
	StatusInvalidSize, StatusInvalidFormat, StatusInvalidChecksum uint64
}

// RejectedTotal is the number of Setup Requests answered with a refusal.
func (n *ServerSnapshot) RejectedTotal() uint64 {
	var t uint64
	for _, v := range n.Rejected {
		t += v
	}
	return t
}

// Snapshot reads the counters (each atomically; the set is not one
// instant, which for statistics does not matter).
func (s *Server) Snapshot() ServerSnapshot {
	c := &s.Counters
	var n ServerSnapshot
	n.Reserved, n.DownMbps, n.UpMbps = s.adm.snapshot()
	n.RunningDown, n.RunningUp = int(c.RunningDown.Load()), int(c.RunningUp.Load())
	n.Running = n.RunningDown + n.RunningUp
	n.SetupRequests, n.SetupRateLimited, n.SetupInvalid = c.SetupRequests.Load(), c.SetupRateLimited.Load(), c.SetupInvalid.Load()
	n.Accepted, n.LegacyAccepted = c.Accepted.Load(), c.LegacyAccepted.Load()
	for i := range c.Rejected {
		n.Rejected[i] = c.Rejected[i].Load()
	}
	n.ActivationRequests, n.Activated = c.ActivationRequests.Load(), c.Activated.Load()
	n.ActivationWait = c.ActivationWait.Load()
	n.InvalidSize, n.InvalidChecksum, n.InvalidFormat = c.InvalidSize.Load(), c.InvalidChecksum.Load(), c.InvalidFormat.Load()
	n.AuthFailure, n.AuthTime = c.AuthFailure.Load(), c.AuthTime.Load()
	for i := range c.EndedByReason {
		n.EndedByReason[i] = c.EndedByReason[i].Load()
	}
	d := &c.Data
	n.Data = DataTotals{
		StatusSent: d.StatusSent.Load(), StatusReceived: d.StatusReceived.Load(),
		TxDatagrams: d.TxDatagrams.Load(), TxIPBytes: d.TxIPBytes.Load(), TxLoss: d.TxLoss.Load(), TxOooDup: d.TxOooDup.Load(),
		RxDatagrams: d.RxDatagrams.Load(), RxIPBytes: d.RxIPBytes.Load(), RxLoss: d.RxLoss.Load(), RxOooDup: d.RxOooDup.Load(),
		LocalStatusLoss: d.LocalStatusLoss.Load(), RemoteStatusLoss: d.RemoteStatusLoss.Load(),
		LocalTrafficStop: d.LocalTrafficStop.Load(), RemoteTrafficStop: d.RemoteTrafficStop.Load(),
		LoadInvalidSize: d.LoadInvalidSize.Load(), LoadInvalidFormat: d.LoadInvalidFormat.Load(),
		LoadInvalidChecksum: d.LoadInvalidChecksum.Load(),
		StatusInvalidSize:   d.StatusInvalidSize.Load(), StatusInvalidFormat: d.StatusInvalidFormat.Load(),
		StatusInvalidChecksum: d.StatusInvalidChecksum.Load(),
	}
	return n
}
