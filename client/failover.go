package client

// Failover (docs/fleet.md): a client given `srv:NAME` as its one
// server looks up the candidates once (package discover) and uses one
// server at a time: its first Test Connection tries them in order, the
// next when one does not answer (timeout, ICMP unreachable, a socket
// error) or refuses as a busy server does (code 10, capacity exceeded;
// code 13, no connection left or draining); its other Test Connections
// (-C) then go to the server that accepted. This is not -C's round robin
// over several servers: those are all used at once.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/discover"
	"github.com/udpstp/udpstp/report"
)

// FailoverBudget bounds the search for a server: each candidate has the
// usual Setup timer (control.SetupTimeout), and the whole search stops
// after three of them, so that at least three silent servers are tried
// and a client never waits much longer than a single silent server's
// three timers would make it. Refusals and ICMP errors come back at once.
const FailoverBudget = 3 * control.SetupTimeout

// MaxCandidates bounds how many candidates one test tries: refusals and
// ICMP errors come back at once, so FailoverBudget alone would let a
// `srv:NAME` with hundreds of records that all refuse (a hostile or broken
// zone) send a Setup Request to each of them. It is discover's bound,
// which the lookups already hold to; the search holds to it too, for a
// list made otherwise, and lists the rest as not tried.
const MaxCandidates = discover.MaxCandidates

// failover is a run's candidate servers, looked up once per Run.
type failover struct {
	from  string // the argument, "srv:NAME", or the list's servers
	cands []discover.Candidate
	err   string // the lookup's failure, reported before any Setup
	// unresolved are a list's servers without an address, each a line
	// as the candidates that failed are.
	unresolved []string
}

// lookupFailover looks up the candidates of cfg's one server when it is
// a `srv:NAME`, or of its several servers with o.FailoverList; nil
// otherwise. A lookup that fails is kept as the run's error
// (failover.err).
func lookupFailover(ctx context.Context, cfg *control.ClientConfig, o Options) *failover {
	list := o.FailoverList && len(cfg.Servers) > 1
	if !list && (len(cfg.Servers) != 1 || !discover.Is(cfg.Servers[0].Host)) {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, control.SetupTimeout)
	defer cancel()
	res := o.Resolver
	if res == nil {
		res = net.DefaultResolver
	}
	if list {
		return lookupList(lctx, cfg, res)
	}
	s := cfg.Servers[0]
	f := &failover{from: s.Host}
	cands, err := discover.Lookup(lctx, res, s.Host, s.Port, lookupNetwork(cfg.Family),
		rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())))
	if err != nil {
		f.err = "ERROR: " + err.Error()
		return f
	}
	f.cands = cands
	return f
}

// lookupList is the failover of a list of servers (Options.FailoverList).
func lookupList(ctx context.Context, cfg *control.ClientConfig, res discover.Resolver) *failover {
	servers := make([]discover.Server, len(cfg.Servers))
	names := make([]string, len(cfg.Servers))
	for i, s := range cfg.Servers {
		servers[i] = discover.Server{Host: s.Host, Port: s.Port}
		names[i] = net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	}
	f := &failover{from: strings.Join(names, ", ")}
	for _, s := range cfg.Servers {
		if discover.Is(s.Host) {
			f.err = fmt.Sprintf("ERROR: %s in a list of servers to fail over between: give it alone", s.Host)
			return f
		}
	}
	cands, failed, err := discover.LookupList(ctx, res, servers, lookupNetwork(cfg.Family))
	if err != nil {
		f.err = "ERROR: " + err.Error()
		return f
	}
	f.cands, f.unresolved = cands, failed
	return f
}

// lookupNetwork is the resolver's network for the client's -4/-6.
func lookupNetwork(f dataphase.Family) string {
	switch f {
	case dataphase.FamilyV4:
		return "ip4"
	case dataphase.FamilyV6:
		return "ip6"
	}
	return "ip"
}

// addr is the candidate as a server to set up with.
func candidateServer(c discover.Candidate) control.ServerAddr {
	return control.ServerAddr{Host: c.Addr.String(), Port: c.Port}
}

// movesOn reports whether a failed setup is one after which the next
// candidate is tried: no answer, or a busy server's refusal. Any other
// refusal (authentication, version, jumbo or MTU mismatch) would be the
// same elsewhere: the search stops there.
func movesOn(err error) bool {
	switch setupStatus(err) {
	case dataphase.WarnServerTimeout, report.StatusInit,
		100 + control.SetupCapExceeded, 100 + control.SetupConnFail:
		return true
	}
	return false
}

// choice is the outcome of the search, for the run's other Test
// Connections: closed done, then cand is set if a server accepted. A
// bidirectional test's halves share one (bidir.go), so that both test the
// same server: the first half's first Test Connection to claim it
// searches, everything else waits for its outcome.
type choice struct {
	done    chan struct{}
	cand    *discover.Candidate
	claimed atomic.Bool
}

