// Package client runs a client's test: its Test Connections to one or more
// servers and the report.
//
// Run sets up the Test Connections of a control.ClientConfig (-C's maximum,
// round robin over the servers, the minimum enforced as OB-UDPST does),
// runs their Data Phases on a control.Network, prints OB-UDPST's text or
// JSON report and writes the result file. Its Plan may make that two tests
// at once, upstream and downstream (bidir.go), and a number of tests in a
// row with their aggregate (repeat.go). What happens on the way is also
// handed, as Events, to an optional observer: a progress line, a stream of
// JSON events or a test read them there instead of parsing the report.
package client

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/discover"
	"github.com/udpstp/udpstp/internal/atomicfile"
	"github.com/udpstp/udpstp/report"
)

// Options are what a run needs beyond its control.ClientConfig.
type Options struct {
	// Network opens the sockets and runs the Data Phases: the engine, in
	// tests internal/testkit/memnet.
	Network control.Network
	// Out receives the report, OB-UDPST's text lines or its JSON document;
	// nil: os.Stdout.
	Out io.Writer
	// Stderr receives what is not the report: a result file that cannot
	// be written, a Test Connection that does not end; nil: os.Stderr.
	Stderr io.Writer
	// Version is the version the text report's banner names.
	Version string
	// Optimizations is the socket path in OB-UDPST's words for the
	// banner's Mode line ("SendMMsg()+GSO RecvMMsg()+Trunc"), "" for
	// none.
	Optimizations string
	// Observe, if set, is called with each Event of the run, in order, on
	// the run's own goroutine (never on an Engine Thread), so it needs no
	// locking; it must return promptly, as the run waits for it.
	Observe func(Event)
	// EndGrace bounds the wait for the Test Connections to end once the
	// run is over; 0: DefaultEndGrace.
	EndGrace time.Duration
	// Plan is which tests the run makes (plan.go); zero: one.
	Plan Plan

	// Resolver answers a `srv:NAME` server's lookups, and a
	// FailoverList's; nil: net.DefaultResolver (the system's).
	Resolver discover.Resolver
	// Select is how a failover search orders its candidates (a
	// `srv:NAME`'s, a FailoverList's): "" or SelectOrder as found,
	// SelectRTT by their Setup round trips within each priority
	// (rttselect.go).
	Select Select
	// FailoverList makes cfg's servers, when there are several, the
	// candidates of one failover search, one at a time in their order as
	// a `srv:NAME`'s are, instead of -C's round robin over all of them at
	// once: the agent's servers of a test (docs/agent.md). None of them
	// may then be a `srv:NAME`.
	FailoverList bool

	// failover is the candidates of a `srv:NAME` server, looked up once
	// by Run (failover.go).
	failover *failover
	// pick, with failover, is a search's outcome shared by the runs of
	// one bidirectional test (bidir.go); nil: each run has its own.
	pick *choice
}

// DefaultEndGrace is how long a run waits for its Test Connections to end
// once it has decided the test is over: their stop handshakes take a few
// Trial Intervals.
const DefaultEndGrace = 4 * time.Second

// Run runs the test of cfg (with Options.Plan: both directions at once,
// several in a row) and returns its ErrorStatus, which the binary makes
// its exit status. The report goes to Out (text or JSON, cfg.Format) and,
// with cfg.OutputFile, a JSON document to that file, written atomically
// whatever happens, also after an interrupt (ctx cancelled), and with
// cfg.TextFile the same result for node_exporter; a file that cannot be
// written makes a successful run's status report.StatusInit.
func Run(ctx context.Context, cfg *control.ClientConfig, o Options) int {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.EndGrace <= 0 {
		o.EndGrace = DefaultEndGrace
	}
	format, _ := report.ParseFormat(cfg.Format) // the command line checked it
	if format == report.FormatText {
		report.Banner(o.Out, "udpstp", o.Version, bannerMode(cfg, o))
	}
	o.failover = lookupFailover(ctx, cfg, o)
	if o.Plan != (Plan{}) {
		return runPlan(ctx, cfg, o, format)
	}
	r := newRun(cfg, o, format)
	status, bad := r.begin(ctx)
	if cfg.OutputFile != "" && !bad.output {
		status = saveResult(cfg, o, format, r.col, status)
	}
	if cfg.TextFile != "" && !bad.textfile {
		status = writeTextfile(cfg, r.col.Document(report.FormatJSON), status, o.Stderr)
	}
	r.emit(Event{Kind: EventEnd, Conn: -1, Upstream: cfg.Upstream, Status: status, Document: r.col.Document(streamFormat(format))})
	return status
}

// result is what a run reports: a test's report.Result, or a
// report.Repeat.
type result interface {
	ErrorStatus() int
	Document(f report.Format) []byte
}

// saveResult writes res to cfg.OutputFile and returns the run's status:
// status, or report.StatusInit for a successful run whose file cannot be
// written.
func saveResult(cfg *control.ClientConfig, o Options, format report.Format, res result, status int) int {
	if err := atomicfile.Write(cfg.OutputFile, res.Document(jsonFile(format)), 0o644); err != nil {
		fmt.Fprintf(o.Stderr, "udpstp: ERROR: cannot write the result file: %v\n", err)
		if status == 0 {
			status = report.StatusInit
		}
	}
	return status
}

// jsonFile is the result file's format for a run printing format: the
// same JSON, or formatted JSON next to text.
func jsonFile(format report.Format) report.Format {
	if !format.IsJSON() {
		return report.FormatJSONFormatted
	}
	return format
}

// streamFormat is EventEnd's Document format for a run printing format:
// the same JSON, or compact JSON next to text.
func streamFormat(format report.Format) report.Format {
	if !format.IsJSON() {
		return report.FormatJSON
	}
	return format
}

// bannerMode is the banner's "Mode:" line of a client with cfg.
func bannerMode(cfg *control.ClientConfig, o Options) *report.Mode {
	return &report.Mode{Jumbo: !cfg.NoJumbo, TraditionalMTU: cfg.TraditionalMTU,
		IPv6Only: cfg.Family == dataphase.FamilyV6, Optimizations: o.Optimizations}
}

// begin checks the run's files (files.go) and, if they are fine, runs the
// test; a file that is not is the run's error, before any Setup Request.
// bad: the result files that cannot be written. The interface counters
// (-E) are closed when it returns.
func (r *run) begin(ctx context.Context) (status int, bad badFiles) {
	msg, bad := r.preflight()
	if r.iface != nil {
		defer r.iface.close()
	}
	if msg == "" {
		return r.run(ctx), bad
	}
	r.col.Error(report.StatusInit, msg)
	r.emit(Event{Kind: EventError, Conn: -1, Code: report.StatusInit, Text: msg})
	if err := r.col.Finish(); err != nil {
		fmt.Fprintf(r.o.Stderr, "udpstp: ERROR: writing results: %v\n", err)
	}
	return r.col.ErrorStatus(), bad
}

// newMCIdent draws the run's multi-connection ID, which every Test
// Connection's Setup Request carries (0 is not one).
func newMCIdent() uint16 {
	var id [2]byte
	rand.Read(id[:])
	return max(binary.BigEndian.Uint16(id[:]), 1)
}
