package report

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/udpstp/udpstp/dataphase"
)

// Collector gathers a client run's results and writes them in OB-UDPST's
// formats: text lines live as they happen, and at Finish either the final
// text lines or the JSON document. It also keeps the ErrorStatus.
//
// All methods are safe for concurrent use; connections may report from
// their own goroutines.
type Collector struct {
	mu   sync.Mutex
	w    io.Writer
	opt  Options
	werr error // first write error, returned by Finish

	errorState
	res      results
	active   int  // active Test Connections (the package doc: aggregation)
	failed   bool // fewer than the minimum: no Summary, no results
	finished bool

	conns    map[int]int // Sub-Intervals output per connection
	alerts   int         // ALERT lines asked for (Alert), shown or not
	agg      aggregate
	intfMbps float64 // the local interface's last rate (-E)
	sums     [2]summaryAcc
	maxes    [2]maxAcc
	climb    [2][]ClimbSample // each mode's aggregate Sub-Intervals, for StillRising
}

// New returns a Collector writing to w (standard output for the client).
// Connection counts below 1 are taken as 1 (OB-UDPST's -C default).
func New(w io.Writer, opt Options) *Collector {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	opt.Connections = max(opt.Connections, 1)
	opt.MinConnections = max(opt.MinConnections, 1)
	c := &Collector{w: w, opt: opt, errorState: newErrorState(), active: opt.Connections, conns: map[int]int{}}
	c.agg.reset()
	return c
}

func (c *Collector) now() int64 { return c.opt.Now().UnixNano() }

func (c *Collector) text() bool { return c.opt.Format == FormatText }

func (c *Collector) write(s string) {
	if c.werr == nil {
		_, c.werr = io.WriteString(c.w, s)
	}
}

// prefix is OB-UDPST's verbose "[i]" for slot i ("" without -v).
func (c *Collector) prefix(slot int) string {
	if !c.opt.Verbose {
		return ""
	}
	return fmt.Sprintf("[%d]", slot)
}

// Banner prints OB-UDPST's banner lines (text mode only), "UDP Speed
// Test", "Software Ver: ..." and, with Options.Mode, "Mode: Client, ...",
// where parsers of its output look for them, naming udpstp (name) and its
// version as well as the OB-UDPST version whose output it produces.
func (c *Collector) Banner(name, version string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.text() {
		c.write(banner(name, version, c.opt.Mode))
	}
}

// Activate records the parameters of the first Test Connection whose
// activation succeeded: they become the JSON "Input", and BOMTime is now.
// It reports whether this was the first call; a later call only fills in
// the host addresses the first did not know (another server's).
func (c *Collector) Activate(info TestInfo) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.res.info != nil {
		// A later Test Connection, perhaps to another server: the host
		// list the first one copied gets its address, as OB-UDPST's
		// client lists every server's (and the first's at the top).
		for i := range min(len(info.Hosts), len(c.res.info.Hosts)) {
			if h := &c.res.info.Hosts[i]; h.Addr == "" {
				h.Addr = info.Hosts[i].Addr
			}
		}
		return false
	}
	info.Hosts = append([]Host(nil), info.Hosts...)
	c.res.info = &info
	c.res.bom = c.now()
	return true
}

// WriteHeader prints the two test header lines of OB-UDPST (text mode
// only, after Activate); conn is the activated connection (0-based), used
// for the verbose prefix.
func (c *Collector) WriteHeader(conn int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.text() && c.res.info != nil {
		c.write(headerLines(c.res.info, c.prefix(conn+1)))
	}
}

// Warning records a warning (code 1..49) and its full text, as OB-UDPST
// prints it (with the " [Server ip:port]" suffix where it adds one). It
// overwrites the ErrorStatus.
func (c *Collector) Warning(code int, msg string) { c.message(code, msg) }

// Error records a setup, activation or other error (code >= 50) and its
// full text; it overwrites the ErrorStatus.
func (c *Collector) Error(code int, msg string) { c.message(code, msg) }

// MaxAlerts is how many ALERT lines a client run shows: OB-UDPST's
// ALERT_MSG_LIMIT. Each invalid control response makes one, and before a
// Test Connection's socket is connected anyone can send it junk (50,000
// junk datagrams made 49,937 lines before this cap); what comes after the
// cap is counted (Alerts) and said once.
const MaxAlerts = 10

