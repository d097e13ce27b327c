package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/engine"
	"github.com/udpstp/udpstp/internal/buildinfo"
	"github.com/udpstp/udpstp/internal/enginenet"
	"github.com/udpstp/udpstp/internal/sdnotify"
	"github.com/udpstp/udpstp/report"
)

// Serve runs `udpstp server` until ctx ends (SIGINT, SIGTERM): the control
// sockets answer Setup Requests and every accepted Test Connection gets its
// Data Phase on the engine's executor. On the way it checks its files
// before opening any socket, detaches with -x, takes systemd's sockets,
// tells systemd how it is doing, reloads its key file when lo.Reload
// asks (SIGHUP) and writes -G statistics.
func Serve(ctx context.Context, cfg *control.ServerConfig, lo Config) error {
	child := &daemonChild{w: lo.Daemon.Report}
	err := serveService(ctx, cfg, lo, child)
	child.fail(err) // a no-op once the server reported ready
	return err
}

func serveService(ctx context.Context, cfg *control.ServerConfig, lo Config, child *daemonChild) error {
	so := lo.Service
	opt := optionNames(lo.OptionName).opt
	started := time.Now() // -G's process_uptime counts from here
	isChild := child.w != nil
	st, err := checkOptions(so, lo, opt)
	if err != nil {
		return err
	}
	if so.Daemon && !isChild {
		return daemonize(so, lo.Daemon, opt)
	}
	if isChild {
		os.Chdir("/") // as OB-UDPST's daemon; every path is absolute by now
	}

	log, closeLog, err := openServiceLog(cfg, lo, isChild, opt)
	if err != nil {
		return err
	}
	defer closeLog()

	// --metrics-listen is bound before the control sockets: an address in
	// use is a start error, like a control port in use.
	mx, err := listenMetrics(so.MetricsListen, opt)
	if err != nil {
		return exitError("ERROR: "+err.Error(), ExitInit)
	}
	defer mx.close()

	arc, err := openArchive(ctx, so.Archive, log, opt)
	if err != nil {
		return exitError("ERROR: "+err.Error(), ExitInit)
	}
	var onTestEnd func(*control.TestRecord)
	if arc != nil {
		onTestEnd = arc.Add
		arc.watchDrain(lo.Drain, so.drainTimeout(cfg.MaxTestTime))
		defer arc.close() // an early return; after the stop's, a no-op
	}

	socks, err := activatedSockets(lo.Listeners)
	if err != nil {
		return exitError("ERROR: "+err.Error(), ExitInit)
	}
	base := enginenet.NewServer(enginenet.Options{NoGSO: lo.NoGSO, ShowErrors: cfg.ShowErrors, Log: log, Env: lo.Engine})
	snet := newStatsNet(base)
	srv, err := control.NewServerWith(*cfg, snet, log, controlOptions(so, socks, onTestEnd))
	if err != nil {
		return exitError("ERROR: "+err.Error(), ExitInit)
	}
	logStarted(log, cfg, lo, srv, base, len(socks) > 0)

	reloads := &control.KeyReloads{Single: so.AuthKey, Path: so.KeyFile, Option: opt("key-file").String(), Log: log}
	nt := sdnotify.New(lo.Systemd.Socket, log)
	nt.Ready()
	child.ready()
	if lo.Ready != nil {
		lo.Ready(srv.Addrs())
	}

	// The service's helpers run until Serve has returned.
	h := &helpers{ctx: ctx, cfg: cfg, lo: lo, srv: srv, snet: snet, base: base, arc: arc, mx: mx, nt: nt,
		reloads: reloads, log: log, opt: opt, started: started, stats: st}
	stopHelpers := h.start()

	// The first SIGTERM drains (drain.go); Serve's own context is the
	// hard stop.
	serveCtx, stopServe := context.WithCancel(ctx)
	defer stopServe()
	served := make(chan struct{})
	drainDone := make(chan struct{})
	go func() {
		defer close(drainDone)
		runDrain(lo.Drain, ctx.Done(), served, so.drainTimeout(cfg.MaxTestTime), srv, nt, log, stopServe)
	}()
	err = srv.Serve(serveCtx)
	close(served)
	<-drainDone
	nt.Stop()
	stopHelpers()
	// The records are in the store, or on disk for the next start, before
	// the server says it stopped (server/archive.go).
	arc.close()
	if err != nil {
		return exitError("ERROR: "+err.Error(), 1)
	}
	log.Info("udpstp server stopped")
	if cfg.OneTest {
		// -1: the test's ErrorStatus is the exit status, as OB-UDPST's.
		if st := srv.OneTestStatus(); st != 0 {
			return exitError("", st)
		}
	}
	return nil
}

