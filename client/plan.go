package client

import (
	"context"
	"fmt"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/report"
)

// Plan says which tests a Run makes. The zero Plan is one test in the
// config's direction.
type Plan struct {
	// Bidirectional runs an upstream and a downstream test to the same
	// servers at once, each with its own Test Connections (-C n: n of
	// each) and rate search, after an idle baseline (bidir.go).
	Bidirectional bool
	// Repeat, when above 0, runs that many complete tests in a row and
	// reports each and their aggregate (repeat.go).
	Repeat int
	// Pause is the wait between two tests of Repeat.
	Pause time.Duration
}

// runPlan is Run's work for a Plan that is not zero: the result file is
// checked first, as a single test's is (files.go), then the tests run and
// the file is written once more at the end.
func runPlan(ctx context.Context, cfg *control.ClientConfig, o Options, format report.Format) int {
	if msg := checkOutput(cfg); msg != "" {
		fmt.Fprintf(o.Stderr, "udpstp: ERROR: %s\n", msg)
		if o.Observe != nil {
			o.Observe(Event{Kind: EventError, Conn: -1, Upstream: cfg.Upstream, Code: report.StatusInit, Text: msg})
			o.Observe(Event{Kind: EventEnd, Conn: -1, Upstream: cfg.Upstream, Status: report.StatusInit})
		}
		return report.StatusInit
	}
	var res result
	if o.Plan.Repeat > 0 {
		res = runRepeat(ctx, cfg, o, format)
	} else {
		res = runTest(ctx, cfg, o, format)
	}
	status := res.ErrorStatus()
	if cfg.OutputFile != "" {
		status = saveResult(cfg, o, format, res, status)
	}
	if o.Observe != nil {
		o.Observe(Event{Kind: EventEnd, Conn: -1, Upstream: cfg.Upstream, Status: status, Document: res.Document(streamFormat(format))})
	}
	return status
}

// runTest runs one complete test, in cfg's direction or (Bidirectional)
// in both, and prints its report to o.Out; the result file is the
// caller's.
func runTest(ctx context.Context, cfg *control.ClientConfig, o Options, format report.Format) report.Result {
	if o.Plan.Bidirectional {
		return runBidir(ctx, cfg, o, format)
	}
	r := newRun(cfg, o, format)
	r.begin(ctx)
	return r.col
}
