package client

// Choosing by round trip (docs/fleet.md, "Choosing by round trip"): with
// Options.Select SelectRTT, a failover search first sends its Setup
// Request to every candidate at once, times each accepting Setup
// Response, and tries the candidates by priority, then fastest first,
// those that did not answer last. The measurement is the Control Phase's
// own Setup exchange, so it costs no extra PDU: the fastest candidate's
// Setup is the test's, activated from the same socket. The others' are
// closed unactivated; the protocol has no PDU to withdraw a Setup, and
// their servers release them at their Setup timer (control.Pending).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/discover"
	"github.com/udpstp/udpstp/report"
)

// Select is how a failover search orders its candidates.
type Select string

const (
	// SelectOrder tries them as found: RFC 2782's order for SRV
	// records, a list's own order.
	SelectOrder Select = "order"
	// SelectRTT measures each one's Setup round trip first and tries
	// them, within each priority, fastest first.
	SelectRTT Select = "rtt"
)

// ParseSelect reads a selection as a configuration writes it; "" is
// SelectOrder.
func ParseSelect(s string) (Select, error) {
	switch Select(s) {
	case "", SelectOrder:
		return SelectOrder, nil
	case SelectRTT:
		return SelectRTT, nil
	}
	return "", fmt.Errorf("%q: want %q or %q", s, SelectOrder, SelectRTT)
}

// SelectBudget bounds the measurement: every Setup Request goes out at
// once and their answers are awaited this long at most. A third of the
// Setup timer, so that the candidate chosen still has two thirds of its
// server's wait left for the Test Activation.
const SelectBudget = control.SetupTimeout / 3

// activationLeft is the least time left of a measured Setup's timer for
// the search to activate it; with less, the candidate gets a Setup of its
// own instead, as without the measurement.
const activationLeft = SelectBudget

// probe is one candidate's measurement.
type probe struct {
	cand *discover.Candidate
	pend *control.Pending // accepted, awaiting its activation; nil when used or failed
	rtt  time.Duration
	err  error // why it did not answer
}

// measure sends Test Connection index's Setup Request to each candidate
// at once, waits for them (SelectBudget at most) and returns them in the
// order to try: by priority, then answered by round trip, then the rest
// as found.
func (r *run) measure(ctx context.Context, index int, alert control.Alert, cands []discover.Candidate) []probe {
	out := make([]probe, len(cands))
	mctx, cancel := context.WithTimeout(ctx, SelectBudget)
	defer cancel()
	var wg sync.WaitGroup
	for i := range cands {
		p := &out[i]
		p.cand = &cands[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.pend, p.err = control.Setup(mctx, r.o.Network, r.cfg, candidateServer(*p.cand), index, r.mcIdent, alert)
			switch {
			case p.pend != nil:
				p.rtt = p.pend.RTT
			case ctx.Err() == nil && errors.Is(p.err, control.ErrNoAnswer):
				// No answer within the measurement, whose deadline is
				// sooner than any Setup's own: say it as the
				// measurement's.
				p.err = &control.SetupError{Status: dataphase.WarnServerTimeout,
					Msg: fmt.Sprintf("WARNING: no answer within the %v measurement", SelectBudget)}
			}
		}()
	}
	wg.Wait()
	slices.SortStableFunc(out, func(a, b probe) int {
		if c := cmp.Compare(a.cand.Priority, b.cand.Priority); c != 0 {
			return c
		}
		if (a.err == nil) != (b.err == nil) {
			if a.err == nil {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.rtt, b.rtt)
	})
	return out
}

// release closes the measured Setups the search did not use.
func release(probes []probe) {
	for i := range probes {
		if probes[i].pend != nil {
			probes[i].pend.Close()
			probes[i].pend = nil
		}
	}
}

// selection is the measurement as the report records it, chosen the
// candidate the test ran against (nil: none).
func selection(probes []probe, chosen *discover.Candidate) *report.Selection {
	s := &report.Selection{Mode: string(SelectRTT)}
	for _, p := range probes {
		c := report.SelectionCandidate{Host: p.cand.Name, Addr: p.cand.Addr.String(), ControlPort: p.cand.Port,
			Priority: int(p.cand.Priority), RTT: p.rtt, Answered: p.err == nil, Chosen: p.cand == chosen}
		if p.err != nil {
			c.Error = p.err.Error()
		}
		s.Candidates = append(s.Candidates, c)
	}
	return s
}

// selectionLine is the text report's line of the measurement, after the
// line naming the server chosen.
func selectionLine(s *report.Selection) string {
	parts := make([]string, len(s.Candidates))
	for i, c := range s.Candidates {
		a, _ := netip.ParseAddr(c.Addr)
		fig := "no answer"
		if c.Answered {
			fig = fmt.Sprintf("%d us", c.RTT.Microseconds())
		}
		parts[i] = discover.Candidate{Name: c.Host, Addr: a, Port: c.ControlPort}.String() + " " + fig
	}
	return "Setup round trips: " + strings.Join(parts, ", ")
}
