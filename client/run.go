package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/discover"
	"github.com/udpstp/udpstp/internal/netstat"
	"github.com/udpstp/udpstp/report"
)

// run is one Run: its Test Connections, the events their Engine Threads
// and setup goroutines hand over, and the report.
type run struct {
	cfg     *control.ClientConfig
	o       Options
	col     *report.Collector
	mcIdent uint16
	hosts   []report.Host
	// connMin and connMax are the run's minimum and number of Test
	// Connections (-C, at least one per server).
	connMin, connMax int
	iface            *ifaceRates       // -E, nil without (iface.go)
	intervals        []report.Interval // the report's figures not yet emitted (intervals.go)

	box *mailbox[posted]
	// text: the report is OB-UDPST's text lines (not JSON).
	text bool
	// sel is the failover search's measurement (rttselect.go), once the
	// search is over; nil without one.
	sel *report.Selection
	// bound is each Test Connection's share of cfg.MaxRateMbps
	// (dataphase/ratebound.go); zero: none.
	bound dataphase.RateBound
	// reasm counts the host's IP reassembly failures over a Load
	// Receiver's test (reassembly.go); without read for a Load Sender.
	reasm reasmWatch
}

// posted is an event of Test Connection conn handed to the run's goroutine
// (a few per second; never per datagram): a Data Phase's, or the run's own
// (the kinds below).
type posted struct {
	conn int
	ev   dataphase.Event
	// With a failover search (failover.go), on evActivated: the server
	// chosen and the candidates that failed before it.
	chosen *discover.Candidate
	tried  []string
	sel    *report.Selection // with SelectRTT: the measurement (rttselect.go)
}

// Kinds of the run's own posted events, next to the Data Phase's.
const (
	evSetupFailed dataphase.EventKind = 100 + iota // Code, Text: the SetupError
	evActivated
	evAlert // Text: an ALERT line of the Control Phase
	// evSetupSkipped: a Test Connection of a failover search that found
	// no server; the search's own connection reported why.
	evSetupSkipped
)

// groupingWindower is an executor that tells the widest grouping window
// its Engine Threads used (enginenet.Net): the result says it.
type groupingWindower interface {
	GroupingWindow() (time.Duration, bool)
}

// connState is one Test Connection of the run.
type connState struct {
	index  int
	server control.ServerAddr
	cc     *control.ClientConn
	dp     control.DataPhase
	suffix string
	ended  bool
	export *exporter // -O (export.go)
}

func newRun(cfg *control.ClientConfig, o Options, format report.Format) *run {
	servers := len(cfg.Servers)
	if o.failover != nil {
		servers = 1 // one at a time
	}
	r := &run{
		cfg: cfg, o: o,
		connMin: max(cfg.ConnMin, 1), connMax: max(cfg.ConnMax, servers, 1),
		mcIdent: newMCIdent(),
		box:     newMailbox[posted](),
		text:    format == report.FormatText,
	}
	if !cfg.Upstream {
		r.reasm.read = netstat.ReadSelf
	}
	if cfg.MaxRateMbps > 0 {
		r.bound = dataphase.NewRateBound(float64(cfg.MaxRateMbps)/float64(r.connMax),
			dataphase.TableOptions{NoJumbo: cfg.NoJumbo, TraditionalMTU: cfg.TraditionalMTU})
	}
	r.col = report.New(o.Out, report.Options{
		Format: format, NoSubInt: cfg.NoSubInt, LossRatio: cfg.LossRatio, Verbose: cfg.Verbose, Extensions: cfg.Extensions,
		Connections: r.connMax, MinConnections: r.connMin, Mode: bannerMode(cfg, o),
		OnInterval:    r.onInterval,
		InterfaceRate: func() float64 { return r.iface.sample() },
	})
	for _, s := range cfg.Servers[:min(servers, len(cfg.Servers))] {
		r.hosts = append(r.hosts, report.Host{Name: s.Host, ControlPort: s.Port})
	}
	return r
}

// emit hands ev to the observer, if any.
func (r *run) emit(ev Event) {
	if r.o.Observe != nil {
		ev.Upstream = r.cfg.Upstream
		r.o.Observe(ev)
	}
}

