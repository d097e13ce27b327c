// Package enginenet is the executor the Control Phase runs its Data
// Phases on: the engine's sockets and Engine Threads as a
// control.Network, for the server, the client and the agent (engine does
// not import control: the two meet here). Its experimental settings come
// from the environment, which the command reads once (ReadEnv) and
// passes in.
package enginenet

import (
	"context"
	"log/slog"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/engine"
)

// Experimental settings of the pools of Engine Threads, read from the
// environment for measurements; they are not stable options.
//
//   - UDPSTP_ENGINE_THREADS=n: start at most n Engine Threads instead of
//     one per CPU the process may use (its CPU affinity and its cgroup v2
//     cpu.max quota, which is how a server administrator should size the
//     pool: with the service's CPUAffinity= or a container's CPU limit).
//   - UDPSTP_ENGINE_HOLDOFF=d: bound the receive hold-off to the Go
//     duration d instead of 250µs; 0 turns it off.
//   - UDPSTP_ENGINE_GROUP=d: a grouping window of d (none by default): an
//     Engine Thread whose next deadlines fall within d of the earliest
//     sleeps until the last of them, so each Burst may leave up to d late
//     and the thread wakes less often; "auto" lets each thread choose it
//     from the Test Connections it carries (engine.GroupByLoad).
//   - UDPSTP_ENGINE_PHASE=n: an Engine Thread opens a phase of the grid
//     for each n Test Connections it serves instead of each
//     engine.DefaultPhaseConns; 0 keeps
//     them all on one phase (the schedule before phases).
//   - UDPSTP_CLIENT_THREADS=n: the client's pool starts at most n Engine
//     Threads; 0 runs each Test Connection on a locked thread of its own
//     (the client's executor before the pool).
//   - UDPSTP_ENGINE_GRO=1: the Data Phase sockets of the server and the
//     client read with UDP GRO (engine.SocketOptions.GRO), where the
//     kernel has it; 0 or unset, without (the default, until measurements
//     say GRO pays).
//   - UDPSTP_ENGINE_URING=1: each Engine Thread hands the sends of all its
//     due Test Connections to the kernel in one system call through an
//     io_uring (engine.PoolOptions.Ring), where the kernel allows one; 0
//     or unset, a sendmmsg per Test Connection (the default, until
//     measurements say the ring pays).
const (
	envEngineThreads = "UDPSTP_ENGINE_THREADS"
	envEngineHoldOff = "UDPSTP_ENGINE_HOLDOFF"
	envEngineGroup   = "UDPSTP_ENGINE_GROUP"
	envEnginePhase   = "UDPSTP_ENGINE_PHASE"
	envClientThreads = "UDPSTP_CLIENT_THREADS"
	envEngineGRO     = "UDPSTP_ENGINE_GRO"
	envEngineURing   = "UDPSTP_ENGINE_URING"
)

// Env holds the experimental settings as the environment spells them,
// each "" when unset; they are parsed, and a bad value reported, where
// the executor is made, on its user's log.
type Env map[string]string

// ReadEnv reads the experimental settings through getenv (the command's
// os.Getenv), once, as a server or a client starts.
func ReadEnv(getenv func(string) string) Env {
	e := Env{}
	for _, k := range []string{envEngineThreads, envEngineHoldOff, envEngineGroup, envEnginePhase, envClientThreads, envEngineGRO, envEngineURing} {
		if v := getenv(k); v != "" {
			e[k] = v
		}
	}
	return e
}

func (e Env) get(name string) string { return e[name] }

// Options are how an executor is made.
type Options struct {
	NoGSO bool // --no-gso: send without UDP_SEGMENT
	// ShowErrors (-e): each Data Phase's socket errors and overruns are
	// logged, as totals when it ends.
	ShowErrors bool
	Log        *slog.Logger // nil: nothing logged
	Env        Env          // the experimental settings (ReadEnv)
}

