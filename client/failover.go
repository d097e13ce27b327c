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
	"strings"
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

// failover is a run's candidate servers, looked up once per Run.
type failover struct {
	from  string // the argument, "srv:NAME"
	cands []discover.Candidate
	err   string // the lookup's failure, reported before any Setup
}

// lookupFailover looks up the candidates of cfg's one server when it is
// a `srv:NAME`; nil otherwise. A lookup that fails is kept as the run's
// error (failover.err).
func lookupFailover(ctx context.Context, cfg *control.ClientConfig) *failover {
	if len(cfg.Servers) != 1 || !discover.Is(cfg.Servers[0].Host) {
		return nil
	}
	s := cfg.Servers[0]
	f := &failover{from: s.Host}
	lctx, cancel := context.WithTimeout(ctx, control.SetupTimeout)
	defer cancel()
	cands, err := discover.Lookup(lctx, net.DefaultResolver, s.Host, s.Port, lookupNetwork(cfg.Family),
		rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())))
	if err != nil {
		f.err = "ERROR: " + err.Error()
		return f
	}
	f.cands = cands
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
// Connections: closed done, then cand is set if a server accepted.
type choice struct {
	done chan struct{}
	cand *discover.Candidate
}

// choose runs the search for Test Connection index: each candidate in
// turn, within FailoverBudget. It returns the activated connection and
// its candidate, and tried: a line per candidate that failed. On failure
// the error is the last candidate's, its message listing every one tried.
func (r *run) choose(ctx context.Context, index int, alert control.Alert) (*control.ClientConn, *discover.Candidate, []string, error) {
	f := r.o.failover
	end := time.Now().Add(FailoverBudget)
	var tried []string
	var last error
	for i := range f.cands {
		c := &f.cands[i]
		now := time.Now()
		if !now.Before(end) || ctx.Err() != nil {
			break
		}
		deadline := now.Add(control.SetupTimeout)
		if end.Before(deadline) {
			deadline = end
		}
		actx, cancel := context.WithDeadline(ctx, deadline)
		cc, err := control.Activate(actx, r.o.Network, r.cfg, candidateServer(*c), index, r.mcIdent, alert)
		cancel()
		if err == nil {
			return cc, c, tried, nil
		}
		last = err
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
	if left := len(f.cands) - len(tried); left > 0 && (last == nil || movesOn(last)) {
		tried = append(tried, fmt.Sprintf("%d more not tried: the %v search budget is spent", left, FailoverBudget))
	}
	st := report.StatusInit
	if last != nil {
		st = int(setupStatus(last))
	}
	return nil, nil, tried, &control.SetupError{Status: st,
		Msg: fmt.Sprintf("ERROR: No server of %s accepted the test; tried %s", f.from, strings.Join(tried, "; "))}
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
	}
	for _, t := range tried {
		r.emit(Event{Kind: EventWarning, Conn: 0, Code: -1, Text: "server skipped: " + t})
	}
}