// run sets up the connections (round robin over the servers), runs their
// Data Phases and reports. It returns the ErrorStatus.
func (r *run) run(ctx context.Context) int {
	r.reasm.begin()
	conns := make([]*connState, r.connMax)
	var wg sync.WaitGroup
	var pick *choice
	if r.o.failover != nil {
		if pick = r.o.pick; pick == nil {
			pick = newChoice()
		}
	}
	for i := range conns {
		srv := r.cfg.Servers[i%len(r.cfg.Servers)]
		if pick != nil {
			srv = r.cfg.Servers[0] // until the search chose
		}
		c := &connState{index: i, server: srv}
		conns[i] = c
		wg.Add(1)
		go func() { defer wg.Done(); r.setUp(ctx, c, pick) }()
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
		giveUp = time.After(r.o.EndGrace)
	}
	for active > 0 {
		select {
		case <-r.box.signal:
		case <-ctxDone:
			interrupted, ctxDone = true, nil
			stopAll()
		case <-giveUp:
			active = 0
		}
		for _, e := range r.box.drain() {
			c := conns[e.conn]
			switch e.ev.Kind {
			case evAlert:
				r.col.Alert(e.ev.Text)
				r.emit(Event{Kind: EventWarning, Conn: c.index, Server: c.server, Code: -1, Text: e.ev.Text})
			case evSetupFailed, evSetupSkipped:
				r.selected(e.sel)
				c.ended = true
				active--
				if !interrupted { // an interrupted setup is no failure of its own
					if e.ev.Kind == evSetupFailed {
						r.message(c, int(e.ev.Code), e.ev.Text)
					}
					r.col.ConnEnded(false)
					r.emitIntervals(nil, nil)
				}
			case evActivated:
				r.selected(e.sel)
				if e.chosen != nil {
					r.useChosen(e.chosen, e.tried)
				}
				if pick != nil {
					c.server = candidateServer(*pick.cand)
				}
				if over {
					c.cc.Sock.Close()
					c.ended = true
					active--
					continue
				}
				r.start(c)
			default:
				if r.apply(c, e.ev) {
					active--
				}
			}
		}
		if !over && !interrupted && r.col.CheckMinConnections() {
			r.emit(Event{Kind: EventError, Conn: -1, Code: r.col.ErrorStatus(), Text: report.MinConnectionsMessage(r.connMin)})
			stopAll()
		}
	}
	wg.Wait()
	return r.finish(conns, interrupted)
}

// setUp runs connection c's Control Phase, on its own server or, with a
// failover over candidates, on the first connection's choice, and posts
// the outcome to the run's loop.
func (r *run) setUp(ctx context.Context, c *connState, pick *choice) {
	i := c.index
	alert := func(msg string) { r.post(posted{conn: i, ev: dataphase.Event{Kind: evAlert, Text: msg}}) }
	var cc *control.ClientConn
	var err error
	var chosen *discover.Candidate
	var tried []string
	var sel *report.Selection
	switch {
	case pick == nil:
		cc, err = control.Activate(ctx, r.o.Network, r.cfg, c.server, i, r.mcIdent, alert)
	case i == 0 && pick.claimed.CompareAndSwap(false, true):
		// The search, one server at a time (failover.go).
		cc, chosen, tried, sel, err = r.choose(ctx, i, alert)
		pick.cand = chosen
		close(pick.done)
	default:
		select {
		case <-pick.done:
		case <-ctx.Done():
		}
		if ctx.Err() != nil || pick.cand == nil {
			r.post(posted{conn: i, ev: dataphase.Event{Kind: evSetupSkipped}})
			return
		}
		cc, err = control.Activate(ctx, r.o.Network, r.cfg, candidateServer(*pick.cand), i, r.mcIdent, alert)
		if i == 0 {
			// The other half of a bidirectional test searched: this
			// run's report names the server it chose too.
			chosen = pick.cand
		}
	}
	if err != nil {
		r.post(posted{conn: i, ev: dataphase.Event{Kind: evSetupFailed, Text: err.Error(), Code: setupStatus(err)}, sel: sel})
		return
	}
	c.cc = cc
	c.suffix = " [Server " + cc.Server.String() + "]" // [::1]:24601, where OB-UDPST prints ::1:24601
	r.post(posted{conn: i, ev: dataphase.Event{Kind: evActivated}, chosen: chosen, tried: tried, sel: sel})
}

