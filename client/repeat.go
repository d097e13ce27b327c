package client

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/atomicfile"
	"github.com/udpstp/udpstp/report"
)

// runRepeat runs Plan.Repeat complete tests in a row (each one direction,
// or both with Plan.Bidirectional), Plan.Pause apart, and reports each in
// full and their aggregate (report.Repeat). Text: each test's lines after
// a "Run i of n" line, then the table. JSON: one document at the end with
// every run and the aggregate. The result file is rewritten after each
// test, so that a run killed half way still leaves the tests it finished.
// An interrupt ends the test in progress (or the pause) and the run; the
// status is then 255. Otherwise it is the worst test's (report.Repeat's
// ErrorStatus): a failed test makes the run fail, and it is shown as
// failed, never dropped.
func runRepeat(ctx context.Context, cfg *control.ClientConfig, o Options, format report.Format) *report.Repeat {
	n := o.Plan.Repeat
	rep := report.NewRepeat(n, o.Plan.Pause)
	for i := 1; i <= n; i++ {
		if i > 1 && !pause(ctx, o.Plan.Pause) {
			rep.Interrupt()
			break
		}
		to := o
		to.Plan.Repeat = 0
		if format.IsJSON() {
			to.Out = io.Discard // every run goes into the one document
		} else {
			fmt.Fprintf(o.Out, "Run %d of %d\n", i, n)
		}
		if o.Observe != nil {
			to.Observe = func(e Event) {
				e.Run = i
				o.Observe(e)
			}
		}
		res := runTest(ctx, cfg, to, format)
		rep.Add(res)
		if o.Observe != nil {
			o.Observe(Event{Kind: EventRunEnd, Conn: -1, Upstream: cfg.Upstream, Run: i, Status: res.ErrorStatus()})
		}
		if cfg.OutputFile != "" && i < n {
			// Errors show when the file is written at the end.
			atomicfile.Write(cfg.OutputFile, rep.Document(jsonFile(format)), 0o644)
		}
		if ctx.Err() != nil && i < n {
			rep.Interrupt() // the tests left are not run
			break
		}
	}
	var err error
	if format.IsJSON() {
		_, err = o.Out.Write(rep.Document(format))
	} else {
		err = rep.WriteTable(o.Out)
	}
	if err != nil {
		fmt.Fprintf(o.Stderr, "udpstp: ERROR: writing results: %v\n", err)
	}
	return rep
}

// pause waits d, or until ctx is cancelled: it reports whether the run
// goes on.
func pause(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
