package main

// The client's plan of tests, ours: --bidirectional (or -u with -d),
// --repeat and --pause. Read after OB-UDPST's checks, so that a command
// line udpst would refuse gets udpst's message first.

import (
	"strconv"
	"time"

	"github.com/udpstp/udpstp/client"
	"github.com/udpstp/udpstp/control"
)

// idleBaselineMs is how long the idle baseline of a bidirectional test
// lasts when -i does not say: two seconds of Sub-Intervals (two at the
// default -P), enough RTT samples at row 0 (one per Trial Interval) for an
// average, and short next to the default 10 s test.
const idleBaselineMs = 2000

// bidirectional reports whether the command line asks for both
// directions at once.
func bidirectional(v optionValues) bool {
	return v.on("bidirectional") || v.on("upstream") && v.on("downstream")
}

// clientPlan reads the plan, and for a bidirectional test sets -o and its
// idle baseline in cfg: the bimodal count with rate adjustment suppressed, as
// -i -count does, so that both directions hold their starting row for
// those Sub-Intervals and the report's first mode is the baseline. The
// user's own -i -count sets its length; -i count without '-' would not
// hold the rate, and is refused.
func clientPlan(v optionValues, cfg *control.ClientConfig) (client.Plan, error) {
	p := client.Plan{Bidirectional: bidirectional(v)}
	if err := v.number("repeat", &p.Repeat); err != nil {
		return p, err
	}
	if v.set("pause") {
		if !v.set("repeat") {
			return p, configError("ERROR: %s needs %s", opt("pause"), opt("repeat"))
		}
		d, err := parsePause(v.text("pause"))
		if err != nil {
			return p, err
		}
		p.Pause = d
	}
	if cfg.TextFile != "" && (p.Bidirectional || p.Repeat > 0) {
		// Its metrics are one test of one direction's (package metrics).
		other := opt("repeat")
		if p.Bidirectional {
			other = opt("bidirectional")
		}
		return p, configError("ERROR: %s holds one test of one direction: not with %s", opt("textfile"), other)
	}
	if !p.Bidirectional {
		return p, nil
	}
	// Each direction's search on its own one-way delay variation (-o):
	// the RTT crosses both directions' queues, so with the default each
	// search backs off on the other's load (in the lab, tbf 200/50 with
	// both queues full: 160 instead of 200 Mbit/s down, 62 with deep
	// queues). The RTT variation is still measured and reported.
	cfg.UseOwDelVar = true
	total := cfg.TestIntTime * 1000 / cfg.SubIntPeriod
	switch {
	case v.set("bimodal") && !cfg.Suppress:
		return p, configError("ERROR: %s measures its idle baseline with rate adjustment suppressed: give %s as -count (-i -%d)",
			opt("bidirectional"), opt("bimodal"), cfg.Bimodal)
	case v.set("bimodal"):
		// checkClient made sure a loaded Sub-Interval follows.
	case total < 2:
		return p, configError("ERROR: %s needs at least 2 Sub-Intervals, one idle and one loaded (%s %d s and %s %d ms give %d)",
			opt("bidirectional"), opt("test-time"), cfg.TestIntTime, opt("sub-interval"), cfg.SubIntPeriod, total)
	default:
		cfg.Bimodal = min(max(1, (idleBaselineMs+cfg.SubIntPeriod-1)/cfg.SubIntPeriod), total-1)
		cfg.Suppress = true
	}
	return p, nil
}

// parsePause reads --pause: a Go duration ("30s", "2m", "500ms") or a
// number of seconds, 0 to maxPause seconds.
func parsePause(s string) (time.Duration, error) { return parseDuration("pause", s) }

// parseDuration reads the value s of option name, a duration: a Go
// duration ("30s", "2m", "500ms") or a number of seconds, within the
// option's lo..hi seconds.
func parseDuration(name, s string) (time.Duration, error) {
	o := opt(name)
	d, err := time.ParseDuration(s)
	if err != nil {
		secs, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || secs != secs { // NaN
			return 0, configError("ERROR: '%s' is not a valid duration for %s (30s, 2m, 500ms, or seconds; %d-%d s)", s, o, o.lo, o.hi)
		}
		d = time.Duration(secs * float64(time.Second))
		if secs > float64(o.hi) {
			d = time.Duration(o.hi+1) * time.Second
		}
	}
	if d < 0 || d > time.Duration(o.hi)*time.Second {
		return 0, rangeError(o.String(), s, o.lo, o.hi)
	}
	return d, nil
}
