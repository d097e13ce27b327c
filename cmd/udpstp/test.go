package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/report"
)

// clientTest is one run of `udpstp client`: its Test Connections, the
// events their Engine Threads hand over, and the report.
type clientTest struct {
	cfg     *control.ClientConfig
	out     io.Writer
	col     *report.Collector
	net     *engineNet
	mcIdent uint16
	hosts   []report.Host
	// connMin and connMax are the run's minimum and number of Test
	// Connections (-C, at least one per server).
	connMin, connMax int

	mu     sync.Mutex
	queue  []connEvent
	signal chan struct{}
}

// connEvent is a Data Phase event of connection conn, handed from its
// Engine Thread to the client's goroutine (a few per second; never per
// datagram).
type connEvent struct {
	conn int
	ev   dataphase.Event
}

// connState is one Test Connection of the run.
type connState struct {
	index  int
	server control.ServerAddr
	cc     *control.ClientConn
	dp     control.DataPhase
	suffix string
	ended  bool
}

// runTest runs one test and returns its ErrorStatus, the process's exit
// status. The result goes to standard output (text or JSON) and, with
// --output, to a JSON file written atomically whatever happens, also on an
// interrupt.
func runTest(ctx context.Context, cfg *control.ClientConfig, lo localOptions) int {
	format, _ := report.ParseFormat(cfg.Format) // clientOptions checked it
	t := &clientTest{
		cfg: cfg, out: os.Stdout,
		connMin: max(cfg.ConnMin, 1), connMax: max(cfg.ConnMax, len(cfg.Servers), 1),
		net: &engineNet{noGSO: lo.NoGSO, showErrors: cfg.ShowErrors,
			log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))},
		signal: make(chan struct{}, 1),
	}
	t.col = report.New(t.out, report.Options{
		Format: format, NoSubInt: cfg.NoSubInt, LossRatio: cfg.LossRatio, Verbose: cfg.Verbose,
		Connections: t.connMax, MinConnections: t.connMin,
	})
	if format == report.FormatText {
		t.col.Banner("udpstp", version)
	}
	var id [2]byte
	rand.Read(id[:])
	t.mcIdent = max(binary.BigEndian.Uint16(id[:]), 1)
	for _, s := range cfg.Servers {
		t.hosts = append(t.hosts, report.Host{Name: s.Host, ControlPort: s.Port})
	}
	status := t.run(ctx)
	if cfg.OutputFile != "" {
		f := format
		if !f.IsJSON() {
			f = report.FormatJSONFormatted
		}
		if err := report.WriteFileAtomic(cfg.OutputFile, t.col.Document(f), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "udpstp: ERROR: cannot write the result file: %v\n", err)
			if status == 0 {
				status = exitInit
			}
		}
	}
	return status
}