// finish waits (a bounded time) for every Data Phase to end, closes the
// export files, writes the results and returns the ErrorStatus.
func (r *run) finish(conns []*connState, interrupted bool) int {
	for _, c := range conns {
		if c.dp == nil {
			continue
		}
		select {
		case <-c.dp.Done():
			c.cc.Sock.Close()
		case <-time.After(r.o.EndGrace):
			// An Engine Thread that does not end is reported, not waited
			// for: the result is written regardless.
			fmt.Fprintf(r.o.Stderr, "udpstp: connection %d did not end; its socket is left open\n", c.index+1)
		}
	}
	exportFailed := r.closeExports(conns)
	if interrupted {
		const msg = "ERROR: Test interrupted"
		r.col.Error(report.StatusGeneral, msg)
		r.emit(Event{Kind: EventError, Conn: -1, Code: report.StatusGeneral, Text: msg})
	}
	if g, ok := r.o.Network.(groupingWindower); ok {
		if d, ok := g.GroupingWindow(); ok {
			r.col.SetGroupingWindow(d)
		}
	}
	reasm, reasmKnown := r.reasm.end()
	if reasmKnown {
		r.col.SetReassemblyFailures(reasm)
	}
	if err := r.col.Finish(); err != nil {
		fmt.Fprintf(r.o.Stderr, "udpstp: ERROR: writing results: %v\n", err)
	}
	r.emitIntervals(nil, nil)
	if r.col.StillRising() {
		// Our note, not an OB-UDPST warning: the status stays (Code -1).
		r.emit(Event{Kind: EventWarning, Conn: -1, Code: -1, Text: report.StillRisingNote})
	}
	if reasm > 0 {
		r.emit(Event{Kind: EventWarning, Conn: -1, Code: -1, Text: report.ReassemblyNote(reasm)})
	}
	if st := r.col.ErrorStatus(); st != 0 || !exportFailed {
		return st
	}
	return report.StatusInit // the test ran, but the export file is incomplete
}

// message records a warning (1..49) or an error (50 and above) of
// connection c.
func (r *run) message(c *connState, code int, text string) {
	kind := EventWarning
	if code < 50 {
		r.col.Warning(code, text)
	} else {
		kind = EventError
		r.col.Error(code, text)
	}
	r.emit(Event{Kind: kind, Conn: c.index, Server: c.server, Code: code, Text: text})
}

// setupStatus is the ErrorStatus of a failed setup.
func setupStatus(err error) uint8 {
	var se *control.SetupError
	if errors.As(err, &se) {
		return uint8(se.Status)
	}
	return report.StatusInit
}

// post hands an event to the run's goroutine; it never blocks, so an
// Engine Thread can call it.
func (r *run) post(e posted) { r.box.post(e) }

// start reports the activation and runs the connection's Data Phase.
func (r *run) start(c *connState) {
	g := &c.cc.Granted
	for i := range r.hosts {
		if r.hosts[i].Addr == "" && r.hosts[i].Name == c.server.Host && r.hosts[i].ControlPort == c.server.Port {
			r.hosts[i].Addr = c.cc.Server.Addr().String()
		}
	}
	info := report.TestInfo{
		Upstream:    g.CmdRequest == control.ActivationUpstream,
		TestIntTime: int(g.TestIntTime), SubIntPeriod: int(g.SubIntPeriod), TrialInt: int(g.TrialInt),
		LowThresh: int(g.LowThresh), UpperThresh: int(g.UpperThresh),
		UseOWD: g.UseOwDelVar == 1, IgnoreOooDup: g.IgnoreOooDup == 1,
		RandomPayload: g.ModifierBitmap&control.ActivationRandomPayload != 0,
		MCIdent:       int(r.mcIdent), SRIndex: g.SRIndexConf, SRStart: g.StartIndex(),
		SlowAdjThresh: int(g.SlowAdjThresh), HighSpeedDelta: int(g.HighSpeedDelta), SeqErrThresh: int(g.SeqErrThresh),
		Algorithm: g.RateAdjAlgo, ConnMin: r.connMin, ConnMax: r.connMax,
		DSCPECN: int(g.DSCPECN), CEThresh: int(g.ECNCEThresh),
		Jumbo: !r.cfg.NoJumbo, TraditionalMTU: r.cfg.TraditionalMTU, IPv6: c.cc.Params.IPv6, Family: r.cfg.Family,
		Hosts: r.hosts, ServerPort: int(c.cc.TestPeer.Port()),
		ClientAddr: c.cc.Local.Addr().Unmap().String(), ClientPort: int(c.cc.Local.Port()),
		MaxBandwidth: r.cfg.MaxBandwidth, Bimodal: r.cfg.Bimodal,
		Interface: r.cfg.Interface, InterfaceMax: r.cfg.InterfaceMax,
	}
	if r.cfg.Suppress {
		info.SuppCount = r.cfg.Bimodal
	}
	if r.col.Activate(info) {
		r.col.WriteHeader(c.index)
		r.emit(Event{Kind: EventStart, Conn: c.index, Server: c.server, Info: &info})
		if r.iface != nil {
			r.iface.start()
		}
	}
	params := c.cc.Params
	params.Bound = r.bound
	if s, ok := c.cc.Sock.(interface{ PathMTU() int }); ok {
		// The IP fragmentation of jumbo datagrams on a smaller MTU counts
		// in the L2/L1 figures (dataphase/frag.go).
		params.PathMTU = s.PathMTU()
	}
	core := dataphase.NewConn(params, c.cc.Activated)
	if r.startExport(c); c.export != nil {
		core.SetExport(c.export.ring)
	}
	conn := c.index
	r.emit(Event{Kind: EventConnected, Conn: c.index, Server: c.server, Activated: c.cc})
	c.dp = r.o.Network.RunDataPhase(c.cc.Sock, core, func(ev dataphase.Event) {
		if ev.Kind == dataphase.EvTrial && !r.cfg.Debug && r.o.Observe == nil {
			return // 20 a second, and only debug output and observers want them
		}
		r.post(posted{conn: conn, ev: ev})
	})
}