// Net gives the Control Phase the engine's sockets and executors: on
// Linux a pool of Engine Threads, and one Engine Thread per Test
// Connection on every other platform (pool nil).
type Net struct {
	noGSO bool
	gro   bool // UDPSTP_ENGINE_GRO: data sockets read with UDP GRO
	// showErrors (-e): each Data Phase's socket errors and overruns are
	// logged, as totals when it ends (never per event: a saturated path
	// would log thousands a second).
	showErrors bool
	log        *slog.Logger
	pool       *engine.Pool

	bufOnce sync.Once // the first socket's granted buffers are logged at Info
}

// The engine's sockets and executors are what the Control Phase runs on
// (engine does not import control: the assertions are made here, where
// the two meet).
var (
	_ control.Network   = (*Net)(nil)
	_ control.Socket    = (*engine.Socket)(nil)
	_ statsDataPhase    = (*engine.Conn)(nil)
	_ statsDataPhase    = (*engine.PoolConn)(nil)
	_ control.DataPhase = (*reportingDataPhase)(nil)
)

// NewServer returns the executor the server runs its Data Phases on.
func NewServer(o Options) *Net {
	n := &Net{noGSO: o.NoGSO, gro: groOption(o.Env.get, o.Log), showErrors: o.ShowErrors, log: o.Log}
	if engine.PoolSupported {
		n.pool = engine.NewPool(poolOptions(o.Env.get, o.Log))
	}
	return n
}

// GroupingWindow is the widest grouping window the pool's Engine Threads
// used so far (engine.PoolStats.GroupMax); ok is false without a pool.
func (n *Net) GroupingWindow() (d time.Duration, ok bool) {
	if n.pool == nil {
		return 0, false
	}
	return n.pool.Stats().GroupMax, true
}

// Pool is the server's pool of Engine Threads (its counters are on
// /metrics); nil where each Test Connection has a thread of its own.
func (n *Net) Pool() *engine.Pool { return n.pool }

// NewClient returns the executor a client runs its Data Phases on: on
// Linux a pool of Engine Threads, as the server's (with -C n, one thread
// serves several Test Connections from one epoll set with the receive
// hold-off, where a locked thread each, more threads than CPUs, woke per
// datagram and let the receive buffers overflow: docs/performance.md);
// UDPSTP_CLIENT_THREADS=n bounds it to n threads, 0 selects one Engine
// Thread per Test Connection. close releases the pool.
func NewClient(co Options) (net control.Network, close func()) {
	log := co.Log
	n := &Net{noGSO: co.NoGSO, gro: groOption(co.Env.get, log), showErrors: co.ShowErrors, log: log}
	if !engine.PoolSupported {
		return n, func() {}
	}
	o := poolOptions(co.Env.get, log)
	if k, ok := envSetting(co.Env.get, log, envClientThreads,
		"a number of Engine Threads, or 0 for one per Test Connection", intAtLeast(0)); ok {
		if k == 0 {
			return n, func() {}
		}
		o.Threads = k
	}
	n.pool = engine.NewPool(o)
	return n, n.pool.Close
}

// poolOptions reads the experimental settings; a value that does not parse
// is reported and ignored.
func poolOptions(getenv func(string) string, log *slog.Logger) engine.PoolOptions {
	o := engine.PoolOptions{Log: log}
	if k, ok := envSetting(getenv, log, envEngineThreads,
		"a positive number of Engine Threads", intAtLeast(1)); ok {
		o.Threads = k
	}
	if d, ok := envSetting(getenv, log, envEngineHoldOff,
		"a duration such as 100us, or 0 for none", durationUpTo(0)); ok {
		o.HoldOff = d
		if d == 0 {
			o.HoldOff = -1 // engine.PoolOptions: 0 is the default, negative none
		}
	}
	if d, ok := envSetting(getenv, log, envEngineGroup,
		"a duration up to 1ms, 0 for none, or auto (by load)", groupSetting); ok {
		o.Group = d
	}
	if k, ok := envSetting(getenv, log, envEnginePhase,
		"a number of Test Connections per phase, or 0 for one phase", intAtLeast(0)); ok {
		o.PhaseConns = k
		if k == 0 {
			o.PhaseConns = -1 // engine.PoolOptions: 0 is the default, negative one phase
		}
	}

	o.Ring, _ = envSetting(getenv, log, envEngineURing, "1 to send through io_uring, or 0", parseBool)
	return o
}

