package agent

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/udpstp/udpstp/client"
	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/report"
	"github.com/udpstp/udpstp/store"
)

// runTest runs test t (the caller holds the lock): one result per
// direction, two for DirBoth, each stored as it ends.
func (a *Agent) runTest(ctx context.Context, t *Test) []*store.Result {
	var out []*store.Result
	switch t.Direction {
	case DirBoth:
		down := a.runOne(ctx, t, t.Client, false, t.Plan)
		a.inFlightStored(down.Direction)
		out = append(out, down, a.runOne(ctx, t, t.Client, true, t.Plan))
	default:
		out = append(out, a.runOne(ctx, t, t.Client, t.Direction == DirUp, t.Plan))
	}
	return out
}

// runOne runs one test of t's client configuration base, trying t's
// servers in order until one takes the test, and stores its result: the
// test's, or an error saying why every server failed. A server down or
// refusing is an error, not a missed slot: the agent did run the slot
// (docs/agent.md, "Missed and failed"), and an alert on errors must see it.
func (a *Agent) runOne(ctx context.Context, t *Test, base *control.ClientConfig, up bool, plan client.Plan) *store.Result {
	if t.Select == client.SelectRTT && len(t.Servers) > 1 {
		// The client measures the list's servers and fails over among
		// them itself (client/rttselect.go); its error lists each one.
		r, _ := a.attempt(ctx, t, t.Servers, base, up, plan)
		a.store(ctx, r)
		return r
	}
	var failures []string
	var last *store.Result
	for _, srv := range t.Servers {
		r, connected := a.attempt(ctx, t, []control.ServerAddr{srv}, base, up, plan)
		if connected || r.ErrorStatus == 0 || ctx.Err() != nil {
			if len(failures) > 0 {
				r.Warning = joinWarnings("failover: "+strings.Join(failures, "; "), r.Warning)
			}
			a.store(ctx, r)
			return r
		}
		// Not answered or refused (busy, capacity exceeded, no such
		// host): the next server.
		failures = append(failures, fmt.Sprintf("%s: %s", r.Server, r.Warning))
		last = r
	}
	last.ID = newResultID()
	last.Status = store.StatusError
	if last.ErrorStatus < 50 { // StatusOf's error, whatever the last attempt's was
		last.ErrorStatus = report.StatusGeneral
	}
	last.Server = hostPort(t.Servers[0])
	last.Warning = "every server failed: " + strings.Join(failures, "; ")
	a.store(ctx, last)
	return last
}

// attempt runs one test of t against srvs, one server or, with
// t.Select's SelectRTT, the list the client chooses from, and returns its
// result (not stored) and whether any Test Connection was set up.
func (a *Agent) attempt(ctx context.Context, t *Test, srvs []control.ServerAddr, base *control.ClientConfig, up bool, plan client.Plan) (*store.Result, bool) {
	name, srv := t.Name, srvs[0]
	cc := *base
	cc.Servers = srvs
	cc.Upstream = up && !plan.Bidirectional
	cc.Format = "json"
	cc.OutputFile, cc.TextFile = "", ""
	cc.Extensions = true // udpstp's figures (latency under load) in the stored document
	var doc, stderr bytes.Buffer
	connected := false
	var lastErr, lastWarn string
	stream := client.NewStream(&a.events, plan)
	observe := func(ev client.Event) {
		switch ev.Kind {
		case client.EventSelected:
			a.logSelection(name, ev.Selection)
		case client.EventStart:
			if h := ev.Info.Hosts; len(srvs) > 1 && len(h) > 0 {
				srv = control.ServerAddr{Host: h[0].Name, Port: h[0].ControlPort} // the list's server chosen
			}
		case client.EventConnected:
			connected = true
		case client.EventError:
			lastErr = ev.Text
		case client.EventWarning:
			if ev.Code > 0 {
				lastWarn = ev.Text
			}
		}
		stream.Observe(ev)
	}
	cross := a.crossBefore(ctx, srv) // crosstraffic.go
	network, closeNet := a.o.Network()
	start := a.now()
	status := a.runClient(ctx, &cc, client.Options{Network: network, Out: &doc, Stderr: &stderr, Observe: observe,
		Version: a.o.Version, Plan: plan, Select: t.Select, FailoverList: len(srvs) > 1})
	closeNet()
	end := a.now()
	if stderr.Len() > 0 {
		a.o.Log.Warn("test", "test", name, "server", hostPort(srv), "stderr", strings.TrimSpace(stderr.String()))
	}
	r := &store.Result{}
	if doc.Len() > 0 {
		sum, err := store.Summarize(bytes.Clone(doc.Bytes()))
		if err != nil {
			a.o.Log.Error("test result not understood; stored without its figures", "test", name, "err", err)
			sum = store.Result{Doc: bytes.Clone(doc.Bytes())}
		}
		*r = sum
	}
	if r.Start.IsZero() { // no test ran: the agent's times
		r.Start, r.End = start, end
	}
	r.Origin, r.Test, r.Agent, r.Server = store.OriginClient, name, a.o.Identity, hostPort(srv)
	r.Direction, r.ErrorStatus, r.Status = direction(up, plan), status, store.StatusOf(status)
	r.ID = newResultID()
	if r.Warning == "" {
		r.Warning = joinWarnings(lastErr, lastWarn)
	}
	if connected {
		// An attempt that set nothing up is not worth the after-window's
		// wait: the failover moves on, and no test ran to be marked.
		a.crossAfter(ctx, cross, r)
	}
	return r, connected
}