// Alert records a line OB-UDPST prints on its error console without
// changing the ErrorStatus (ALERT lines): in JSON it still becomes the
// ErrorMessage. Past MaxAlerts in a run, one line says that more are not
// shown, and the rest are only counted. This is the one place the cap
// lives: callers report every alert.
func (c *Collector) Alert(msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.alerts++
	switch {
	case c.alerts <= MaxAlerts:
		c.say(-1, msg)
	case c.alerts == MaxAlerts+1 && c.text():
		c.write(fmt.Sprintf("ALERT: more than %d invalid control responses; no more are shown\n", MaxAlerts))
	}
}

// Alerts returns how many ALERT lines were asked for, shown or not.
func (c *Collector) Alerts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.alerts
}

func (c *Collector) message(code int, msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.say(code, msg)
}

// say sets the status (code >= 0), keeps the message and prints it in text
// mode; the caller holds the lock.
func (c *Collector) say(code int, msg string) {
	if code >= 0 {
		c.set(code)
	}
	c.record(msg)
	if c.text() {
		c.write(msg + "\n")
	}
}

// ConnEnded reports that a Test Connection ended. normal is the stop
// handshake at the end of the test: a status > 49 becomes 0 (success),
// a warning is kept, and the active count is unchanged. Any other end
// (setup failure, timeout, watchdog, socket failure) lowers the active
// count, and may complete the pending aggregate Sub-Interval.
func (c *Collector) ConnEnded(normal bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if normal {
		// Below the minimum the run has failed: connections the client
		// then stops itself do not turn the failure into a success.
		if !c.failed {
			c.stopped()
		}
		return
	}
	if c.active > 0 {
		c.active--
	}
	c.poll(0)
}

// CheckMinConnections applies OB-UDPST's minimum-connections rule: with
// fewer active Test Connections than Options.MinConnections it prints
// "ERROR: Minimum required connections (n) unavailable", sets ErrorStatus
// 200 unless an error (> 49) is already recorded, and reports true; the
// run then ends without Summary, Maximum or JSON results. Later calls
// report true without repeating the message.
func (c *Collector) CheckMinConnections() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed {
		return true
	}
	if c.active >= c.opt.MinConnections {
		return false
	}
	c.failed = true
	c.say(-1, MinConnectionsMessage(c.opt.MinConnections))
	c.minConns()
	return true
}

// MinConnectionsMessage is OB-UDPST's line for a run left with fewer than
// min Test Connections.
func MinConnectionsMessage(min int) string {
	return fmt.Sprintf("ERROR: Minimum required connections (%d) unavailable", min)
}

// ErrorStatus returns OB-UDPST's ErrorStatus, also the exit status.
func (c *Collector) ErrorStatus() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// Add takes one Test Connection's completed Sub-Interval (conn is the
// 0-based connection index). It merges it into the aggregate Sub-Interval
// and emits the aggregate (text: prints its line) when every active
// connection contributed, or first when this connection already
// contributed to the pending one (another connection is late or failed).
// A connection's results beyond NumberTestSubIntervals are ignored.
//
// When the Load Sender skipped Bursts in an aggregate Sub-Interval
// (SkippedBursts, our own figure), text mode prints one extra line after
// OB-UDPST's, "Sub-Interval[n]: sender skipped k Bursts (p % of plan)", and
// JSON gets the totals under the separate top-level key "udpstp"; OB-UDPST's
// lines and keys stay exactly as they are. The same key carries each
// connection's own Sub-Interval figures ("Connections", see conns.go) when
// there is more than one connection or this end sends the load (then with
// the sending rate row of each Sub-Interval); not with -s.
func (c *Collector) Add(conn int, r dataphase.SubIntervalResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed || c.finished || c.res.info == nil {
		return
	}
	wall := r.Wall
	if wall == 0 {
		wall = c.now()
	}
	n := c.conns[conn]
	if n > c.agg.count {
		c.emit(wall) // this connection has started the next Sub-Interval
	}
	if n >= c.res.info.subIntervals() {
		return
	}
	n++
	c.conns[conn] = n
	if c.agg.contrib == 0 {
		c.sampleInterface()
	}
	rec := recordOf(&r)
	ipv6 := c.res.info.IPv6
	l3 := rec.rate(overheadL3, ipv6)
	if c.text() && c.opt.Verbose && !c.opt.NoSubInt {
		c.write(subIntervalLine(c.prefix(conn+1), n, &rec, l3, c.opt.LossRatio, c.ceOn(), ""))
	}
	if !c.opt.NoSubInt {
		c.res.addConn(conn, &rec, l3, &r)
	}
	if c.opt.OnInterval != nil {
		c.opt.OnInterval(c.connInterval(conn, n, wall, &rec, l3, &r))
	}
	c.agg.add(&r, &rec, l3, ipv6)
	c.poll(wall)
}

