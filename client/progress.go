package client

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/report"
)

// Progress is the status line of a run on a terminal (--progress): one
// line on standard error, redrawn a few times a second, with the time
// elapsed and left, the sending rate row (an upstream test's Load Sender
// is this client) or the rate being received, the last Sub-Interval's L3
// rate, RTT variation and loss, and how many Test Connections are up.
//
// The report goes to another descriptor (standard output) that may be the
// same terminal, so the line must be gone before each report line is
// written, or the two would share a row: everything the run writes goes
// through Writer, which clears the line first under the same lock that
// draws it, and the line is drawn again only at the start of a row. What
// the terminal keeps is then exactly the report.
type Progress struct {
	mu     sync.Mutex
	tty    io.Writer
	width  func() int // the terminal's columns, 0 if unknown
	drawn  bool       // the line is on the terminal
	midRow bool       // the last report write did not end its line
	closed bool

	now       func() time.Time
	started   time.Time // the first Data Phase's start
	testTime  time.Duration
	total, up int
	upstream  bool
	ipv6      bool
	rows      map[dataphase.SendingRate]int
	sendRate  map[int]dataphase.SendingRate // per connection, upstream
	rxMbps    map[int]float64               // per connection, downstream: the last Trial Interval
	last      *report.Interval              // the last aggregate Sub-Interval

	stop chan struct{}
	done chan struct{}
}

// progressPeriod is how often the line is redrawn.
const progressPeriod = 250 * time.Millisecond

// clearLine returns to the start of the row and erases it.
const clearLine = "\r\x1b[K"

// NewProgress starts a status line on tty (standard error) for a run of
// connections Test Connections; width returns the terminal's columns (nil
// or 0: 80). It draws at once and then every progressPeriod until Close
// (an EventEnd closes it).
func NewProgress(tty io.Writer, width func() int, connections int) *Progress {
	p := &Progress{tty: tty, width: width, now: time.Now, total: max(connections, 1),
		sendRate: map[int]dataphase.SendingRate{}, rxMbps: map[int]float64{},
		stop: make(chan struct{}), done: make(chan struct{})}
	p.redraw()
	go p.loop()
	return p
}

func (p *Progress) loop() {
	defer close(p.done)
	t := time.NewTicker(progressPeriod)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.redraw()
		}
	}
}

// Writer returns w (the report's or the error stream) with the line
// cleared before each write.
func (p *Progress) Writer(w io.Writer) io.Writer { return &progressGuard{p: p, w: w} }

type progressGuard struct {
	p *Progress
	w io.Writer
}

func (g *progressGuard) Write(b []byte) (int, error) {
	p := g.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	n, err := g.w.Write(b)
	if n > 0 {
		p.midRow = b[n-1] != '\n'
	}
	return n, err
}

func (p *Progress) clearLocked() {
	if p.drawn {
		io.WriteString(p.tty, clearLine)
		p.drawn = false
	}
}

// Close stops the line and erases it; later writes through Writer are
// passed on unchanged. It is safe to call more than once.
func (p *Progress) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.clearLocked()
	p.mu.Unlock()
	close(p.stop)
	<-p.done
}

// Observe takes the run's events (Options.Observe).
func (p *Progress) Observe(ev Event) {
	if ev.Kind == EventEnd {
		p.Close()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev.Kind {
	case EventStart:
		i := ev.Info
		p.total, p.upstream, p.ipv6 = max(i.ConnMax, 1), i.Upstream, i.IPv6
		p.testTime = time.Duration(i.TestIntTime) * time.Second
		if p.upstream {
			p.rows = dataphase.RowIndexes(dataphase.BuildRateTable(dataphase.TableOptions{NoJumbo: !i.Jumbo, TraditionalMTU: i.TraditionalMTU}))
		}
	case EventConnected:
		if p.started.IsZero() {
			p.started = p.now()
		}
		p.up++
	case EventConnEnded:
		p.up--
		delete(p.sendRate, ev.Conn)
		delete(p.rxMbps, ev.Conn)
	case EventTrial:
		t := &ev.Trial
		switch {
		case t.SendRateSet:
			p.sendRate[ev.Conn] = t.SendRate
		case t.Sent:
			p.rxMbps[ev.Conn] = t.L3Mbps(p.ipv6)
		}
	case EventAggregate:
		iv := *ev.Interval
		p.last = &iv
	}
}

func (p *Progress) redraw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.midRow {
		return
	}
	line := p.text()
	w := 80
	if p.width != nil {
		if c := p.width(); c > 0 {
			w = c
		}
	}
	if len(line) > w-1 { // a wrapped line could not be erased
		line = line[:max(w-1, 0)]
	}
	io.WriteString(p.tty, "\r"+line+"\x1b[K")
	p.drawn = true
}

// text is the line's content (ASCII only, so bytes are columns).
func (p *Progress) text() string {
	if p.started.IsZero() {
		return "udpstp: connecting..."
	}
	var b strings.Builder
	el := p.now().Sub(p.started)
	left := max(p.testTime-el, 0)
	fmt.Fprintf(&b, "%.1f s, %.1f s left", el.Seconds(), left.Seconds())
	if p.upstream {
		p.rowText(&b)
	} else if len(p.rxMbps) > 0 {
		sum := 0.0
		for _, m := range p.rxMbps {
			sum += m
		}
		fmt.Fprintf(&b, " | receiving %.2f Mbps", sum)
	}
	if iv := p.last; iv != nil {
		fmt.Fprintf(&b, " | Sub-Interval %d: %.2f Mbps, RTTVar %d/%d/%d ms, loss %d",
			iv.Number, iv.Capacity, iv.RTTVar[0], iv.RTTVar[1], iv.RTTVar[2], iv.Loss)
	}
	if p.total > 1 {
		fmt.Fprintf(&b, " | %d/%d connections", p.up, p.total)
	}
	return b.String()
}

// rowText adds the Load Sender's row (the lowest and highest over the
// connections) and the rate of the rows together.
func (p *Progress) rowText(b *strings.Builder) {
	if len(p.sendRate) == 0 {
		return
	}
	lo, hi, sum := -1, -1, 0.0
	for _, r := range p.sendRate {
		sum += r.L3Mbps(p.ipv6)
		i, ok := p.rows[r]
		if !ok {
			continue
		}
		if lo < 0 || i < lo {
			lo = i
		}
		hi = max(hi, i)
	}
	switch {
	case lo < 0:
		fmt.Fprintf(b, " | sending %.2f Mbps", sum)
	case lo == hi:
		fmt.Fprintf(b, " | row %d, sending %.2f Mbps", lo, sum)
	default:
		fmt.Fprintf(b, " | rows %d-%d, sending %.2f Mbps", lo, hi, sum)
	}
}