// logSelection logs a test's choice of server by round trip: each
// candidate's Setup round trip in µs ("-" for no answer) and the one
// chosen.
func (a *Agent) logSelection(name string, s *report.Selection) {
	var rtts []string
	chosen := "none"
	for _, c := range s.Candidates {
		fig := "-"
		if c.Answered {
			fig = strconv.FormatInt(c.RTT.Microseconds(), 10)
		}
		at := net.JoinHostPort(c.Addr, strconv.Itoa(c.ControlPort))
		rtts = append(rtts, at+"="+fig)
		if c.Chosen {
			chosen = at
		}
	}
	a.o.Log.Info("server selection", "test", name, "select", s.Mode, "chosen", chosen, "setup_rtt_us", strings.Join(rtts, " "))
}

// store writes r, prunes by the retention in force and updates the
// metrics. A result the store refuses is kept and retried (retry.go), the
// agent's /healthz red meanwhile.
func (a *Agent) store(ctx context.Context, r *store.Result) {
	a.m.observe(r)
	if err := a.put(ctx, r); err != nil {
		a.keep(r, err)
		return
	}
	a.logStored(r)
}

// logStored logs a result the store took; a kept one's retry logs it once
// it is off the kept list, so that /healthz agrees with the line.
func (a *Agent) logStored(r *store.Result) {
	a.o.Log.Info("result stored", "id", r.ID, "test", r.Test, "server", r.Server, "direction", r.Direction, "status", r.Status, "warning", r.Warning)
}

// put writes r and prunes: the write of a first try and of each retry.
func (a *Agent) put(ctx context.Context, r *store.Result) error {
	// A test cut short by the agent's stop is still written: its
	// context must not cancel the write.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := a.o.Store.Put(wctx, r); err != nil {
		return err
	}
	if ret := a.cfg.Load().Retention; ret != (store.Retention{}) {
		if n, err := a.o.Store.Prune(wctx, ret); err != nil {
			a.o.Log.Error("retention", "err", err)
		} else if n > 0 {
			a.o.Log.Info("retention", "deleted", n)
		}
	}
	return nil
}

// missed stores a missed slot of t: one result per direction, none run.
func (a *Agent) missed(ctx context.Context, t *Test, slot time.Time, why string) {
	dirs := []bool{t.Direction == DirUp}
	if t.Direction == DirBoth {
		dirs = []bool{false, true}
	}
	for _, up := range dirs {
		now := a.now()
		a.store(ctx, &store.Result{ID: newResultID(), Origin: store.OriginClient, Test: t.Name, Agent: a.o.Identity,
			Server: hostPort(t.Servers[0]), Start: slot, End: now, Direction: direction(up, t.Plan),
			Status: store.StatusMissed, ErrorStatus: report.StatusGeneral, Warning: why})
	}
}

func direction(up bool, plan client.Plan) string {
	switch {
	case plan.Bidirectional:
		return "bidirectional"
	case up:
		return "up"
	}
	return "down"
}

func hostPort(s control.ServerAddr) string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

func joinWarnings(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "" || a == b:
		return a
	}
	return a + "; " + b
}
