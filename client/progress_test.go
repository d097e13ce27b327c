package client

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/report"
)

// terminal is what a terminal shows of the bytes written to it, for the
// few controls the progress line uses: '\r', '\n' and ESC [ K (erase to
// the end of the row). Both of the run's descriptors write to it, as
// standard output and standard error do on one terminal.
type terminal struct {
	mu   sync.Mutex
	raw  bytes.Buffer
	rows []string
	col  int
}

func (t *terminal) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.raw.Write(b)
	if len(t.rows) == 0 {
		t.rows = []string{""}
	}
	for i := 0; i < len(b); i++ {
		r := &t.rows[len(t.rows)-1]
		switch {
		case b[i] == '\r':
			t.col = 0
		case b[i] == '\n':
			t.rows = append(t.rows, "")
			t.col = 0
		case b[i] == 0x1b && i+2 < len(b) && b[i+1] == '[' && b[i+2] == 'K':
			*r = (*r)[:min(t.col, len(*r))]
			i += 2
		default:
			if t.col < len(*r) {
				*r = (*r)[:t.col] + string(b[i]) + (*r)[t.col+1:]
			} else {
				*r += strings.Repeat(" ", t.col-len(*r)) + string(b[i])
			}
			t.col++
		}
	}
	return len(b), nil
}

func (t *terminal) screen() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.rows, "\n")
}

// TestProgressLeavesTheReport: the line is drawn between report lines and
// erased before each of them and at the end, so the terminal shows
// exactly the report, with nothing of the line left on any row.
func TestProgressLeavesTheReport(t *testing.T) {
	term := &terminal{}
	p := NewProgress(term, func() int { return 60 }, 1)
	out := p.Writer(term)
	report := []string{"UDP Speed Test\n", "Software Ver: x\n", "Sub-Interval[1](sec):   1.0, ...\n", "Downstream Summary ...\n"}
	for _, l := range report {
		p.redraw()
		if !strings.Contains(term.screen(), "udpstp: connecting...") {
			t.Fatalf("no line drawn: %q", term.screen())
		}
		out.Write([]byte(l))
	}
	p.redraw()
	p.Observe(Event{Kind: EventEnd})
	if got, want := term.screen(), strings.Join(report, ""); got != want {
		t.Errorf("screen\n%q\nwant the report alone\n%q\n(bytes %q)", got, want, term.raw.String())
	}
	// A write that leaves its row open is not drawn over.
	term2 := &terminal{}
	p2 := NewProgress(term2, nil, 1)
	p2.Writer(term2).Write([]byte("partial"))
	p2.redraw()
	p2.Writer(term2).Write([]byte(" line\n"))
	p2.Close()
	if got := term2.screen(); got != "partial line\n" {
		t.Errorf("open row: %q", got)
	}
}

