package client

import (
	"context"
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

// runTest runs one complete test, in cfg's direction or (Bidirectional)
// in both, and prints its report to o.Out; the result file is the
// caller's.
func runTest(ctx context.Context, cfg *control.ClientConfig, o Options, format report.Format) report.Result {
	if o.Plan.Bidirectional {
		return runBidir(ctx, cfg, o, format)
	}
	r := newRun(cfg, o, format)
	r.run(ctx)
	return r.col
}
