package server

// -G: OB-UDPST's server performance statistics (report/serverstats.go). A
// record every 10 s is kept in memory; every 5 minutes (the first time at
// a random point 10..300 s after start, so that a fleet restarted together
// does not write together) the records so far go to a file named by the
// -G pattern, written atomically, and a new period starts.
//
// What each figure is made of here:
//   - allocated maxima: the most Test Connections and Mbps per direction
//     reserved at once in the record (exact, not sampled every 500 ms);
//   - queued: load datagrams the kernel accepted from our sockets; their
//     IP bytes are that count times the mean IP size the clients reported
//     receiving (the engine counts datagrams, not bytes);
//   - delivered and status: from the Status PDUs of each Test Connection,
//     as its Data Phase counted them (dataphase/counters.go); message
//     loss, traffic stops and the data.*_invalid_* counters are every one
//     the Data Phases saw, not only the 10 per Test Connection they warn
//     about;
//   - system: send and receive calls and their datagrams, and the send
//     calls cut short by backpressure, of every test socket. The per-call
//     maxima (tx_overrun_size, tx_burst_size, rx_burst_size) are 0, as the
//     engine keeps totals only; fd_ready_* and timer_coalesce_* are 0: the
//     pool's Engine Threads wait on an epoll set and a deadline heap, but
//     do not count the sockets ready per wait or the deadlines served per
//     wake-up yet.

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/engine"
	"github.com/udpstp/udpstp/internal/atomicfile"
	"github.com/udpstp/udpstp/report"
)

// EnvStatsTiming replaces the -G timing for tests: "record,file"
// durations (e.g. "200ms,1s"); the first file then comes one file
// interval after start, without the random spread. The command reads it
// into Config.StatsTiming.
const EnvStatsTiming = "UDPSTP_STATS_TIMING"

// checkStatsFile does OB-UDPST's start-up check of -G (a file that cannot
// be written: exit ExitInit, before any socket is opened) as what
// atomicfile.Write will need of the name: nothing but a regular file
// there, and its directory takes a new file. OB-UDPST opens <name>.tmp for
// it, which follows a link planted at that name; the check here creates
// its temporary file exclusively, under a random name.
func checkStatsFile(pattern string, now time.Time, opt func(string) option) error {
	if pattern == "" {
		return nil
	}
	if err := atomicfile.Check(report.StatsFileName(pattern, now, nil)); err != nil {
		return fopenError(opt("stats-file"), err)
	}
	return nil
}

// statsTiming returns the record and file intervals and the first file's
// delay after start; v is EnvStatsTiming's value ("": OB-UDPST's timing).
func statsTiming(v string) (record, file, first time.Duration, err error) {
	record, file = report.StatsRecordInterval, report.StatsFileInterval
	first = file - time.Duration(rand.Int64N(int64(report.StatsFirstSpread)+1))
	if v == "" {
		return record, file, first, nil
	}
	r, f, ok := strings.Cut(v, ",")
	if ok {
		record, err = time.ParseDuration(r)
		if err == nil {
			file, err = time.ParseDuration(f)
		}
	}
	if !ok || err != nil || record <= 0 || file <= 0 {
		return 0, 0, 0, fmt.Errorf("%s=%q: want record,file durations", EnvStatsTiming, v)
	}
	return record, file, file, nil
}

// statsNet is the server's Network with the test sockets' counters kept
// for -G: it sees every Data Phase start, and sums the counters of the
// sockets running and of those that have ended.
type statsNet struct {
	control.Network
	mu    sync.Mutex
	live  map[*statsSock]struct{}
	ended sockTotals
}

// statsSock is one Data Phase's socket.
type statsSock struct {
	sock   interface{ Stats() engine.SocketStats }
	sender bool // the server sends the load on it
}

// sockTotals are the sockets' counters summed by the direction of their
// tests: downstream, where the server is the Load Sender, and upstream.
type sockTotals struct {
	down, up engine.SocketCounts
}

func (t *sockTotals) add(s engine.SocketStats, sender bool) {
	if sender {
		t.down.Add(&s.Counts)
	} else {
		t.up.Add(&s.Counts)
	}
}

// all is the sum over both directions.
func (t *sockTotals) all() engine.SocketCounts {
	a := t.down
	a.Add(&t.up)
	return a
}

// loadSent is the load the kernel accepted: the datagrams sent on Load
// Senders' sockets (the others sent Status PDUs).
func (t *sockTotals) loadSent() uint64 { return t.down[engine.CountSentDatagrams] }

var _ control.Network = (*statsNet)(nil)

func newStatsNet(n control.Network) *statsNet {
	return &statsNet{Network: n, live: map[*statsSock]struct{}{}}
}

func (n *statsNet) RunDataPhase(sock control.Socket, core *dataphase.Conn, onEvent func(dataphase.Event)) control.DataPhase {
	dp := n.Network.RunDataPhase(sock, core, onEvent)
	ss, ok := sock.(interface{ Stats() engine.SocketStats })
	if !ok {
		return dp
	}
	s := &statsSock{sock: ss, sender: core.LoadSender()}
	n.mu.Lock()
	n.live[s] = struct{}{}
	n.mu.Unlock()
	go func() {
		<-dp.Done()
		n.mu.Lock()
		n.ended.add(s.sock.Stats(), s.sender)
		delete(n.live, s)
		n.mu.Unlock()
	}()
	return dp
}

// totals sums the counters of every test socket so far.
func (n *statsNet) totals() sockTotals {
	n.mu.Lock()
	defer n.mu.Unlock()
	t := n.ended
	for s := range n.live {
		t.add(s.sock.Stats(), s.sender)
	}
	return t
}