// helpers are the service's goroutines beside the control loop: the
// watchdog, the status line, key reloads, the metrics endpoint, -G, and
// STOPPING=1 at the signal.
type helpers struct {
	ctx     context.Context // Serve's: its end is the signal
	cfg     *control.ServerConfig
	lo      Config
	srv     *control.Server
	snet    *statsNet
	base    *enginenet.Net
	arc     *serverArchive
	mx      *metricsEndpoint
	nt      *sdnotify.Notifier
	reloads *control.KeyReloads
	log     *slog.Logger
	opt     func(string) option
	started time.Time
	stats   statsEvery
}

// start starts them; the function returned stops them and waits until
// each has returned.
func (h *helpers) start() (stop func()) {
	so := h.lo.Service
	svc, stopSvc := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	startWatchdog(svc, &wg, h.lo.Systemd, h.nt, h.log)
	wg.Add(2)
	go func() { defer wg.Done(); runStatus(svc, h.srv, h.nt, statusPeriod) }()
	go func() {
		defer wg.Done()
		sdnotify.RunReloads(svc, h.lo.Reload, func() { reloadKeys(h.srv, h.reloads, h.nt, h.log) })
	}()
	// Ready while admitting: not once a drain or a stop began.
	ready := func() bool { return !h.srv.Draining() && h.ctx.Err() == nil }
	h.mx.start(svc, &wg, h.srv, h.snet, h.base, h.arc, ready, h.log, h.opt)
	if so.StatsFile != "" {
		sc := &statsCollector{
			pattern: so.StatsFile, srv: h.srv, net: h.snet, log: h.log, started: h.started, opt: h.opt,
			record: h.stats.record, file: h.stats.file, first: h.stats.first,
			header: statsHeader(h.cfg, h.srv, h.lo),
		}
		wg.Add(1)
		go func() { defer wg.Done(); sc.run(svc) }()
	}
	// STOPPING=1 as soon as the signal comes, not when the tests are over.
	go func() {
		select {
		case <-h.ctx.Done():
			h.log.Info("stopping: no new tests; running tests end with the stop handshake", "running", h.srv.Snapshot().Running,
				"grace", control.DefaultShutdownGrace)
			h.nt.Stop()
		case <-svc.Done():
		}
	}()
	return func() { stopSvc(); wg.Wait() }
}

// openServiceLog opens the service's log (-l, journald or standard
// error) at its level; close closes its file, if any.
func openServiceLog(cfg *control.ServerConfig, lo Config, isChild bool, opt func(string) option) (log *slog.Logger, close func(), err error) {
	so := lo.Service
	out, err := serviceLogOutput(so, isChild, lo.Stderr, lo.Journal)
	if err != nil {
		return nil, nil, fopenError(opt("log-file"), err)
	}
	close = func() {}
	if out.closer != nil {
		close = func() { out.closer.Close() }
	}
	level := so.LogLevel
	if cfg.Debug && !so.LogLevelSet {
		level = slog.LevelDebug
	}
	return newServiceLogger(out, so.LogFormat, level), close, nil
}

// controlOptions are the control server's options from the service's:
// admission by source, the test ports, the record of each test.
func controlOptions(so Options, socks []control.Socket, onTestEnd func(*control.TestRecord)) control.ServerOptions {
	return control.ServerOptions{
		Sockets:   socks,
		SetupRate: float64(so.SetupRate), SetupBurst: SetupBurst(so.SetupRate),
		TestPorts: so.TestPorts, MaxConnsPerSource: so.PerSource, SourcePrefix6: so.SourcePrefix6,
		OnTestEnd: onTestEnd,
	}
}

// statsEvery is when -G writes: a record every record, a file every file,
// the first after first (service_stats.go).
type statsEvery struct{ record, file, first time.Duration }

// checkOptions finds everything that can be wrong with the options before
// a socket is opened, and in the shell's process with -x (daemonize opens
// the -l file there, serviceLogOutput in the background one).
func checkOptions(so Options, lo Config, opt func(string) option) (statsEvery, error) {
	if err := so.absPaths(); err != nil {
		return statsEvery{}, exitError("ERROR: "+err.Error(), ExitConfig)
	}
	if err := checkStatsFile(so.StatsFile, time.Now(), opt); err != nil {
		return statsEvery{}, err
	}
	record, file, first, err := statsTiming(lo.StatsTiming)
	if err != nil {
		return statsEvery{}, exitError("ERROR: "+err.Error(), ExitConfig)
	}
	return statsEvery{record, file, first}, nil
}

