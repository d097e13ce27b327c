package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/activation"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/engine"
	"github.com/udpstp/udpstp/internal/buildinfo"
	"github.com/udpstp/udpstp/report"
)

// Serve runs `udpstp server` until ctx ends (SIGINT, SIGTERM): the control
// sockets answer Setup Requests and every accepted Test Connection gets its
// Data Phase on the engine's executor. On the way it checks its files
// before opening any socket, detaches with -x, takes systemd's sockets,
// tells systemd how it is doing, reloads its key file on SIGHUP and
// writes -G statistics.
func Serve(ctx context.Context, cfg *control.ServerConfig, lo Config) error {
	child := daemonChildFromEnv()
	err := serveService(ctx, cfg, lo, child)
	child.fail(err) // a no-op once the server reported ready
	return err
}

func serveService(ctx context.Context, cfg *control.ServerConfig, lo Config, child *daemonChild) error {
	so := lo.Service
	// A SIGHUP must not end the server (its default action), even one that
	// comes while it starts.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	// Everything that can be wrong with the options is found before a
	// socket is opened, and in the shell's process with -x (daemonize
	// opens the -l file there, serviceLogOutput in the background one).
	if err := so.absPaths(); err != nil {
		return exitError("ERROR: "+err.Error(), ExitConfig)
	}
	if err := checkStatsFile(so.StatsFile, time.Now()); err != nil {
		return err
	}
	recordEvery, fileEvery, firstFile, err := statsTiming()
	if err != nil {
		return exitError("ERROR: "+err.Error(), ExitConfig)
	}
	if so.Daemon && child == nil {
		return daemonize(so)
	}
	if child != nil {
		os.Chdir("/") // as OB-UDPST's daemon; every path is absolute by now
	}

	out, err := serviceLogOutput(so, child != nil)
	if err != nil {
		return fopenError("log-file", err)
	}
	if out.closer != nil {
		defer out.closer.Close()
	}
	level := so.LogLevel
	if cfg.Debug && !so.LogLevelSet {
		level = slog.LevelDebug
	}
	log := newServiceLogger(out, so.LogFormat, level)

	// --metrics-listen is bound before the control sockets: an address in
	// use is a start error, like a control port in use.
	mx, err := listenMetrics(so.MetricsListen)
	if err != nil {
		return exitError("ERROR: "+err.Error(), ExitInit)
	}
	defer mx.close()

	arc, err := openArchive(ctx, so.Archive, log)
	if err != nil {
		return exitError("ERROR: "+err.Error(), ExitInit)
	}
	var onTestEnd func(*control.TestRecord)
	if arc != nil {
		onTestEnd = arc.Add
		defer func() {
			if err := arc.Close(); err != nil {
				log.Error("archive: closing", "err", err)
			}
		}()
	}

	socks, err := activatedSockets()
	if err != nil {
		return exitError("ERROR: "+err.Error(), ExitInit)
	}
	base := newServerNet(lo, cfg.ShowErrors, log)
	snet := newStatsNet(base)
	srv, err := control.NewServerWith(*cfg, snet, log, control.ServerOptions{
		Sockets:   socks,
		SetupRate: float64(so.SetupRate), SetupBurst: SetupBurst(so.SetupRate),
		TestPorts: so.TestPorts, MaxConnsPerSource: so.PerSource, SourcePrefix6: so.SourcePrefix6,
		OnTestEnd: onTestEnd,
	})
	if err != nil {
		return exitError("ERROR: "+err.Error(), ExitInit)
	}
	log.Info("udpstp server started", "version", buildinfo.Get().Version, "protocol", fmt.Sprintf("%d (accepts %d-%d)",
		control.ProtocolVersion, control.MinLegacyProtocolVer, control.ProtocolVersion),
		"listen", srv.Addrs(), "socket_activation", len(socks) > 0, "executor", base.describe(),
		"jumbo", !cfg.NoJumbo, "traditional_mtu", cfg.TraditionalMTU, "max_bandwidth_mbps", cfg.MaxBandwidth,
		"auth", cfg.Keys.Configured(), "max_connections", cfg.MaxConnections, "setup_rate_per_source", so.SetupRate,
		"test_ports", srv.TestPorts().String(), "test_port_bits", fmt.Sprintf("%.1f", srv.TestPorts().Bits()),
		"gso", !lo.NoGSO, "pid", os.Getpid())
	if len(socks) > 0 && len(cfg.BindAddrs) > 0 {
		log.Warn("control sockets passed by systemd are used; the bind addresses on the command line are ignored", "ignored", cfg.BindAddrs)
	}
	warnWeakKeys(log, cfg.Keys)

	reloads := &control.KeyReloads{Single: so.AuthKey, Path: so.KeyFile, Option: opt("key-file").String(), Log: log}
	nt := newNotifier(log)
	nt.send("READY=1")
	child.ready()

	// The service's helpers run until Serve has returned.
	svc, stopSvc := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	startWatchdog(svc, &wg, nt, log)
	wg.Add(2)
	go func() { defer wg.Done(); runStatus(svc, srv, nt, statusPeriod) }()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-svc.Done():
				return
			case <-hup:
				reloadKeys(srv, reloads, nt, log)
			}
		}
	}()
	// Ready while admitting: not once a drain or a stop began.
	ready := func() bool { return !srv.Draining() && ctx.Err() == nil }
	mx.start(svc, &wg, srv, snet, base, arc, ready, log)
	if so.StatsFile != "" {
		sc := &statsCollector{
			pattern: so.StatsFile, srv: srv, net: snet, log: log, started: processStart,
			record: recordEvery, file: fileEvery, first: firstFile,
			header: statsHeader(cfg, srv, lo),
		}
		wg.Add(1)
		go func() { defer wg.Done(); sc.run(svc) }()
	}
	// STOPPING=1 as soon as the signal comes, not when the tests are over.
	go func() {
		select {
		case <-ctx.Done():
			log.Info("stopping: no new tests; running tests end with the stop handshake", "running", srv.Snapshot().Running,
				"grace", control.DefaultShutdownGrace)
			nt.stop()
		case <-svc.Done():
		}
	}()

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
	nt.stop()
	stopSvc()
	wg.Wait()
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

// processStart is when this process started, for -G's process_uptime.
var processStart = time.Now()

// activatedSockets takes the control sockets systemd passed (socket
// activation, LISTEN_FDS), if any. They are taken without switching them
// to blocking mode, and must be UDP sockets.
func activatedSockets() ([]control.Socket, error) {
	files := activation.Files(true)
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
func reloadKeys(srv *control.Server, reloads *control.KeyReloads, nt *notifier, log *slog.Logger) {
	if reloads.Path == "" {
		log.Info("SIGHUP: no key file to reload (--key-file/-K not given)")
		return
	}
	nt.reloading()
	defer nt.reloaded()
	if keys := reloads.Reload(srv.Keys()); keys != nil {
		srv.SetKeys(keys)
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