func newChoice() *choice { return &choice{done: make(chan struct{})} }

// choose runs the search for Test Connection index: each candidate in
// turn, at most MaxCandidates of them, within FailoverBudget; with
// SelectRTT, in the order their Setup round trips give (rttselect.go),
// measured before the budget starts. It returns the activated connection
// and its candidate, tried: a line per candidate that failed, and, with
// SelectRTT, the measurement. On failure the error is the last
// candidate's, its message listing every one tried.
func (r *run) choose(ctx context.Context, index int, alert control.Alert) (*control.ClientConn, *discover.Candidate, []string, *report.Selection, error) {
	f := r.o.failover
	cands := f.cands[:min(len(f.cands), MaxCandidates)]
	probes := make([]probe, len(cands))
	for i := range cands {
		probes[i].cand = &cands[i]
	}
	byRTT := r.o.Select == SelectRTT
	if byRTT {
		probes = r.measure(ctx, index, alert, cands)
		defer release(probes)
	}
	cc, c, tried, err := r.search(ctx, index, alert, probes)
	var s *report.Selection
	if byRTT {
		s = selection(probes, c)
	}
	return cc, c, tried, s, err
}

// search tries the candidates in the order of probes, activating a
// measured Setup where one is pending and fresh enough, else with a Setup
// of its own, as choose says.
func (r *run) search(ctx context.Context, index int, alert control.Alert, probes []probe) (*control.ClientConn, *discover.Candidate, []string, error) {
	f := r.o.failover
	end := time.Now().Add(FailoverBudget)
	tried := slices.Clone(f.unresolved) // a list's servers without an address
	var last error
	n := 0 // candidates tried
	for i := range probes {
		c := probes[i].cand
		now := time.Now()
		if !now.Before(end) || ctx.Err() != nil {
			break
		}
		deadline := now.Add(control.SetupTimeout)
		if end.Before(deadline) {
			deadline = end
		}
		actx, cancel := context.WithDeadline(ctx, deadline)
		var cc *control.ClientConn
		var err error
		if p := probes[i].pend; p != nil && time.Until(p.Deadline) >= activationLeft {
			probes[i].pend = nil // activated or closed: no longer release's
			cc, err = p.Activate(actx)
		} else {
			cc, err = control.Activate(actx, r.o.Network, r.cfg, candidateServer(*c), index, r.mcIdent, alert)
		}
		cancel()
		if err == nil {
			return cc, c, tried, nil
		}
		last = err
		n++
		tried = append(tried, c.String()+": "+err.Error())
		if ctx.Err() != nil || !movesOn(err) {
			break
		}
	}
	if ctx.Err() != nil {
		// Interrupted: the run reports the interrupt, not the search.
		if last == nil {
			last = &control.SetupError{Status: report.StatusGeneral, Msg: "ERROR: interrupted before a server was tried"}
		}
		return nil, nil, tried, last
	}
	if left := len(f.cands) - n; left > 0 && (last == nil || movesOn(last)) {
		why := fmt.Sprintf("the %v search budget is spent", FailoverBudget)
		if n >= MaxCandidates {
			why = fmt.Sprintf("at most %d are tried", MaxCandidates)
		}
		tried = append(tried, fmt.Sprintf("%d more not tried: %s", left, why))
	}
	st := report.StatusInit
	if last != nil {
		st = int(setupStatus(last))
	}
	return nil, nil, tried, &control.SetupError{Status: st,
		Msg: fmt.Sprintf("ERROR: No server of %s accepted the test; tried %s", f.from, strings.Join(tried, "; "))}
}

// selected records a failover search's measurement, if any: the
// report's extension, and the observer's EventSelected.
func (r *run) selected(s *report.Selection) {
	if s == nil {
		return
	}
	r.sel = s
	r.col.Select(s)
	r.emit(Event{Kind: EventSelected, Conn: -1, Selection: s})
}

// chosenLine is the text report's line naming the server a failover
// search chose, and the candidates that failed before it.
func chosenLine(from string, c *discover.Candidate, tried []string) string {
	s := fmt.Sprintf("Server: %s, from %s", c, from)
	if len(tried) > 0 {
		s += " after " + strings.Join(tried, "; ")
	}
	return s
}

// useChosen makes the server a failover search chose the run's host (the
// report's Host and HostIPAddress), says so on the text report, and
// hands each candidate that failed before it to the observer as a note.
func (r *run) useChosen(c *discover.Candidate, tried []string) {
	r.hosts = []report.Host{{Name: c.Name, Addr: c.Addr.String(), ControlPort: c.Port}}
	if r.text {
		fmt.Fprintln(r.o.Out, chosenLine(r.o.failover.from, c, tried))
		if r.sel != nil {
			fmt.Fprintln(r.o.Out, selectionLine(r.sel))
		}
	}
	for _, t := range tried {
		r.emit(Event{Kind: EventWarning, Conn: 0, Code: -1, Text: "server skipped: " + t})
	}
}