// logStarted logs the start-up line: what the server serves and with
// which limits, and what an operator may have meant otherwise.
func logStarted(log *slog.Logger, cfg *control.ServerConfig, lo Config, srv *control.Server, base *enginenet.Net, activated bool) {
	so := lo.Service
	log.Info("udpstp server started", "version", buildinfo.Get().Version, "protocol", fmt.Sprintf("%d (accepts %d-%d)",
		control.ProtocolVersion, control.MinLegacyProtocolVer, control.ProtocolVersion),
		"listen", srv.Addrs(), "socket_activation", activated, "executor", base.Describe(),
		"jumbo", !cfg.NoJumbo, "traditional_mtu", cfg.TraditionalMTU, "max_bandwidth_mbps", cfg.MaxBandwidth,
		"auth", cfg.Keys.Configured(), "max_connections", cfg.MaxConnections, "setup_rate_per_source", so.SetupRate,
		"test_ports", srv.TestPorts().String(), "test_port_bits", fmt.Sprintf("%.1f", srv.TestPorts().Bits()),
		"gso", !lo.NoGSO, "pid", os.Getpid())
	if activated && len(cfg.BindAddrs) > 0 {
		log.Warn("control sockets passed by systemd are used; the bind addresses on the command line are ignored", "ignored", cfg.BindAddrs)
	}
	warnWeakKeys(log, cfg.Keys)
}

// activatedSockets takes the control sockets systemd passed (socket
// activation, LISTEN_FDS: the command takes them without switching them
// to blocking mode), if any. They must be UDP sockets.
func activatedSockets(files []*os.File) ([]control.Socket, error) {
	var socks []control.Socket
	for i, f := range files {
		s, err := engine.SocketFromFile(f)
		if err != nil {
			for _, s := range socks {
				s.Close()
			}
			for _, f := range files[i+1:] {
				f.Close()
			}
			return nil, fmt.Errorf("socket passed by systemd: %w", err)
		}
		socks = append(socks, s)
	}
	return socks, nil
}

// reloadKeys reads the key file again (SIGHUP) and puts its keys in use;
// running tests keep the keys they started with. A file that does not
// load, or looks half-written, leaves the keys in use as they were
// (control.KeyReloads, which logs once per episode of failures).
func reloadKeys(srv *control.Server, reloads *control.KeyReloads, nt *sdnotify.Notifier, log *slog.Logger) {
	if reloads.Path == "" {
		log.Info("SIGHUP: no key file to reload (--key-file/-K not given)")
		return
	}
	nt.Reloading()
	defer nt.Reloaded()
	if keys := reloads.Reload(srv.Keys(), srv.SetKeys); keys != nil {
		warnWeakKeys(log, keys)
	}
}

// warnWeakKeys logs, once per key and never with the key itself, each key
// short enough to guess offline.
func warnWeakKeys(log *slog.Logger, keys *control.ServerKeys) {
	for _, k := range keys.WeakKeys() {
		log.Warn("weak authentication key: "+control.WeakKeyAdvice, "key", k, "min_bits", control.MinKeyBits)
	}
}

// statsHeader is the fixed part of every -G file.
func statsHeader(cfg *control.ServerConfig, srv *control.Server, lo Config) report.ServerStatsFile {
	h := report.ServerStatsFile{
		ControlPort:    cfg.Port,
		ProcessID:      os.Getpid(),
		JumboDatagrams: !cfg.NoJumbo,
		TraditionalMTU: cfg.TraditionalMTU,
		GSOEnabled:     !lo.NoGSO && gsoBuild,
		MaxConnections: cfg.MaxConnections,
		MaxBandwidth:   cfg.MaxBandwidth,
	}
	if addrs := srv.Addrs(); len(addrs) > 0 {
		h.ControlPort = int(addrs[0].Port())
		if len(cfg.BindAddrs) > 0 {
			h.HostName = cfg.BindAddrs[0]
			h.HostIPAddress = addrs[0].Addr().String()
		}
	}
	return h
}

// gsoBuild: UDP GSO exists in this build (Linux).
const gsoBuild = runtime.GOOS == "linux"