// run sets up the connections (round robin over the servers), runs their
// Data Phases and reports. It returns the ErrorStatus.
func (t *clientTest) run(ctx context.Context) int {
	conns := make([]*connState, t.connMax)
	var wg sync.WaitGroup
	for i := range conns {
		srv := t.cfg.Servers[i%len(t.cfg.Servers)]
		c := &connState{index: i, server: srv}
		conns[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			cc, err := control.Activate(ctx, t.net, t.cfg, srv, i, t.mcIdent, func(msg string) { t.col.Alert(msg) })
			if err != nil {
				t.post(connEvent{conn: i, ev: dataphase.Event{Kind: evSetupFailed, Text: err.Error(), Code: setupStatus(err)}})
				return
			}
			c.cc = cc
			c.suffix = fmt.Sprintf(" [Server %s:%d]", cc.Server.Addr(), cc.Server.Port())
			t.post(connEvent{conn: i, ev: dataphase.Event{Kind: evActivated}})
		}()
	}
	active := len(conns)
	interrupted, over := false, false
	ctxDone := ctx.Done()
	var giveUp <-chan time.Time
	// stopAll ends the test for every connection, on an interrupt or when
	// fewer than the minimum are left (OB-UDPST then exits at once,
	// without results). Each Data Phase tells its server and ends within a
	// turn; a setup in progress ends with the interrupt or at its deadline.
	stopAll := func() {
		over = true
		for _, c := range conns {
			if c.dp != nil && !c.ended {
				c.dp.Stop()
			}
		}
		giveUp = time.After(endGrace)
	}
	for active > 0 {
		select {
		case <-t.signal:
		case <-ctxDone:
			interrupted, ctxDone = true, nil
			stopAll()
		case <-giveUp:
			active = 0
		}
		for _, e := range t.drain() {
			c := conns[e.conn]
			switch e.ev.Kind {
			case evSetupFailed:
				c.ended = true
				active--
				if !interrupted { // an interrupted setup is no failure of its own
					t.message(e.ev.Code, e.ev.Text)
					t.col.ConnEnded(false)
				}
			case evActivated:
				if over {
					c.cc.Sock.Close()
					c.ended = true
					active--
					continue
				}
				t.start(c)
			default:
				if t.apply(c, e.ev) {
					active--
				}
			}
		}
		if !over && !interrupted && t.col.CheckMinConnections() {
			stopAll()
		}
	}
	wg.Wait()
	for _, c := range conns {
		if c.dp == nil {
			continue
		}
		select {
		case <-c.dp.Done():
			c.cc.Sock.Close()
		case <-time.After(endGrace):
			// An Engine Thread that does not end is reported, not waited
			// for: the result is written regardless.
			fmt.Fprintf(os.Stderr, "udpstp: connection %d did not end; its socket is left open\n", c.index+1)
		}
	}
	if interrupted {
		t.col.Error(report.StatusGeneral, "ERROR: Test interrupted")
	}
	if err := t.col.Finish(); err != nil {
		fmt.Fprintf(os.Stderr, "udpstp: ERROR: writing results: %v\n", err)
	}
	return t.col.ErrorStatus()
}

// message records a warning (1..49) or an error (50 and above).
func (t *clientTest) message(code uint8, text string) {
	if code < 50 {
		t.col.Warning(int(code), text)
	} else {
		t.col.Error(int(code), text)
	}
}

// endGrace bounds how long the client waits for its connections to end
// once it has decided the test is over.
const endGrace = 4 * time.Second

// Kinds of the client's own events, next to the Data Phase's.
const (
	evSetupFailed dataphase.EventKind = 100 + iota
	evActivated
)

func setupStatus(err error) uint8 {
	var se *control.SetupError
	if errors.As(err, &se) {
		return uint8(se.Status)
	}
	return exitInit
}

// post hands an event to the client's goroutine; it never blocks, so an
// Engine Thread can call it.
func (t *clientTest) post(e connEvent) {
	t.mu.Lock()
	t.queue = append(t.queue, e)
	t.mu.Unlock()
	select {
	case t.signal <- struct{}{}:
	default:
	}
}

func (t *clientTest) drain() []connEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.queue
	t.queue = nil
	return q
}