// groOption reads UDPSTP_ENGINE_GRO; a value that does not parse is
// reported and ignored.
func groOption(getenv func(string) string, log *slog.Logger) bool {
	on, _ := envSetting(getenv, log, envEngineGRO, "1 to read with UDP GRO, or 0", parseBool)
	return on
}

func parseBool(v string) (bool, bool) {
	on, err := strconv.ParseBool(v)
	return on, err == nil
}

// envSetting reads the setting name: ok is false when it is unset, or when
// parse refuses its value, which is then logged once with want (what would
// be taken) and ignored. These settings are read once, as a server or a
// client starts.
func envSetting[T any](getenv func(string) string, log *slog.Logger, name, want string, parse func(string) (T, bool)) (v T, ok bool) {
	s := getenv(name)
	if s == "" {
		return v, false
	}
	if v, ok = parse(s); !ok && log != nil {
		log.Warn("ignoring "+name+": want "+want, "value", s)
	}
	return v, ok
}

// intAtLeast parses a decimal number no less than lo.
func intAtLeast(lo int) func(string) (int, bool) {
	return func(s string) (int, bool) {
		k, err := strconv.Atoi(s)
		return k, err == nil && k >= lo
	}
}

// durationUpTo parses a Go duration, "0" without a unit, from 0 up to hi;
// hi 0 means without an upper bound.
func durationUpTo(hi time.Duration) func(string) (time.Duration, bool) {
	return func(s string) (time.Duration, bool) {
		d, err := time.ParseDuration(s)
		return d, err == nil && d >= 0 && (hi == 0 || d <= hi)
	}
}

// groupSetting reads UDPSTP_ENGINE_GROUP: "auto" is engine.GroupByLoad.
func groupSetting(s string) (time.Duration, bool) {
	if s == "auto" {
		return engine.GroupByLoad, true
	}
	return durationUpTo(time.Millisecond)(s)
}

// Describe says how Data Phases run, for the server's start-up log line:
// the executor, how many Engine Threads it may start and why, and its
// settings.
func (n *Net) Describe() string {
	d := "one Engine Thread per Test Connection"
	if n.pool != nil {
		d = n.pool.Describe()
	}
	if n.gro {
		d += ", UDP GRO on receive (experimental)"
	}
	return d
}

func (n *Net) ListenUDP(laddr netip.AddrPort, o control.SocketOptions) (control.Socket, error) {
	s, err := engine.OpenUDP(laddr, engine.SocketOptions{
		Family: o.Family, V6Only: o.V6Only, SockBuf: o.SockBuf, NoGSO: n.noGSO,
		// The Data Phase sockets, a server's test sockets and a client's
		// socket, are the ones bound to an ephemeral port; a server's
		// control socket (its fixed port) reads with RecvFrom, which
		// would take a merged message for one datagram.
		GRO: n.gro && laddr.Port() == 0,
	})
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	n.logBuffers(s, o.SockBuf)
	return s, nil
}

// logBuffers reports what the kernel granted of the requested socket
// buffers: once at Info (the server's first socket, a control socket, is
// opened as it starts), then per socket at Debug. Linux reports twice the
// usable size (socket(7)); a grant below the request means
// net.core.rmem_max / wmem_max capped it and CAP_NET_ADMIN was not there
// to go past them.
func (n *Net) logBuffers(s *engine.Socket, requested int) {
	if n.log == nil {
		return
	}
	snd, rcv := s.Granted()
	level := slog.LevelDebug
	n.bufOnce.Do(func() { level = slog.LevelInfo })
	n.log.Log(context.Background(), level, "socket buffers", "local", s.LocalAddr(), "requested", requested,
		"granted_sndbuf", snd, "granted_rcvbuf", rcv)
}

