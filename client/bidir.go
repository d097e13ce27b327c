package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/report"
)

// A bidirectional test (Plan.Bidirectional) is two runs at once, an
// upstream and a downstream one, to the same servers: RFC 9946 lets a
// client hold several Test Connections to a server, each set up on its
// own with its own direction, so OB-UDPST's server takes them as two
// tests. Each half is a complete run of its own (its Test Connections,
// rate searches, minimum, Collector and OB-UDPST report), so each half's
// document is what OB-UDPST's client writes for that direction.
//
// The idle baseline is the halves' first mode: the command line sets a
// bimodal count with rate adjustment suppressed (-i -count), so both
// directions hold their starting row (row 0, about 0.1 Mbit/s) for those
// Sub-Intervals and then search together. The report compares each
// direction's delay variation in the two modes (report.Bidirectional).

// halfLabels prefix the text lines of the upstream and the downstream
// half, which run at the same time.
var halfLabels = [2]string{"[Up]   ", "[Down] "}

// runBidir runs both halves and reports: their text lines as they come,
// labelled, then the latency under load; or one JSON document with both.
func runBidir(ctx context.Context, cfg *control.ClientConfig, o Options, format report.Format) report.Result {
	var outMu sync.Mutex
	rel := newMailbox[Event]()
	var cols [2]*report.Collector
	var outs [2]*labelled
	var wg sync.WaitGroup
	if o.failover != nil {
		o.pick = newChoice() // one search for both halves: the same server
	}
	for i, up := range [2]bool{true, false} {
		hc := *cfg
		hc.Upstream, hc.OutputFile = up, ""
		ho := o
		ho.Plan = Plan{}
		ho.Out = io.Discard // JSON: the pair is one document, written below
		if !format.IsJSON() {
			outs[i] = &labelled{mu: &outMu, w: o.Out, label: halfLabels[i]}
			ho.Out = outs[i]
		}
		if o.Observe != nil {
			ho.Observe = rel.post
		}
		r := newRun(&hc, ho, format)
		cols[i] = r.col
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.begin(ctx)
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	if o.Observe != nil {
		relay(rel, done, o.Observe)
	} else {
		<-done
	}
	b := &report.Bidirectional{Up: cols[0], Down: cols[1]}
	var err error
	if format.IsJSON() {
		_, err = o.Out.Write(b.Document(format))
	} else {
		for _, l := range outs {
			l.flush()
		}
		err = b.WriteText(o.Out)
	}
	if err != nil {
		fmt.Fprintf(o.Stderr, "udpstp: ERROR: writing results: %v\n", err)
	}
	return b
}

// relay hands the halves' events, posted to box from their run
// goroutines, to observe on the goroutine that called Run, so that the
// observer sees them in one sequence as Options.Observe promises; it
// returns once done is closed and box is empty.
func relay(box *mailbox[Event], done <-chan struct{}, observe func(Event)) {
	for {
		finished := false
		select {
		case <-box.signal:
		case <-done:
			finished = true
		}
		for _, e := range box.drain() {
			observe(e)
		}
		if finished {
			return
		}
	}
}

// labelled writes a half's text to w with label before every line, a
// whole line at a time under mu, which both halves share, so that their
// lines interleave but never mix.
type labelled struct {
	mu    *sync.Mutex
	w     io.Writer
	label string
	part  []byte // the start of a line not yet ended
}

func (l *labelled) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(b)
	var out []byte
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			l.part = append(l.part, b...)
			break
		}
		out = append(append(append(out, l.label...), l.part...), b[:i+1]...)
		l.part, b = l.part[:0], b[i+1:]
	}
	if len(out) == 0 {
		return n, nil
	}
	if _, err := l.w.Write(out); err != nil {
		return 0, err
	}
	return n, nil
}

// flush ends and writes a line left unfinished.
func (l *labelled) flush() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.part) > 0 {
		l.w.Write(append(append([]byte(l.label), l.part...), '\n'))
		l.part = nil
	}
}