// start reports the activation and runs the connection's Data Phase.
func (t *clientTest) start(c *connState) {
	g := &c.cc.Granted
	for i := range t.hosts {
		if t.hosts[i].Addr == "" && t.hosts[i].Name == c.server.Host && t.hosts[i].ControlPort == c.server.Port {
			t.hosts[i].Addr = c.cc.Server.Addr().String()
		}
	}
	info := report.TestInfo{
		Upstream:    g.CmdRequest == control.ActivationUpstream,
		TestIntTime: int(g.TestIntTime), SubIntPeriod: int(g.SubIntPeriod), TrialInt: int(g.TrialInt),
		LowThresh: int(g.LowThresh), UpperThresh: int(g.UpperThresh),
		UseOWD: g.UseOwDelVar == 1, IgnoreOooDup: g.IgnoreOooDup == 1,
		RandomPayload: g.ModifierBitmap&control.ActivationRandomPayload != 0,
		MCIdent:       int(t.mcIdent), SRIndex: g.SRIndexConf, SRStart: g.StartIndex(),
		SlowAdjThresh: int(g.SlowAdjThresh), HighSpeedDelta: int(g.HighSpeedDelta), SeqErrThresh: int(g.SeqErrThresh),
		Algorithm: g.RateAdjAlgo, ConnMin: t.connMin, ConnMax: t.connMax,
		DSCPECN: int(g.DSCPECN), CEThresh: int(g.ECNCEThresh),
		Jumbo: !t.cfg.NoJumbo, TraditionalMTU: t.cfg.TraditionalMTU, IPv6: c.cc.Params.IPv6, Family: t.cfg.Family,
		Hosts: t.hosts, ServerPort: int(c.cc.TestPeer.Port()),
		ClientAddr: c.cc.Local.Addr().Unmap().String(), ClientPort: int(c.cc.Local.Port()),
		MaxBandwidth: t.cfg.MaxBandwidth, Bimodal: t.cfg.Bimodal,
	}
	if t.cfg.Suppress {
		info.SuppCount = t.cfg.Bimodal
	}
	if t.col.Activate(info) {
		t.col.WriteHeader(c.index)
	}
	params := c.cc.Params
	if s, ok := c.cc.Sock.(interface{ PathMTU() int }); ok {
		// The IP fragmentation of jumbo datagrams on a smaller MTU counts
		// in the L2/L1 figures (dataphase/frag.go).
		params.PathMTU = s.PathMTU()
	}
	core := dataphase.NewConn(params, c.cc.Activated)
	conn := c.index
	c.dp = t.net.RunDataPhase(c.cc.Sock, core, func(ev dataphase.Event) {
		if ev.Kind == dataphase.EvTrial && !t.cfg.Debug {
			return // 20 a second, and only debug output wants them
		}
		t.post(connEvent{conn: conn, ev: ev})
	})
}

// apply takes one Data Phase event into the report; it reports whether the
// connection ended.
func (t *clientTest) apply(c *connState, ev dataphase.Event) bool {
	switch ev.Kind {
	case dataphase.EvSubInterval:
		t.col.Add(c.index, ev.SubInt)
	case dataphase.EvWarning:
		code := ev.Code
		if code == 0 { // our own errors (a socket failure) carry no OB-UDPST code
			code = report.StatusGeneral
		}
		t.message(code, ev.Text+c.suffix)
	case dataphase.EvMinimum:
		if t.cfg.Verbose {
			fmt.Fprintf(t.out, "[%d]Minimum One-Way Delay(ms): %d [w/clock diff], Round-Trip Time(ms): %d\n",
				c.index+1, ev.ClockDeltaMin, ev.RTTMinimum)
		}
	case dataphase.EvTrial:
		if t.cfg.Verbose && t.cfg.Debug {
			t.debugLine(c, &ev.Trial)
		}
	case dataphase.EvEnd:
		if c.ended {
			return false
		}
		c.ended = true
		switch ev.End {
		case dataphase.EndStopped:
			t.col.ConnEnded(true)
		case dataphase.EndLocalStop:
			// Our own interrupt: the results so far stand (the run then
			// ends with ErrorStatus 255), unlike a connection the network
			// lost, which counts against the minimum.
			t.col.ConnEnded(true)
		default:
			t.col.ConnEnded(false)
		}
		return true
	}
	return false
}

// debugLine is OB-UDPST's per-Status-PDU debug line (-v -D).
func (t *clientTest) debugLine(c *connState, tr *dataphase.TrialInfo) {
	rtt := int64(-1)
	if tr.RTTVarSample != dataphase.NoDelay {
		rtt = int64(tr.RTTVarSample)
	}
	hdr := uint64(dataphase.L3Overhead(c.cc.Params.IPv6))
	mbps := 0.0
	if tr.DeltaTimeUs > 0 {
		mbps = float64((uint64(tr.Datagrams)*hdr+uint64(tr.Bytes))*8) / float64(tr.DeltaTimeUs)
	}
	owdMin := tr.DelayVarMin
	if owdMin == dataphase.NoDelay {
		owdMin = 0
	}
	fmt.Fprintf(t.out, "[%d]DEBUG Status Feedback [Loss/OoO/Dup: %d/%d/%d, OWDVar(ms): %d/%d/%d, RTTVar(ms): %d] Mbps(L3/IP): %.2f\n",
		c.index+1, tr.Loss, tr.Ooo, tr.Dup, owdMin, tr.DelayVarAvg, tr.DelayVarMax, rtt, mbps)
}