func (n *Net) RunDataPhase(sock control.Socket, core *dataphase.Conn, onEvent func(dataphase.Event)) control.DataPhase {
	dp := n.runDataPhase(sock.(*engine.Socket), core, onEvent)
	if !n.showErrors {
		return dp
	}
	r := &reportingDataPhase{statsDataPhase: dp, done: make(chan struct{})}
	go func() {
		<-dp.Done()
		n.logSocketErrors(sock.(*engine.Socket), dp)
		close(r.done)
	}()
	return r
}

// reportingDataPhase ends (Done) only once its socket's errors are logged,
// so a client that exits when its Data Phases are done has written them.
type reportingDataPhase struct {
	statsDataPhase
	done chan struct{}
}

func (r *reportingDataPhase) Done() <-chan struct{} { return r.done }

// statsDataPhase is what both executors' handles offer.
type statsDataPhase interface {
	control.DataPhase
	Stats() engine.ConnStats
}

// logSocketErrors logs an ended Data Phase's socket errors and overruns,
// if it had any (-e).
func (n *Net) logSocketErrors(s *engine.Socket, dp statsDataPhase) {
	st := dp.Stats().Socket
	c := st.Counts
	if c[engine.CountBackpressure]+c.PathErrors()+c[engine.CountGivenUp]+c[engine.CountPreConnect]+
		c[engine.CountSocketErrors]+c[engine.CountGSORefusals] == 0 {
		return
	}
	args := []any{"local", s.LocalAddr(), "peer", s.Peer(),
		"overruns", c[engine.CountBackpressure], engine.CountRefusedDatagrams.String(), c[engine.CountRefusedDatagrams]}
	// Every path counter by its name (connection_refused, host_unreachable,
	// ..., pre_connect_dropped).
	for k := engine.CountConnRefused; k <= engine.CountGSORefusals; k++ {
		args = append(args, k.String(), c[k])
	}
	n.log.Warn("socket errors", append(args, "gso", st.GSO, "gro", st.GRO)...)
}

func (n *Net) runDataPhase(s *engine.Socket, core *dataphase.Conn, onEvent func(dataphase.Event)) statsDataPhase {
	if n.pool == nil {
		return engine.RunConn(s, core, onEvent, n.log)
	}
	if n.log == nil || !n.log.Enabled(context.Background(), slog.LevelDebug) {
		return n.pool.Run(s, core, onEvent)
	}
	// At debug level the end of each Data Phase is logged with the Load
	// Sender's own figures, which no Status PDU carries to the peer, for
	// a person to read; programs read them from the server's counters
	// (control.ServerSnapshot.DataDir, the metrics endpoint).
	var tot dataphase.SubIntervalResult
	var pcp atomic.Pointer[engine.PoolConn]
	pc := n.pool.Run(s, core, func(ev dataphase.Event) {
		switch ev.Kind {
		case dataphase.EvSubInterval:
			r := &ev.SubInt
			tot.SkippedBursts += r.SkippedBursts
			tot.SkippedDgrams += r.SkippedDgrams
			tot.WithheldDgrams += r.WithheldDgrams
			tot.SenderPlanned += r.SenderPlanned
			tot.SenderDelivered += r.SenderDelivered
		case dataphase.EvEnd:
			var st engine.ConnStats
			if pc := pcp.Load(); pc != nil {
				st = pc.Stats()
			}
			n.log.Debug("data phase totals", "local", s.LocalAddr(), "peer", s.Peer(), "load_sender", core.LoadSender(),
				"skipped_bursts", tot.SkippedBursts, "skipped_datagrams", tot.SkippedDgrams, "withheld_datagrams", tot.WithheldDgrams,
				"planned_datagrams", tot.SenderPlanned, "delivered_datagrams", tot.SenderDelivered,
				"sent", st.Socket.Counts[engine.CountSentDatagrams], "received", st.Socket.Counts[engine.CountRecvDatagrams],
				"backpressure", st.Socket.Counts[engine.CountBackpressure], "turns", st.Turns)
		}
		onEvent(ev)
	})
	pcp.Store(pc)
	return pc
}
