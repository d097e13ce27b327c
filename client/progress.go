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

	now      func() time.Time
	started  time.Time // the first Data Phase's start (of this test of --repeat)
	testTime time.Duration
	run      int // the test of --repeat, 0 without
	// dirs are the figures of each direction, downstream [0] and upstream
	// [1]; a run of one direction fills one, --bidirectional both.
	dirs [2]*progressDir
	// total is the Test Connections of a run that has not started yet.
	total int

	stop chan struct{}
	done chan struct{}
}

// progressDir is what the line shows of one direction.
type progressDir struct {
	total, up int
	upstream  bool
	ipv6      bool
	rows      map[dataphase.SendingRate]int
	sendRate  map[int]dataphase.SendingRate // per connection, upstream
	rxMbps    map[int]float64               // per connection, downstream: the last Trial Interval
	last      *report.Interval              // the last aggregate Sub-Interval
}

// dir is the figures of ev's direction, made on first use.
func (p *Progress) dir(upstream bool) *progressDir {
	i := 0
	if upstream {
		i = 1
	}
	if p.dirs[i] == nil {
		p.dirs[i] = &progressDir{total: p.total, upstream: upstream,
			sendRate: map[int]dataphase.SendingRate{}, rxMbps: map[int]float64{}}
	}
	return p.dirs[i]
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
	if ev.Kind == EventRunEnd { // the next test of --repeat starts afresh
		p.started, p.dirs = time.Time{}, [2]*progressDir{}
		return
	}
	p.run = ev.Run
	switch ev.Kind {
	case EventStart:
		i := ev.Info
		d := p.dir(i.Upstream)
		d.total, d.ipv6 = max(i.ConnMax, 1), i.IPv6
		p.testTime = time.Duration(i.TestIntTime) * time.Second
		if d.upstream {
			d.rows = dataphase.RowIndexes(dataphase.BuildRateTable(dataphase.TableOptions{NoJumbo: !i.Jumbo, TraditionalMTU: i.TraditionalMTU}))
		}
	case EventConnected:
		if p.started.IsZero() {
			p.started = p.now()
		}
		p.dir(ev.Upstream).up++
	case EventConnEnded:
		d := p.dir(ev.Upstream)
		d.up--
		delete(d.sendRate, ev.Conn)
		delete(d.rxMbps, ev.Conn)
	case EventTrial:
		d, t := p.dir(ev.Upstream), &ev.Trial
		switch {
		case t.SendRateSet:
			d.sendRate[ev.Conn] = t.SendRate
		case t.Sent:
			d.rxMbps[ev.Conn] = t.L3Mbps(d.ipv6)
		}
	case EventAggregate:
		iv := *ev.Interval
		p.dir(ev.Upstream).last = &iv
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

// text is the line's content (ASCII only, so bytes are columns): one
// direction's figures, or with --bidirectional both, labelled.
func (p *Progress) text() string {
	if p.started.IsZero() {
		return "udpstp: connecting..."
	}
	var b strings.Builder
	if p.run > 0 {
		fmt.Fprintf(&b, "run %d: ", p.run)
	}
	el := p.now().Sub(p.started)
	left := max(p.testTime-el, 0)
	fmt.Fprintf(&b, "%.1f s, %.1f s left", el.Seconds(), left.Seconds())
	both := p.dirs[0] != nil && p.dirs[1] != nil
	for _, d := range [2]*progressDir{p.dirs[1], p.dirs[0]} {
		if d == nil {
			continue
		}
		if !both {
			d.text(&b, false)
			continue
		}
		var db strings.Builder
		d.text(&db, true)
		label := " | down: "
		if d.upstream {
			label = " | up: "
		}
		b.WriteString(label + strings.TrimPrefix(db.String(), " | "))
	}
	return b.String()
}

// text adds the direction's figures; brief leaves out what both
// directions' lines cannot hold.
func (d *progressDir) text(b *strings.Builder, brief bool) {
	if d.upstream {
		d.rowText(b)
	} else if len(d.rxMbps) > 0 {
		sum := 0.0
		for _, m := range d.rxMbps {
			sum += m
		}
		fmt.Fprintf(b, " | receiving %.2f Mbps", sum)
	}
	if iv := d.last; iv != nil {
		if brief {
			fmt.Fprintf(b, " | Sub-Interval %d: %.2f Mbps, loss %d", iv.Number, iv.Capacity, iv.Loss)
		} else {
			fmt.Fprintf(b, " | Sub-Interval %d: %.2f Mbps, RTTVar %d/%d/%d ms, loss %d",
				iv.Number, iv.Capacity, iv.RTTVar[0], iv.RTTVar[1], iv.RTTVar[2], iv.Loss)
		}
	}
	if d.total > 1 {
		fmt.Fprintf(b, " | %d/%d connections", d.up, d.total)
	}
}

// rowText adds the Load Sender's row (the lowest and highest over the
// connections) and the rate of the rows together.
func (d *progressDir) rowText(b *strings.Builder) {
	if len(d.sendRate) == 0 {
		return
	}
	lo, hi, sum := -1, -1, 0.0
	for _, r := range d.sendRate {
		sum += r.L3Mbps(d.ipv6)
		i, ok := d.rows[r]
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
