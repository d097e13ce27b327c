package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/udpstp/udpstp/dataphase"
)

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
	limit *sourceLimiter             // --setup-rate, off by default
	// answers bounds the refusals answered per source: a refusal is no
	// larger than its request, but a forged flood must not make the
	// server a reflector at the flood's rate.
	answers *sourceLimiter
	ports   PortRange // where test sockets are bound (testport.go)
	replay  *replayCache
	eps     *episodes
	grace   time.Duration
	// onTestEnd is ServerOptions.OnTestEnd.
	onTestEnd func(*TestRecord)

	Counters ServerCounters

	mu      sync.Mutex
	active  map[*serverConn]struct{}
	pending pendingSet // the part of active awaiting activation
	seq     uint64     // Setups accepted, for the pending set's order
	wg      sync.WaitGroup
	ended   chan struct{} // -1: closed when the first Test Connection ends
	once    sync.Once
	// oneTest is the ErrorStatus of that first Test Connection (-1).
	oneTest atomic.Int32
	// draining: no new Test Connection is admitted (drain.go); drained
	// is closed once none is left.
	draining  atomic.Bool
	drained   chan struct{}
	drainOnce sync.Once

	now func() time.Time // the wall clock for authentication (tests replace it)
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
	// TestPorts is the range test ports are drawn from at random; zero:
	// DefaultTestPorts.
	TestPorts PortRange
	// MaxConnsPerSource caps one source's Test Connections, pending and
	// running; 0: DefaultMaxConnsPerSource. SourcePrefix6 is the IPv6
	// prefix length a source is counted by; 0: DefaultSourcePrefix6.
	MaxConnsPerSource int
	SourcePrefix6     int
	// ShutdownGrace bounds how long Serve waits, once stopped, for the
	// running tests to finish their stop handshake; 0: DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// OnTestEnd, if set, receives the record of every activated Test
	// Connection when its Data Phase has ended (the server's archive),
	// on the Test Connection's own goroutine, never an Engine Thread's.
	// It may keep the record; it should return soon, as the Test
	// Connection's slot is released after it returns.
	OnTestEnd func(*TestRecord)
}

// The refusal answer budget per source (an IPv6 source by its /64): far
// more refusals a second than any client gets, far fewer than a flood.
const (
	refusalAnswerRate  = 20
	refusalAnswerBurst = 4 * MaxConnsPerClient
)

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
		cfg:       cfg,
		net:       n,
		log:       log,
		table:     dataphase.BuildRateTable(dataphase.TableOptions{NoJumbo: cfg.NoJumbo, TraditionalMTU: cfg.TraditionalMTU}),
		adm:       admission{maxConns: cfg.MaxConnections, maxBW: cfg.MaxBandwidth},
		limit:     newSourceLimiter(o.SetupRate, o.SetupBurst),
		answers:   newSourceLimiter(refusalAnswerRate, refusalAnswerBurst),
		replay:    newReplayCache(replayCacheMax),
		eps:       newEpisodes(log),
		grace:     o.ShutdownGrace,
		onTestEnd: o.OnTestEnd,
		active:    map[*serverConn]struct{}{},
		ended:     make(chan struct{}),
		drained:   make(chan struct{}),
		now:       time.Now,
	}
	s.keys.Store(cfg.Keys)
	if s.grace <= 0 {
		s.grace = DefaultShutdownGrace
	}
	if s.adm.maxConns <= 0 {
		s.adm.maxConns = MaxConnsPerServer
	}
	s.pending = newPendingSet(o.SourcePrefix6, o.MaxConnsPerSource)
	s.ports = o.TestPorts
	if s.ports.Lo == 0 {
		s.ports = DefaultTestPorts()
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
		sock, err := n.ListenUDP(a, SocketOptions{Family: cfg.Family, V6Only: cfg.Family == dataphase.FamilyV6, SockBuf: cfg.SockBuf})
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
		if cfg.Family == dataphase.FamilyV4 {
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
func resolve(ctx context.Context, host string, fam dataphase.Family) (netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		if (fam == dataphase.FamilyV4 && !a.Is4()) || (fam == dataphase.FamilyV6 && a.Is4()) {
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
		if fam == dataphase.FamilyAny || (fam == dataphase.FamilyV4) == a.Is4() {
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

// TestPorts returns the range test ports are drawn from.
func (s *Server) TestPorts() PortRange { return s.ports }

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
	rw.Add(1)
	go func() {
		defer rw.Done()
		s.flushEpisodes(ctx)
	}()
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

// flushEpisodes writes the summaries of refusal and drop episodes until
// ctx ends, and once more then.
func (s *Server) flushEpisodes(ctx context.Context) {
	t := time.NewTicker(episodeQuiet / 2)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			s.eps.flush(now)
		case <-ctx.Done():
			s.eps.flush(time.Now().Add(episodeQuiet))
			return
		}
	}
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
	recv := func() (int, netip.AddrPort, netip.Addr, error) {
		n, from, err := c.RecvFrom(buf, time.Time{})
		return n, from, netip.Addr{}, err
	}
	if p, ok := c.(pktInfoSocket); ok && c.LocalAddr().Addr().IsUnspecified() {
		if err := p.EnablePktInfo(); err == nil {
			recv = func() (int, netip.AddrPort, netip.Addr, error) { return p.RecvFromTo(buf, time.Time{}) }
		} else {
			s.log.Info("control socket: no destination addresses; a multi-homed server may answer from another address than the one asked",
				"addr", c.LocalAddr(), "err", err)
		}
	}
	for {
		n, from, to, err := recv()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Error("control socket read failed", "addr", c.LocalAddr(), "err", err)
			time.Sleep(100 * time.Millisecond) // a lasting error logs ten lines a second, not a hundred
			continue
		}
		s.Counters.Add(CountSetupRequests)
		s.handleSetup(c, buf[:n], from, to)
	}
}

// pktInfoSocket is a control socket bound to a wildcard address that can
// tell which address a datagram was sent to and answer from that address
// (engine sockets on Linux: IP_PKTINFO, IPV6_PKTINFO). A multi-homed
// server then answers a Setup Request from the address it was asked on and
// binds the Test Connection there, as a client that takes answers only
// from where it sent requires.
type pktInfoSocket interface {
	EnablePktInfo() error
	RecvFromTo(b []byte, deadline time.Time) (int, netip.AddrPort, netip.Addr, error)
	SendToFrom(b []byte, to netip.AddrPort, from netip.Addr) error
}

// sendControl sends a control answer to to from the address from (invalid:
// the kernel picks it).
func sendControl(c Socket, b []byte, to netip.AddrPort, from netip.Addr) error {
	if p, ok := c.(pktInfoSocket); ok && from.IsValid() {
		return p.SendToFrom(b, to, from)
	}
	return c.SendTo(b, to)
}

// OneTestStatus is the ErrorStatus of the Test Connection that ended a -1
// (OneTest) server, which OB-UDPST makes its exit status: 0 when it ended
// with the stop handshake, the last warning's code (1..49) if it warned,
// 255 if it ended otherwise or never started. It is 0 before then.
func (s *Server) OneTestStatus() int { return int(s.oneTest.Load()) }

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