// TestProgressText: what the line says during a test, downstream and
// upstream with two connections, cut to the terminal's width.
func TestProgressText(t *testing.T) {
	term := &terminal{}
	p := NewProgress(term, func() int { return 200 }, 2)
	defer p.Close()
	clock := time.Unix(1796009000, 0)
	p.mu.Lock()
	p.now = func() time.Time { return clock }
	p.mu.Unlock()
	info := &report.TestInfo{TestIntTime: 10, ConnMax: 2, Jumbo: true}
	p.Observe(Event{Kind: EventStart, Info: info})
	p.Observe(Event{Kind: EventConnected, Conn: 0, Activated: &control.ClientConn{}})
	p.Observe(Event{Kind: EventConnected, Conn: 1, Activated: &control.ClientConn{}})
	clock = clock.Add(2500 * time.Millisecond)
	p.Observe(Event{Kind: EventTrial, Conn: 0, Trial: dataphase.TrialInfo{Sent: true, Datagrams: 100, Bytes: 122200, DeltaTimeUs: 50000}})
	p.Observe(Event{Kind: EventTrial, Conn: 1, Trial: dataphase.TrialInfo{Sent: true, Datagrams: 100, Bytes: 122200, DeltaTimeUs: 50000}})
	p.Observe(Event{Kind: EventAggregate, Conn: -1, Interval: &report.Interval{Conn: -1, Number: 2, Capacity: 39.1, Loss: 3, RTTVar: [3]uint32{1, 2, 9}}})
	p.mu.Lock()
	got := p.text()
	p.mu.Unlock()
	want := "2.5 s, 7.5 s left | receiving 40.00 Mbps | Sub-Interval 2: 39.10 Mbps, RTTVar 1/2/9 ms, loss 3 | 2/2 connections"
	if got != want {
		t.Errorf("downstream:\n%s\nwant\n%s", got, want)
	}
	p.Observe(Event{Kind: EventConnEnded, Conn: 1})

	up := NewProgress(term, func() int { return 30 }, 2)
	defer up.Close()
	up.Observe(Event{Kind: EventStart, Info: &report.TestInfo{TestIntTime: 10, ConnMax: 2, Upstream: true, Jumbo: true}})
	// The run sets each event's Upstream (run.emit).
	up.Observe(Event{Kind: EventConnected, Conn: 0, Upstream: true, Activated: &control.ClientConn{}})
	table := dataphase.BuildRateTable(dataphase.TableOptions{})
	up.Observe(Event{Kind: EventTrial, Conn: 0, Upstream: true, Trial: dataphase.TrialInfo{SendRate: table[300], SendRateSet: true}})
	up.Observe(Event{Kind: EventTrial, Conn: 1, Upstream: true, Trial: dataphase.TrialInfo{SendRate: table[320], SendRateSet: true}})
	up.mu.Lock()
	got = up.text()
	up.mu.Unlock()
	if !strings.Contains(got, " | rows 300-320, sending 620.00 Mbps | 1/2 connections") {
		t.Errorf("upstream: %s", got)
	}
	up.redraw()
	if raw := term.raw.String(); !strings.Contains(raw, "\r"+got[:29]+"\x1b[K") || strings.Contains(raw, got[:30]) {
		t.Errorf("not cut to 29 columns of 30: %q", raw)
	}
}

// TestProgressBothDirections: with --bidirectional both halves' events
// come to one line, each direction's figures labelled, and with --repeat
// the test's number leads and each test starts afresh.
func TestProgressBothDirections(t *testing.T) {
	term := &terminal{}
	p := NewProgress(term, func() int { return 200 }, 1)
	defer p.Close()
	clock := time.Unix(1796009000, 0)
	p.mu.Lock()
	p.now = func() time.Time { return clock }
	p.mu.Unlock()
	table := dataphase.BuildRateTable(dataphase.TableOptions{})
	for run := 1; run <= 2; run++ {
		p.Observe(Event{Kind: EventStart, Run: run, Upstream: true, Info: &report.TestInfo{TestIntTime: 10, ConnMax: 1, Upstream: true, Jumbo: true}})
		p.Observe(Event{Kind: EventStart, Run: run, Info: &report.TestInfo{TestIntTime: 10, ConnMax: 1, Jumbo: true}})
		p.Observe(Event{Kind: EventConnected, Run: run, Upstream: true, Activated: &control.ClientConn{}})
		p.Observe(Event{Kind: EventConnected, Run: run, Activated: &control.ClientConn{}})
		clock = clock.Add(time.Second)
		p.Observe(Event{Kind: EventTrial, Run: run, Upstream: true, Trial: dataphase.TrialInfo{SendRate: table[40], SendRateSet: true}})
		p.Observe(Event{Kind: EventTrial, Run: run, Trial: dataphase.TrialInfo{Sent: true, Datagrams: 100, Bytes: 122200, DeltaTimeUs: 50000}})
		p.Observe(Event{Kind: EventAggregate, Run: run, Conn: -1, Interval: &report.Interval{Conn: -1, Number: 1, Capacity: 19.5}})
		p.mu.Lock()
		got := p.text()
		p.mu.Unlock()
		want := fmt.Sprintf("run %d: 1.0 s, 9.0 s left | up: row 40, sending 40.00 Mbps | down: receiving 20.00 Mbps | Sub-Interval 1: 19.50 Mbps, loss 0", run)
		if got != want {
			t.Errorf("run %d:\n%s\nwant\n%s", run, got, want)
		}
		p.Observe(Event{Kind: EventRunEnd, Run: run, Conn: -1})
		p.mu.Lock()
		got = p.text()
		p.mu.Unlock()
		if got != "udpstp: connecting..." {
			t.Errorf("after run %d: %q", run, got)
		}
	}
}