// apply takes one Data Phase event into the report; it reports whether the
// connection ended.
func (r *run) apply(c *connState, ev dataphase.Event) bool {
	switch ev.Kind {
	case dataphase.EvSubInterval:
		r.col.Add(c.index, ev.SubInt)
		r.emitIntervals(c, &ev.SubInt)
	case dataphase.EvWarning:
		code := int(ev.Code)
		if ev.Code == dataphase.WarnError { // our own errors (a socket failure) carry no OB-UDPST code
			code = report.StatusGeneral
		}
		r.message(c, code, ev.Text+c.suffix)
	case dataphase.EvMinimum:
		if r.cfg.Verbose {
			fmt.Fprintf(r.o.Out, "[%d]Minimum One-Way Delay(ms): %d [w/clock diff], Round-Trip Time(ms): %d\n",
				c.index+1, ev.ClockDeltaMin, ev.RTTMinimum)
		}
	case dataphase.EvTrial:
		if r.cfg.Verbose && r.cfg.Debug {
			r.debugLine(c, &ev.Trial)
		}
		r.emit(Event{Kind: EventTrial, Conn: c.index, Server: c.server, Trial: ev.Trial})
	case dataphase.EvEnd:
		if c.ended {
			return false
		}
		c.ended = true
		switch ev.End {
		case dataphase.EndStopped:
			r.col.ConnEnded(true)
		case dataphase.EndLocalStop:
			// Our own interrupt: the results so far stand (the run then
			// ends with ErrorStatus 255), unlike a connection the network
			// lost, which counts against the minimum.
			r.col.ConnEnded(true)
		default:
			r.col.ConnEnded(false)
		}
		r.emitIntervals(nil, nil)
		r.emit(Event{Kind: EventConnEnded, Conn: c.index, Server: c.server, End: ev.End})
		return true
	}
	return false
}

// debugLine is OB-UDPST's per-Status-PDU debug line (-v -D).
func (r *run) debugLine(c *connState, tr *dataphase.TrialInfo) {
	rtt := int64(-1)
	if tr.RTTVarSample != dataphase.NoDelay {
		rtt = int64(tr.RTTVarSample)
	}
	mbps := tr.L3Mbps(c.cc.Params.IPv6)
	owdMin := tr.DelayVarMin
	if owdMin == dataphase.NoDelay {
		owdMin = 0
	}
	fmt.Fprintf(r.o.Out, "[%d]DEBUG Status Feedback [Loss/OoO/Dup: %d/%d/%d, OWDVar(ms): %d/%d/%d, RTTVar(ms): %d] Mbps(L3/IP): %.2f\n",
		c.index+1, tr.Loss, tr.Ooo, tr.Dup, owdMin, tr.DelayVarAvg, tr.DelayVarMax, rtt, mbps)
}