// poll is OB-UDPST's 10 ms aggregate check, run whenever something changed:
// the aggregate is emitted once as many connections contributed as are
// active.
func (c *Collector) poll(wall int64) {
	if c.failed || c.agg.contrib == 0 || c.agg.contrib < c.active {
		return
	}
	if wall == 0 {
		wall = c.now()
	}
	c.emit(wall)
}

func (c *Collector) ceOn() bool { return c.res.info != nil && c.res.info.CEThresh > 0 }

// intfOn reports whether the local interface's rate is reported (-E).
func (c *Collector) intfOn() bool { return c.res.info != nil && c.res.info.Interface != "" }

// sampleInterface reads the local interface's rate (-E) as OB-UDPST does:
// when the first Test Connection's Sub-Interval of an aggregate
// Sub-Interval arrives; the aggregate then shows it.
func (c *Collector) sampleInterface() {
	if c.intfOn() && c.opt.InterfaceRate != nil {
		c.intfMbps = c.opt.InterfaceRate()
	}
}

// Finish completes the run: it emits a pending aggregate Sub-Interval,
// computes Summary and Maximum (when at least one Sub-Interval was output
// and the run did not fail for lack of connections) and writes the final
// text lines, or the whole JSON document followed by a newline. It returns
// the first error writing to the output. udpstp calls it after an
// interrupt too, with ErrorStatus 255 recorded: the results measured so far
// are printed and kept (OB-UDPST prints nothing then; ours is a deliberate
// difference, so that an interrupted run still leaves its result file).
func (c *Collector) Finish() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished {
		return c.werr
	}
	c.finished = true
	if !c.failed {
		if c.agg.contrib > 0 {
			c.emit(c.now())
		}
		if c.agg.count > 0 {
			c.conclude()
		}
	}
	c.res.eom = c.now()
	if c.text() && c.opt.Verbose && c.res.groupWindow > 0 {
		c.write(fmt.Sprintf("Grouping window (udpstp): each Burst left up to %d us late\n", c.res.groupWindow.Microseconds()))
	}
	if !c.text() {
		c.write(string(c.document(c.opt.Format)) + "\n")
	}
	return c.werr
}

// SetGroupingWindow records the widest grouping window the Engine Threads
// of the test's executor used (engine.PoolStats.GroupMax), before Finish:
// each Burst may have left up to that late. The JSON document's extension
// carries it (GroupingWindowUs) and -v's text says it, only when there was
// one: none is the default.
func (c *Collector) SetGroupingWindow(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.res.groupWindow = max(d, 0)
}

// SetReassemblyFailures records, before Finish, how many fragments or
// datagrams the Load Receiver's host failed to reassemble during the test
// other than by timeout (ReassemblyNote). The text report says so after
// the Maximum and the JSON document's extension carries it
// (ReassemblyFailures), only when there were some.
func (c *Collector) SetReassemblyFailures(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.res.reasmFails = max(n, 0)
}

// StillRising reports (after Finish) whether the search was still rising
// at the end of the test (see StillRising): the Maximum may then be bound
// by the test's length. The text report has said so already; an observer
// (--json-stream) may say so too.
func (c *Collector) StillRising() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.res.stillRising
}

// Document renders the JSON document (after Finish) in the JSON format f,
// whatever format was printed: for a results file next to text output.
func (c *Collector) Document(f Format) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f == FormatText {
		f = FormatJSON
	}
	return append(c.document(f), '\n')
}

// document renders the results with the current ErrorStatus and messages.
func (c *Collector) document(f Format) []byte {
	c.res.status, c.res.msg, c.res.msg2 = c.status, c.msg, c.msg2
	return render(c.res.document(f, c.opt.Extensions), f == FormatJSONFormatted)
}