// statsCollector makes the -G records and writes the files.
type statsCollector struct {
	pattern string
	srv     *control.Server
	net     *statsNet
	log     *slog.Logger
	opt     func(string) option    // names -G in messages
	header  report.ServerStatsFile // everything but records, counters, uptime
	started time.Time

	record, file, first time.Duration

	prev    report.ServerStatsSample
	records []report.ServerStatsRecord

	// The last file written: a file due in the same 5-minute slot (its
	// name is the same) holds its records too, so none is overwritten.
	lastName    string
	lastRecords []report.ServerStatsRecord
}

// sample reads the cumulative counters now.
func (c *statsCollector) sample(now time.Time) report.ServerStatsSample {
	d := c.srv.Snapshot().Data
	t := c.net.totals()
	a, loadSent := t.all(), t.loadSent()
	s := report.ServerStatsSample{
		At:                now,
		QueuedTxDatagrams: loadSent,
		TxOverrunEvents:   a[engine.CountBackpressure], TxOverrunDatagrams: a[engine.CountRefusedDatagrams],
		TxBursts: a[engine.CountSendCalls], TxBurstDatagrams: a[engine.CountSentDatagrams],
		RxBursts: a[engine.CountRecvCalls], RxBurstDatagrams: a[engine.CountRecvDatagrams],
		Data: d,
	}
	if n := d[dataphase.CountTxDatagrams]; n > 0 {
		s.QueuedTxIPBytes = uint64(float64(loadSent) * float64(d[dataphase.CountTxIPBytes]) / float64(n))
	}
	return s
}

// counters maps the server's counters onto the file's.
func statsCounters(n *control.ServerSnapshot) report.ServerStatsCounters {
	r, k := &n.Rejected, &n.Counts
	requests := k[control.CountSetupRequests]
	valid := requests - min(requests, k[control.CountSetupRateLimited]+k[control.CountSetupInvalid])
	return report.ServerStatsCounters{
		Setup: report.StatsSetupCounters{
			RequestsReceived: valid, AcceptsSent: k[control.CountSetupAccepted], RejectsSent: n.RejectedTotal(),
			InvalidProtocolVer: r[control.SetupBadVersion],
			InvalidSetupOption: r[control.SetupJumboMismatch] + r[control.SetupAuthNotConf] + r[control.SetupAuthRequired] +
				r[control.SetupAuthMode] + r[control.SetupNoMaxBW] + r[control.SetupTradMismatch] + r[control.SetupMCInvalid],
			BandwidthExceeded:    r[control.SetupCapExceeded],
			ConnectionCreateFail: r[control.SetupConnFail],
			LegacyProtocolVer:    k[control.CountLegacyAccepted],
		},
		Activation: report.StatsActivationCounters{
			TimeoutWaiting: k[control.CountActivationWait], RequestsReceived: k[control.CountActivationRequests],
			AcceptsSent: k[control.CountActivated],
		},
		Control: report.StatsControlCounters{
			InvalidSize: k[control.CountInvalidSize], InvalidFormat: k[control.CountInvalidFormat],
			InvalidChecksum: k[control.CountInvalidChecksum],
			AuthFailure:     k[control.CountAuthFailure], BadAuthTime: k[control.CountAuthTime],
		},
		Data: n.Data,
	}
}

// addRecord closes the record ending now.
func (c *statsCollector) addRecord(now time.Time) {
	cur := c.sample(now)
	conns, down, up := c.srv.Peaks()
	c.records = append(c.records, report.NewServerStatsRecord(c.prev, cur,
		report.ServerStatsMaxima{ConnectionCount: conns, DownstreamBandwidth: down, UpstreamBandwidth: up}))
	c.prev = cur
}

// write writes the records so far, with the counters now, to the file
// named for now, and starts a new period.
func (c *statsCollector) write(now time.Time) {
	name := report.StatsFileName(c.pattern, now, nil)
	recs := c.records
	if name == c.lastName {
		recs = append(append([]report.ServerStatsRecord(nil), c.lastRecords...), recs...)
	}
	f := c.header
	f.Records = recs
	snap := c.srv.Snapshot()
	f.Counters = statsCounters(&snap)
	f.ProcessUptime = int64(now.Sub(c.started) / time.Second)
	if err := atomicfile.Write(name, f.Render(nil), 0o644); err != nil {
		c.log.Error("cannot write the statistics file", "option", c.opt("stats-file").String(), "file", name, "err", err)
	} else {
		c.log.Debug("statistics file written", "file", name, "records", len(recs))
	}
	c.lastName, c.lastRecords = name, recs
	c.records = nil
}

// run makes records and writes files until ctx ends, then writes the
// records of the unfinished period (OB-UDPST writes nothing at exit; a
// restart here loses no statistics).
func (c *statsCollector) run(ctx context.Context) {
	start := time.Now()
	c.prev = c.sample(start)
	c.srv.Peaks() // start the first record's maxima now
	deadline := start.Add(c.first)
	t := time.NewTimer(c.record)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			now := time.Now()
			if now.Sub(c.prev.At) >= c.record/10 {
				c.addRecord(now)
			}
			if len(c.records) > 0 {
				c.write(now)
			}
			return
		case <-t.C:
		}
		now := time.Now()
		c.addRecord(now)
		if !now.Before(deadline) {
			c.write(now)
			deadline = now.Add(c.file)
		}
		// Re-armed from when it fired, as OB-UDPST's timer is.
		t.Reset(c.record)
	}
}
